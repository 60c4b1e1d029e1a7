"""The whole audit from one config file: stages, run directory, headline metrics, the CI gate.

Modules: :mod:`~lmleak.audit.config` (the YAML config), :mod:`~lmleak.audit.runner` (every stage
into one run directory), :mod:`~lmleak.audit.gate` (``lmleak gate``), :mod:`~lmleak.audit.query`
(``lmleak query``), :mod:`~lmleak.audit.demo` (``lmleak demo``). The public entry point is
:func:`lmleak.run_audit`, which returns an :class:`~lmleak.api.AuditResult`; :func:`audit` below is
its old name and returns the run directory only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def audit(
    config: Any,
    *,
    force: bool = False,
    echo: Callable[[str], None] | None = None,
    redact: bool = False,
    redact_key_file: str | Path | None = None,
) -> Path:
    """The old name of :func:`lmleak.run_audit`: the same audit, returning the run directory.

    ``config`` is a YAML file (``lmleak audit --example`` writes a commented one) or a parsed
    :class:`~lmleak.audit.config.AuditConfig`. Stages whose results are complete are skipped on a
    rerun unless ``force``. ``echo`` receives the progress lines; ``redact`` and ``redact_key_file``
    are those of :func:`~lmleak.audit.runner.run_audit` (``lmleak audit --redact``).
    """
    # lmleak.audit.gate, .query and .dp_training are imported for one small job (the CLI builds its
    # lazy: options from .dp_training): the config imports every analysis's settings and the attacks
    from lmleak.audit.config import AuditConfig, load_config

    # lazy: the runner imports every stage (render, probe, report, train)
    from lmleak.audit.runner import run_audit

    cfg = config if isinstance(config, AuditConfig) else load_config(config)
    return run_audit(cfg, force=force, echo=echo, redact=redact, redact_key_file=redact_key_file)
