"""Integrations with training frameworks: :class:`LeakageCallback` for ``transformers.Trainer``."""

from lmleak.integrations.callback import LeakageCallback

__all__ = ["LeakageCallback"]
