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
    # issue 32: exact match of members over their null (held-out controls, else made-up people)
    "pii_exact_match_excess": ("pii_exact_match_excess",),
    "dp_epsilon": ("dp_epsilon",),
    "confidentiality_epsilon": ("confidentiality_epsilon",),
    # issue 20: one-run DP audit and untargeted extraction
    "epsilon_lower_bound": ("epsilon_lower_bound",),
    "extracted": ("extracted",),
    # issue 26/27: the nulls and reach the headlines above are read against
    "placebo_max_exposure": ("placebo_max_exposure",),
    "max_certifiable_epsilon": ("max_certifiable_epsilon",),
    # issue 26: the membership headline's companions that get a card of their own
    "mia_best_raw_auc": ("mia_best_raw_auc",),
    "blind_auc": ("blind_auc",),
    "tpr_at_fpr": ("tpr_at_fpr",),
    # issue 27: risk per person (users.parquet)
    "users_at_risk": ("users_at_risk",),
    "users_total": ("users_total",),
    # issue 32: the leaked-PII headline against its null (members vs held-out people)
    "pii_people_excess": ("pii_people_excess",),
    "pii_unique_sequences_members": ("pii_unique_sequences_members",),
    "null_pii_unique_sequences": ("null_pii_unique_sequences",),
}

EXPLANATIONS: dict[str, str] = {
    "pii_unique_sequences": "Training text that only one user wrote, that the model reproduces token by token, and that holds PII (by the report's PII policy; sequences shorter than the report's min_tokens are counted apart): the leaks a person would call leaks.",
    "log_leakage_epsilon": "The natural logarithm of the leakage ε: finite where ε itself is too large for a number.",
    "unique_sequences": "Runs of training text the model reproduces token by token (top-k) that occur in exactly one user's data: each is potentially private text leaking verbatim.",
    "curated_unique_sequences": "Unique leaked sequences that a public model finds at least t times less likely than the audited model (paper 001's curated count): the ones without plausible deniability.",
    "leakage_epsilon": "How much more likely the model finds its most user-specific leaked text than a public model does (max ratio of perplexities); 1 means no more than a model that never saw those users.",
    "max_exposure": "Bits of exposure of the most memorised inserted canary: log2 of the candidate count minus log2 of its rank; the maximum (about 19.9 for a million candidates) means the secret is the model's top guess.",
    "mia_auc": "How well the headline membership attack (named beside it: the method best on one half of the users, measured on the other half) tells training members from non-members (0.5 is chance, 1.0 is perfect).",
    "mia_accuracy": "Accuracy of the best-threshold membership classifier, members and non-members weighted equally (balanced accuracy: 50% is chance).",
    "pii_exact_match": "Share of probes in which the model generated a person's PII verbatim when prompted with their other PII.",
    "pii_likelihood_ratio": "How many times more likely the model finds a person's true PII than another person's PII of the same type, as a ratio of averages (1 means no association); the most likely items, often e-mails, dominate it.",
    "pii_likelihood_ratio_geomean": "The typical factor by which the model prefers a person's true PII to another person's (geometric mean over people and PII types; 1 means no association), which no single PII type dominates.",
    "pii_exact_match_excess": "Share of members whose PII the model generated verbatim minus the same share of people it never saw (held-out controls, else made-up people), counted by person, with a 95% interval (Newcombe): what probing finds beyond guessing.",
    "dp_epsilon": "The differential-privacy budget the model was trained with (smaller is more private; none for plain training).",
    "confidentiality_epsilon": "The Bayesian confidentiality bound for secrets the redaction policy missed (paper 002, Proposition 6).",
    # issue 20: one-run DP audit and untargeted extraction
    "epsilon_lower_bound": "An empirical lower bound on the ε of the training algorithm, from guessing which of m randomly included canaries were trained on in one run (Steinke, Nasr & Jagielski 2023). Above the claimed ε, the DP claim is false; far below it says only that this audit could not show more.",
    "extracted": "Samples generated without any prompt about the training data, picked by Carlini et al.'s membership metrics, and found verbatim (at least min_match_tokens tokens) in the training corpus.",
    "placebo_max_exposure": "The most exposed of as many never-inserted secrets of the canaries' formats, ranked the same way: what max_exposure reaches with nothing memorised (about log2 of the number of placebos for secrets drawn uniformly).",
    "users_at_risk": "People with at least one leaked PII sequence (text only they wrote, holding PII, that the model reproduces) or a probing hit (the model generated their PII when prompted with their other details); users.parquet lists each one and the documents to remove first.",
    "users_total": "People in the audited corpus (and probe subjects), each a row of users.parquet.",
    "max_certifiable_epsilon": "The largest ε this DP audit could certify were every one of its guesses right: a claimed ε above it cannot be refuted by an audit of this size (lmleak dp-audit plan sizes a larger one).",
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
    # issue 32
    "pii_people_excess": "Share of trained-on people with leaked PII minus the share of held-out people (never trained on) with it: what the model reveals about the people it trained on beyond what it generalises (template text, common values). With a public model and no held-out people, the share of people with leaked PII the public model finds unlikely.",
    "pii_unique_sequences_members": "Leaked PII sequences (text only one person wrote, holding person-identifying PII) whose writer the model was trained on.",
    "null_pii_unique_sequences": "The same count over the documents of held-out people the model never saw: what it reproduces without having seen them (the null).",
}


