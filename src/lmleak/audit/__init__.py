"""The whole audit from one config file: stages, run directory, headline metrics, the CI gate.

``lmleak.audit`` is also the public function ``audit(config)`` (``from lmleak import audit``): the
package and the function share the name, and Python sets a package's attribute to its subpackage
once the subpackage is imported, so the subpackage itself is made callable instead of fighting over
the name.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmleak.audit.config import AuditConfig, load_config


def audit(
    config: Any,
    *,
    force: bool = False,
    echo: Callable[[str], None] | None = None,
    redact: bool = False,
    redact_key_file: str | Path | None = None,
) -> Path:
    """Run every analysis an audit config names and write the HTML report; returns the run directory.

    ``config`` is a YAML file (``lmleak audit --example`` writes a commented one) or a parsed
    :class:`~lmleak.audit.config.AuditConfig`. Stages whose results are complete are skipped on a
    rerun unless ``force``. ``echo`` receives the progress lines; ``redact`` and ``redact_key_file``
    are those of :func:`~lmleak.audit.runner.run_audit` (``lmleak audit --redact``).
    """
    # the runner imports every stage (render, probe, report, train); lmleak.audit.config,
    # lazy: .gate and .query are imported for one small job and must not load all of that
    from lmleak.audit.runner import run_audit

    cfg = config if isinstance(config, AuditConfig) else load_config(config)
    return run_audit(cfg, force=force, echo=echo, redact=redact, redact_key_file=redact_key_file)


class _CallablePackage(types.ModuleType):
    def __call__(self, config: Any, *, force: bool = False, **options: Any) -> Path:
        return audit(config, force=force, **options)


sys.modules[__name__].__class__ = _CallablePackage
sys.modules[__name__].__doc__ = (__doc__ or "") + "\n\n" + (audit.__doc__ or "")
