"""Attacks that measure what a model memorised: canary exposure and membership inference.

- :mod:`~lmleak.attacks.exposure` — exposure maths (Carlini et al. 2019) and the per-canary runner.
- :mod:`~lmleak.attacks.trie` — exact canary ranks by a pruned search over the candidates' token trie.
- :mod:`~lmleak.attacks.membership` — individual and group membership inference (paper 002 A.4).
  Its texts come from :mod:`~lmleak.attacks.mia_texts`, its summary from :mod:`~lmleak.attacks.mia_summary`.
- :mod:`~lmleak.attacks.roc` — accuracy at the best threshold, AUC, TPR at low FPR, ROC curves.
- :mod:`~lmleak.attacks.dp_audit` — one-run DP auditing: an ε lower bound (Steinke et al. 2023).
- :mod:`~lmleak.attacks.extraction` — untargeted and (n, p)-discoverable extraction (Carlini et al. 2021).

The names resolve on first use (PEP 562): the CLI imports each analysis's settings class from its
module (``lmleak.attacks.exposure.ExposureSettings``) to build its options, and that must not import
torch through the membership attacks.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the static view of the lazily resolved names below
    from lmleak.attacks.exposure import CanaryExposure, exposure, extrapolated_exposure, measure_exposure
    from lmleak.attacks.membership import MembershipResult, evaluate_membership, read_texts
    from lmleak.attacks.roc import roc_auc, roc_curve, summarize
    from lmleak.attacks.trie import CanaryFormat, CandidateSpace, exact_ranks

#: public name -> the module that defines it
_EXPORTS = {
    **dict.fromkeys(("CanaryExposure", "exposure", "extrapolated_exposure", "measure_exposure"), "exposure"),
    **dict.fromkeys(("MembershipResult", "evaluate_membership", "read_texts"), "membership"),
    **dict.fromkeys(("roc_auc", "roc_curve", "summarize"), "roc"),
    **dict.fromkeys(("CanaryFormat", "CandidateSpace", "exact_ranks"), "trie"),
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"lmleak.attacks.{_EXPORTS[name]}"), name)
        globals()[name] = value  # resolved once
        return value
    raise AttributeError(f"module 'lmleak.attacks' has no attribute {name!r}")


__all__ = [
    "CandidateSpace",
    "CanaryExposure",
    "CanaryFormat",
    "MembershipResult",
    "evaluate_membership",
    "exact_ranks",
    "exposure",
    "extrapolated_exposure",
    "measure_exposure",
    "read_texts",
    "roc_auc",
    "roc_curve",
    "summarize",
]
