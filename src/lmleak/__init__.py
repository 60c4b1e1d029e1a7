"""lmleak: privacy auditing of language models.

The public API, pinned by ``tests/test_public_api.py``::

    from lmleak import load_corpus, load_model, run_report, run_exposure, run_membership, run_probe, audit

    corpus = load_corpus("corpus.jsonl")                      # JSONL, CSV, Parquet, folders, HF datasets
    model = load_model("path/to/model")                       # HF folder, .gguf, lmleak model, smollm2-135m
    summary = run_report(model, corpus, "run")                # paper 001: leaked sequences, leaked PII, epsilon
    summary, _ = run_exposure(model, "canaries.jsonl", "run-exposure")        # canary exposure
    summary = run_membership(model, members, non_members, "run-mia")          # membership inference
    summary = run_probe(model, read_subjects("subjects.jsonl"), "run-probe")  # paper 003: PII probing
    run_dir = audit("audit.yaml")                             # every analysis of a config, and the HTML report

Each returns the ``summary.json`` it wrote (a dict) or the run directory; the Parquet tables sit
beside it. Errors a user can fix raise :class:`LmleakError` subclasses that name the file, line or
field and the fix.

The names resolve on first use (PEP 562), so ``import lmleak.errors`` — what the CLI's ``--help``
needs — does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lmleak._version import __version__

if TYPE_CHECKING:  # the static view of the lazily resolved names below
    from lmleak import audit
    from lmleak.attacks.exposure import run_exposure
    from lmleak.attacks.membership import run_membership
    from lmleak.audit.config import AuditConfig
    from lmleak.data.corpus import Corpus, Document
    from lmleak.data.loaders import load_corpus
    from lmleak.errors import CapabilityError, InputError, LmleakError, ModelError
    from lmleak.models.base import Capability, LanguageModel, require
    from lmleak.models.loading import load_model
    from lmleak.probe.probing import run_probe
    from lmleak.probe.subjects import read_subjects
    from lmleak.report.leakage import ReportConfig, run_report

#: public name -> the module that defines it
_EXPORTS = {
    "AuditConfig": "lmleak.audit.config",
    "Capability": "lmleak.models.base",
    "CapabilityError": "lmleak.errors",
    "Corpus": "lmleak.data.corpus",
    "Document": "lmleak.data.corpus",
    "InputError": "lmleak.errors",
    "LanguageModel": "lmleak.models.base",
    "LmleakError": "lmleak.errors",
    "ModelError": "lmleak.errors",
    "ReportConfig": "lmleak.report.leakage",
    "load_corpus": "lmleak.data.loaders",
    "load_model": "lmleak.models.loading",
    "read_subjects": "lmleak.probe.subjects",
    "require": "lmleak.models.base",
    "run_exposure": "lmleak.attacks.exposure",
    "run_membership": "lmleak.attacks.membership",
    "run_probe": "lmleak.probe.probing",
    "run_report": "lmleak.report.leakage",
    "audit": "lmleak",  # the subpackage lmleak.audit, callable as audit(config): see its docstring
}


def __getattr__(name: str) -> Any:
    if name == "audit":
        value = importlib.import_module("lmleak.audit")
        globals()[name] = value
        return value
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # resolved once
        return value
    raise AttributeError(f"module 'lmleak' has no attribute {name!r}")


__all__ = [
    "AuditConfig",
    "Capability",
    "CapabilityError",
    "Corpus",
    "Document",
    "InputError",
    "LanguageModel",
    "LmleakError",
    "ModelError",
    "ReportConfig",
    "__version__",
    "audit",
    "load_corpus",
    "load_model",
    "read_subjects",
    "require",
    "run_exposure",
    "run_membership",
    "run_probe",
    "run_report",
]


def __dir__() -> list[str]:
    return __all__
