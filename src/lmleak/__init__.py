"""lmleak: privacy auditing of language models.

The public API, pinned by ``tests/test_public_api.py`` (``examples/audit_in_python.py`` runs it)::

    from lmleak import load_corpus, load_model, run_audit, run_report, MembershipOptions, run_membership

    result = run_audit("audit.yaml")            # every analysis of a config, and report.html
    result.headlines["my-model"]["mia_auc"]     # per model: unique_sequences, max_exposure, mia_auc ...
    result.report_html                          # the self-contained report

    corpus = load_corpus("corpus.jsonl")        # JSONL, CSV, Parquet, folders, HF datasets
    model = load_model("path/to/model")         # HF folder, .gguf, lmleak model, smollm2-135m
    report = run_report(model, corpus, "run")   # paper 001: leaked sequences, leaked PII, epsilon
    report.summary["unique_sequences"], report.sequences          # summary.json, sequences.parquet
    mia = run_membership(model, members, non_members, "run-mia", MembershipOptions(methods=("min_k_pp",)))
    mia.auc, mia.scores                                           # mia_auc, mia_scores.parquet

``run_audit``, ``run_report``, ``run_exposure``, ``run_membership`` and ``run_probe`` each write a
run directory and return a frozen result (:class:`AuditResult`, :class:`ReportResult`,
:class:`ExposureResult`, :class:`MembershipResult`, :class:`ProbeResult`) holding ``summary`` (the
``summary.json`` it wrote), ``run_dir`` and the paths of its main files; their settings come in one
dataclass each (:class:`~lmleak.report.leakage.ReportConfig`, :class:`ExposureOptions`,
:class:`MembershipOptions`, :class:`ProbeOptions`). They live in :mod:`lmleak.api`. Errors a user
can fix raise :class:`LmleakError` subclasses that name the file, line or field and the fix.

``lmleak.audit`` is the audit package (config, runner, gate); its function ``lmleak.audit.audit``
is the old name of :func:`run_audit` and returns the run directory.

The names resolve on first use (PEP 562), so ``import lmleak.errors`` — what the CLI's ``--help``
needs — does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmleak._lazy import lazy_getattr
from lmleak._version import __version__

if TYPE_CHECKING:  # the static view of the lazily resolved names below
    from lmleak.api import (
        AuditResult,
        ExposureOptions,
        ExposureResult,
        MembershipOptions,
        MembershipResult,
        ProbeOptions,
        ProbeResult,
        ReportResult,
        run_audit,
        run_exposure,
        run_membership,
        run_probe,
        run_report,
    )
    from lmleak.audit.config import AuditConfig
    from lmleak.data.corpus import Corpus, Document
    from lmleak.data.loaders import load_corpus
    from lmleak.errors import CapabilityError, InputError, LmleakError, ModelError
    from lmleak.models.base import Capability, LanguageModel, require
    from lmleak.models.loading import load_model
    from lmleak.probe.subjects import read_subjects
    from lmleak.report.leakage import ReportConfig

#: public name -> the module that defines it
_EXPORTS = {
    "AuditConfig": "lmleak.audit.config",
    "AuditResult": "lmleak.api",
    "Capability": "lmleak.models.base",
    "CapabilityError": "lmleak.errors",
    "Corpus": "lmleak.data.corpus",
    "Document": "lmleak.data.corpus",
    "ExposureOptions": "lmleak.api",
    "ExposureResult": "lmleak.api",
    "InputError": "lmleak.errors",
    "LanguageModel": "lmleak.models.base",
    "LmleakError": "lmleak.errors",
    "MembershipOptions": "lmleak.api",
    "MembershipResult": "lmleak.api",
    "ModelError": "lmleak.errors",
    "ProbeOptions": "lmleak.api",
    "ProbeResult": "lmleak.api",
    "ReportConfig": "lmleak.report.leakage",
    "ReportResult": "lmleak.api",
    "load_corpus": "lmleak.data.loaders",
    "load_model": "lmleak.models.loading",
    "read_subjects": "lmleak.probe.subjects",
    "require": "lmleak.models.base",
    "run_audit": "lmleak.api",
    "run_exposure": "lmleak.api",
    "run_membership": "lmleak.api",
    "run_probe": "lmleak.api",
    "run_report": "lmleak.api",
}


__getattr__ = lazy_getattr(__name__, _EXPORTS, cache=True)  # resolved once


__all__ = [
    "AuditConfig",
    "AuditResult",
    "Capability",
    "CapabilityError",
    "Corpus",
    "Document",
    "ExposureOptions",
    "ExposureResult",
    "InputError",
    "LanguageModel",
    "LmleakError",
    "MembershipOptions",
    "MembershipResult",
    "ModelError",
    "ProbeOptions",
    "ProbeResult",
    "ReportConfig",
    "ReportResult",
    "__version__",
    "load_corpus",
    "load_model",
    "read_subjects",
    "require",
    "run_audit",
    "run_exposure",
    "run_membership",
    "run_probe",
    "run_report",
]


def __dir__() -> list[str]:
    return __all__
