"""Attacks that measure what a model memorised: canary exposure and membership inference.

- :mod:`~lmleak.attacks.exposure` — exposure maths (Carlini et al. 2019) and the per-canary runner.
- :mod:`~lmleak.attacks.trie` — exact canary ranks by a pruned search over the candidates' token trie.
- :mod:`~lmleak.attacks.membership` — individual and group membership inference (paper 002 A.4).
  Its texts come from :mod:`~lmleak.attacks.mia_texts`, its summary from :mod:`~lmleak.attacks.mia_summary`.
- :mod:`~lmleak.attacks.roc` — accuracy at the best threshold, AUC, TPR at low FPR, ROC curves.
- :mod:`~lmleak.attacks.dp_audit` — one-run DP auditing: an ε lower bound (Steinke et al. 2023).
- :mod:`~lmleak.attacks.extraction` — untargeted and (n, p)-discoverable extraction (Carlini et al. 2021).
"""

from lmleak._lazy import lazy_getattr

# lazy (PEP 562): the CLI imports the settings modules of this package to build its options, and
# these names pull in numpy and torch
_HOME = {
    "CanaryExposure": ".exposure",
    "exposure": ".exposure",
    "extrapolated_exposure": ".exposure",
    "measure_exposure": ".exposure",
    "MembershipResult": ".membership",
    "evaluate_membership": ".membership",
    "read_texts": ".membership",
    "roc_auc": ".roc",
    "roc_curve": ".roc",
    "summarize": ".roc",
    "CanaryFormat": ".trie",
    "CandidateSpace": ".trie",
    "exact_ranks": ".trie",
}


__getattr__ = lazy_getattr(__name__, _HOME)


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