#: One k's companions of :data:`PER_K` a verdict reads (no card of their own): the people counts and
#: what the excess is read against (issue 32).
PER_K_CONTEXT: tuple[str, ...] = (
    "pii_people_members",
    "pii_people_members_n",
    "pii_people_null",
    "pii_people_null_n",
    "pii_people_excess_reason",
    "pii_people_excess_fix",
    "null_kind",
    "null_note",
    "pii_owner_counts",
    # beside the limit, not deciding it: the people counts over whole personal values only
    "pii_personal_people_members",
    "pii_personal_people_null",
    "pii_personal_people_excess",
)
#: The membership texts a side: the headline key a verdict and the gate read, from the summary's
#: key of that name (the one place either is spelt outside the membership stage).
MIA_PER_SIDE = "mia_num_per_side"
#: Keys a verdict reads beside the headline numbers (no card of their own): which attack the MIA
#: headline is and how it was chosen, how many texts it had, the placebo beside it, the DP audit's
#: bound at the claimed δ, and an infinite leakage ε that JSON cannot hold as a number.
CONTEXT_KEYS: dict[str, tuple[str, ...]] = {
    "mia_method": ("mia_method", "mia_attack"),
    "headline_selection": ("headline_selection",),
    MIA_PER_SIDE: ("num_per_side",),
    "mia_auc_by_attack": ("mia_auc_by_attack",),
    "placebo_auc": ("placebo_auc",),
    "leakage_epsilon_infinite": ("leakage_epsilon_infinite",),
    "epsilon_lower_bound_at_claimed_delta": ("epsilon_lower_bound_at_claimed_delta",),
    "claimed_delta": ("claimed_delta",),
    "privacy_unit": ("privacy_unit",),
    "mia_best_raw_method": ("mia_best_raw_method",),
    # issue 32: what the leaked-PII excess is read against
    **{key: (key,) for key in PER_K_CONTEXT},
    "pii_exact_match_excess_null": ("pii_exact_match_excess_null",),
    "pii_likelihood_ratio_made_up": ("pii_likelihood_ratio_made_up",),
    "pii_exact_match_made_up": ("pii_exact_match_made_up",),
    "people_probed": ("people_probed",),
}


