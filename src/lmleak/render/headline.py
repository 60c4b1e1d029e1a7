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
    # issue 26/27: the nulls and reach the headlines above are read against
    "placebo_max_exposure": ("placebo_max_exposure",),
    "max_certifiable_epsilon": ("max_certifiable_epsilon",),
    # issue 27: risk per person (users.parquet)
    "users_at_risk": ("users_at_risk",),
    "users_total": ("users_total",),
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
    "placebo_max_exposure": "The most exposed of as many never-inserted secrets of the canaries' formats, ranked the same way: what max_exposure reaches with nothing memorised (about log2 of the number of placebos for secrets drawn uniformly).",
    "users_at_risk": "People with at least one leaked PII sequence (text only they wrote, holding PII, that the model reproduces) or a probing hit (the model generated their PII when prompted with their other details); users.parquet lists each one and the documents to remove first.",
    "users_total": "People in the audited corpus (and probe subjects), each a row of users.parquet.",
    "max_certifiable_epsilon": "The largest ε this DP audit could certify were every one of its guesses right: a claimed ε above it cannot be refuted by an audit of this size (lmleak dp-audit plan sizes a larger one).",
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
