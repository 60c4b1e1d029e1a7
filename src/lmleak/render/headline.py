"""Headline metrics: the handful of numbers a release decision reads, collected from result files.

A run directory is either one stage's output (``lmleak report``, ``lmleak exposure``, ``lmleak mia``,
``lmleak probe run``: a ``summary.json`` with that stage's keys) or an audit (``summary.json`` with
``models: {name: {"headline": {...}}}``). :func:`collect_headlines` reads both, so ``lmleak gate``
works on either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lmleak.runs import read_summary

# headline key -> the summary keys (in order of preference) that stages write it under
HEADLINE_KEYS: dict[str, tuple[str, ...]] = {
    "pii_unique_sequences": ("pii_unique_sequences_total",),
    "pii_unique_sequences_by_type": ("pii_unique_sequences",),
    "unique_sequences": ("unique_sequences",),
    "curated_unique_sequences": ("curated_unique_sequences",),
    "leakage_epsilon": ("leakage_epsilon",),
    "log_leakage_epsilon": ("log_leakage_epsilon",),
    "max_exposure": ("max_exposure",),
    "mia_auc": ("mia_auc", "auc", "roc_auc"),
    "mia_accuracy": ("mia_accuracy", "best_accuracy", "accuracy"),
    "pii_exact_match": ("pii_exact_match", "exact_match_rate"),
    "pii_likelihood_ratio": ("pii_likelihood_ratio",),
    "pii_likelihood_ratio_geomean": ("pii_likelihood_ratio_geomean",),
    "dp_epsilon": ("dp_epsilon",),
    "confidentiality_epsilon": ("confidentiality_epsilon",),
    # issue 20: one-run DP audit and untargeted extraction
    "epsilon_lower_bound": ("epsilon_lower_bound",),
    "extracted": ("extracted",),
    # issue 26: the membership headline beside its interval, its null and how it was chosen
    "mia_auc_ci": ("mia_auc_ci",),
    "mia_method": ("mia_method",),
    "headline_selection": ("headline_selection",),
    "mia_best_raw_auc": ("mia_best_raw_auc",),
    "mia_best_raw_method": ("mia_best_raw_method",),
    "placebo_auc": ("placebo_auc",),
    "placebo_auc_ci": ("placebo_auc_ci",),
    "blind_auc": ("blind_auc",),
    "blind_auc_ci": ("blind_auc_ci",),
    "tpr_at_fpr": ("tpr_at_fpr",),
    "tpr_at_fpr_ci": ("tpr_at_fpr_ci",),
}

EXPLANATIONS: dict[str, str] = {
    "pii_unique_sequences": "Training text that only one user wrote, that the model reproduces token by token, and that holds PII (by the report's PII policy; sequences shorter than the report's min_tokens are counted apart): the leaks a person would call leaks.",
    "log_leakage_epsilon": "The natural logarithm of the leakage ε: finite where ε itself is too large for a number.",
    "unique_sequences": "Runs of training text the model reproduces token by token (top-k) that occur in exactly one user's data: each is potentially private text leaking verbatim.",
    "curated_unique_sequences": "Unique leaked sequences that a public model finds at least t times less likely than the audited model (paper 001's curated count): the ones without plausible deniability.",
    "leakage_epsilon": "How much more likely the model finds its most user-specific leaked text than a public model does (max ratio of perplexities); 1 means no more than a model that never saw those users.",
    "max_exposure": "Bits of exposure of the most memorised inserted canary: log2 of the candidate count minus log2 of its rank; the maximum (about 19.9 for a million candidates) means the secret is the model's top guess.",
    "mia_auc": "How well an attacker tells training members from non-members by perplexity (0.5 is chance, 1.0 is perfect).",
    "mia_accuracy": "Accuracy of the best-threshold membership classifier on a balanced set (50% is chance).",
    "pii_exact_match": "Share of probes in which the model generated a person's PII verbatim when prompted with their other PII.",
    "pii_likelihood_ratio": "How many times more likely the model finds a person's true PII than another person's PII of the same type, as a ratio of averages (1 means no association); the most likely items, often e-mails, dominate it.",
    "pii_likelihood_ratio_geomean": "The typical factor by which the model prefers a person's true PII to another person's (geometric mean over people and PII types; 1 means no association), which no single PII type dominates.",
    "dp_epsilon": "The differential-privacy budget the model was trained with (smaller is more private; none for plain training).",
    "confidentiality_epsilon": "The Bayesian confidentiality bound for secrets the redaction policy missed (paper 002, Proposition 6).",
    # issue 20: one-run DP audit and untargeted extraction
    "epsilon_lower_bound": "An empirical lower bound on the ε of the training algorithm, from guessing which of m randomly included canaries were trained on in one run (Steinke, Nasr & Jagielski 2023). Above the claimed ε, the DP claim is false; far below it says only that this audit could not show more.",
    "extracted": "Samples generated without any prompt about the training data, picked by Carlini et al.'s membership metrics, and found verbatim (at least min_match_tokens tokens) in the training corpus.",
    # issue 26
    "mia_auc_ci": "The 95% interval of the membership AUC, from resampling whole users (or groups of texts that share a person's PII), so one prolific person does not count as many independent samples.",
    "mia_method": "The membership attack the headline reports: the one with the highest AUC on one half of the users; its AUC is then measured on the other half.",
    "headline_selection": "How the headline attack was chosen: split-half (best on one half of the users, reported on the other, so the choice does not inflate the number), single-method, or fixed (too few users to split).",
    "mia_best_raw_auc": "The highest membership AUC of any method on every text, picked after seeing them all: optimistic, shown beside the honest headline.",
    "mia_best_raw_method": "The method with the highest raw membership AUC (selected after the fact).",
    "placebo_auc": "The headline attack run on two halves of users the model never saw, one half labelled members: it should be 0.5 within its interval; above that, the attack finds something other than membership.",
    "placebo_auc_ci": "The 95% interval of the placebo AUC (resampling users); it should contain 0.5.",
    "blind_auc": "A text-only classifier that never queries the model, cross-validated with each user's texts in one fold: above chance, members and non-members differ in their text and attack AUCs may measure that, not memorisation.",
    "blind_auc_ci": "The 95% interval of the blind baseline's AUC (resampling users).",
    "tpr_at_fpr": "Share of members the headline attack flags while flagging at most 1% of non-members (needs at least 1,000 non-members; measured on the reporting half of the users).",
    "tpr_at_fpr_ci": "The 95% interval of the TPR at 1% FPR (resampling users).",
}


def _first(summary: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in summary and summary[key] is not None:
            return summary[key]
    return None


#: Report metrics measured at every k of the tab attack: ``headline["by_k"]`` holds them per k, so
#: a gate checks every k, whatever order ``--k`` listed them in.
PER_K: dict[str, str] = {  # headline name -> the key in the report's by_k
    "unique_sequences": "unique_sequences",
    "curated_unique_sequences": "curated_unique_sequences",
    "leakage_epsilon": "leakage_epsilon",
    "log_leakage_epsilon": "log_leakage_epsilon",
    "pii_unique_sequences": "pii_unique_sequences_total",
}


def headline_from_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """Pick the headline metrics present in one stage's summary (missing ones are omitted); a report's
    per-k values go under ``by_k``.

    Example:
        >>> headline_from_summary({"unique_sequences": 3, "k": 1, "auc": 0.61})
        {'unique_sequences': 3, 'mia_auc': 0.61}
        >>> headline_from_summary({"by_k": {"1": {"unique_sequences": 2}, "3": {"unique_sequences": 5}}})["by_k"]
        {'1': {'unique_sequences': 2}, '3': {'unique_sequences': 5}}
    """
    out: dict[str, Any] = {}
    for name, keys in HEADLINE_KEYS.items():
        value = _first(summary, keys)
        if value is not None:
            out[name] = value
    by_k = summary.get("by_k")
    if isinstance(by_k, dict) and by_k:
        out["by_k"] = {
            str(k): {m: v.get(key) for m, key in PER_K.items() if v.get(key) is not None}
            for k, v in by_k.items()
        }
    return out


def collect_headlines(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Headline metrics per model name for an audit run, or ``{"run": ...}`` for a single stage."""
    summary = read_summary(run_dir)
    models = summary.get("models")
    if isinstance(models, dict) and models:
        return {name: dict(m.get("headline", {})) for name, m in models.items()}
    return {"run": headline_from_summary(summary)}