def _first(summary: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in summary and summary[key] is not None:
            return summary[key]
    return None


def texts_a_side(summary: dict[str, Any]) -> Any:
    """The membership stage's texts a side, read from its summary (None when absent)."""
    return _first(summary, CONTEXT_KEYS[MIA_PER_SIDE])


def _first_key(summary: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((key for key in keys if summary.get(key) is not None), None)


def _probe_groups(summary: dict[str, Any]) -> dict[str, Any]:
    """PII probing's members vs held-out controls (the probe stage's ``groups``) as headline keys."""
    groups = summary.get("groups")
    if not isinstance(groups, dict):
        return {}
    out: dict[str, Any] = {}
    for name in ("members", "controls"):
        g = groups.get(name) or {}
        if g.get("exact_match_rate") is not None:
            out[f"pii_exact_match_{name}"] = g["exact_match_rate"]
            out[f"pii_exact_match_{name}_n"] = g.get("pairs_generated")
    p = (groups.get("tests") or {}).get("exact_match_fisher_p")
    if p is not None:
        out["pii_exact_match_fisher_p"] = p
    return out


#: Report metrics measured at every k of the tab attack: ``headline["by_k"]`` holds them per k, so
#: a gate checks every k, whatever order ``--k`` listed them in.
PER_K: dict[str, str] = {  # headline name -> the key in the report's by_k
    "unique_sequences": "unique_sequences",
    "curated_unique_sequences": "curated_unique_sequences",
    "leakage_epsilon": "leakage_epsilon",
    "log_leakage_epsilon": "log_leakage_epsilon",
    "pii_unique_sequences": "pii_unique_sequences_total",
    "pii_people_excess": "pii_people_excess",
    "pii_unique_sequences_members": "pii_unique_sequences_members",
    "null_pii_unique_sequences": "null_pii_unique_sequences",
}


def headline_from_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """Pick the headline metrics present in one stage's summary (missing ones are omitted); a report's
    per-k values go under ``by_k``. A metric's 95 % interval (``X_ci`` beside the summary key ``X`` it
    came from) comes along as ``<headline name>_ci``; :data:`CONTEXT_KEYS` and probing's members vs
    controls come along too.

    Example:
        >>> headline_from_summary({"unique_sequences": 3, "k": 1, "auc": 0.61})
        {'unique_sequences': 3, 'mia_auc': 0.61}
        >>> headline_from_summary({"by_k": {"1": {"unique_sequences": 2}, "3": {"unique_sequences": 5}}})["by_k"]
        {'1': {'unique_sequences': 2}, '3': {'unique_sequences': 5}}
        >>> headline_from_summary({"pii_unique_sequences_total": 4, "pii_unique_sequences_total_ci": [2, 7]})
        {'pii_unique_sequences': 4, 'pii_unique_sequences_ci': [2, 7]}
    """
    out: dict[str, Any] = {}
    for name, keys in {**HEADLINE_KEYS, **CONTEXT_KEYS}.items():
        key = _first_key(summary, keys)
        if key is None:
            continue
        out[name] = summary[key]
        if summary.get(f"{key}_ci") is not None:
            out[f"{name}_ci"] = summary[f"{key}_ci"]
    out.update(_probe_groups(summary))
    by_k = summary.get("by_k")
    if isinstance(by_k, dict) and by_k:
        out["by_k"] = {str(k): _per_k(v) for k, v in by_k.items()}
    return out


def _per_k(values: dict[str, Any]) -> dict[str, Any]:
    """One k's report metrics under their headline names, each with its interval when it has one."""
    out: dict[str, Any] = {}
    extra = {"leakage_epsilon_infinite": "leakage_epsilon_infinite", **{c: c for c in PER_K_CONTEXT}}
    for m, key in {**PER_K, **extra}.items():
        if values.get(key) is not None:
            out[m] = values[key]
            if values.get(f"{key}_ci") is not None:
                out[f"{m}_ci"] = values[f"{key}_ci"]
    return out


def collect_headlines(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Headline metrics per model name for an audit run, or ``{"run": ...}`` for a single stage."""
    summary = read_summary(run_dir)
    models = summary.get("models")
    if isinstance(models, dict) and models:
        return {name: dict(m.get("headline", {})) for name, m in models.items()}
    return {"run": headline_from_summary(summary)}
