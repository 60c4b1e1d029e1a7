"""What the experiment configs share: validated copies and the "at least 1" checks."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from lmleak.errors import ConfigError

C = TypeVar("C")


def replace_validated(cfg: C, **kw: Any) -> C:
    """A copy of the dataclass ``cfg`` with the options that are not None replaced, then ``validate()``d."""
    out = dataclasses.replace(cfg, **{k: v for k, v in kw.items() if v is not None})  # type: ignore[type-var]
    out.validate()  # type: ignore[attr-defined]
    return out


def require_positive_counts(cfg: Any, names: tuple[str, ...]) -> None:
    """:class:`ConfigError` naming the first of ``names`` whose value is below 1."""
    for name in names:
        if getattr(cfg, name) < 1:
            raise ConfigError(f"{name} must be at least 1, got {getattr(cfg, name)}", field=name)
