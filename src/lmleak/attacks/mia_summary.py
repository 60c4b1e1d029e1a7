"""The record of a membership run: :class:`MembershipResult` (what
:func:`~lmleak.attacks.membership.evaluate_membership` returns) and the ``summary.json`` written
from it (issue 26, items 3-5): the headline attack chosen honestly with the best raw AUC beside it,
every attack's AUC with its interval, the placebo, the blind baseline and its warning, the sets'
counts, and the ``intervals`` record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lmleak.attacks.blind import BlindResult, blind_warning
from lmleak.attacks.mia_methods import METHODS, MethodOptions, method_scenarios
from lmleak.attacks.mia_stats import N_BOOT
from lmleak.attacks.roc import RocCurve
from lmleak.intervals import BOOTSTRAP_METHOD, FEW_GROUPS_RULE, interval_record
from lmleak.scenarios import scenario_record
from lmleak.words import plural


@dataclass
class MembershipResult:
    """Scores, metrics and ROC curves of one membership-inference run, and the honest numbers
    beside them (issue 26): the sets' counts, the groups, the split-half headline, the placebo."""

    scores: Any  # pandas DataFrame, one row per text
    metrics: Any  # pandas DataFrame, one row per (level, feature)
    curves: dict[str, RocCurve] = field(default_factory=dict)
    num_per_side: int = 0
    group_size: int = 0
    blind: BlindResult | None = None  # the text-only baseline on the same split (None: not run)
    methods: tuple[str, ...] = ()
    sets: dict[str, Any] = field(default_factory=dict)  # the ``sets`` record of the summary
    groups: list[str] = field(default_factory=list)  # each scored text's group (class-prefixed)
    headline: dict[str, Any] | None = None  # split_half_headline(); None: too few groups to split
    placebo: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # per method
    n_boot: int = N_BOOT


def headline_feature(features: Sequence[str]) -> str:
    """The attack the headline reports: the reference-calibrated one when a reference model scored
    the texts (it is the stronger attack; Carlini et al. 2021 §6.1, 2022), else plain perplexity
    (else the first method scored, when perplexity was not asked for).

    Example:
        >>> headline_feature(["perplexity", "zlib", "reference"]), headline_feature(["perplexity", "zlib"])
        ('reference', 'perplexity')
    """
    if "reference" in features:
        return "reference"
    return "perplexity" if "perplexity" in features or not features else features[0]


def roc_table(curves: dict[str, RocCurve]) -> Any:
    """``roc.parquet``: one row per (curve, threshold)."""
    import pandas as pd

    return pd.DataFrame(
        [
            {"curve": name, "fpr": float(f), "tpr": float(tp), "threshold": float(th)}
            for name, c in curves.items()
            for f, tp, th in zip(c.fpr, c.tpr, c.thresholds, strict=True)
        ]
    )


def membership_summary(
    name: str,
    res: MembershipResult,
    *,
    reference: Any,
    source: str | None,
    group_size: int,
    options: MethodOptions | None,
) -> dict[str, Any]:
    """``summary.json`` of a membership run: the honest headline, every attack's AUC with its
    interval, the placebo, the blind baseline, the sets' counts (see
    :func:`~lmleak.attacks.membership.run_membership`)."""
    rows = res.metrics.to_dict(orient="records")
    individual = {r["feature"]: r for r in rows if r["level"] == "individual"}
    head = _headline_keys(res, individual)
    grp = next((r for r in rows if r["level"] != "individual" and r["feature"] == head["mia_method"]), None)
    excluded = {f: r["num_excluded"] for f, r in individual.items() if r["num_excluded"]}
    summary = {
        "attack": "membership_inference",
        "model": name,
        "reference": None if reference is None else getattr(reference, "name", None),
        "source": source,
        "num_per_side": res.num_per_side,
        "group_size": group_size,
        **head,
        "mia_auc_by_attack": {f: r["auc"] for f, r in individual.items()},
        "mia_auc_ci_by_attack": {f: r["auc_ci"] for f, r in individual.items()},
        "mia_excluded_by_attack": excluded,
        "mia_excluded_note": None
        if not excluded
        else "texts too short for Min-K% / Min-K%++ at this k (int(k·n) < 1 token, as published)"
        + (" or for SaMIA (an empty prefix or continuation)" if "samia" in excluded else "")
        + " get no score and are left out of that method's numbers: "
        + ", ".join(f"{f} {c}" for f, c in excluded.items()),
        "perplexity_auc": individual["perplexity"]["auc"] if "perplexity" in individual else None,
        "mia_methods": list(res.methods),
        "mia_options": {**(options or MethodOptions()).record(), "methods": list(res.methods)},
        **_placebo_keys(res, head["mia_method"]),
        **_blind_keys(res, individual),
        "sets": res.sets,
        "intervals": interval_record(
            method=BOOTSTRAP_METHOD + ", within each class; " + FEW_GROUPS_RULE,
            unit="user" if res.sets.get("grouping") == "user" else "text cluster",
            n_units=len(set(res.groups)),
            n_boot=res.n_boot,
            at_boundary=_at_boundary(res, individual, head),
        ),
        "mia_method_scenarios": method_scenarios(res.methods),
        "group_accuracy": None if grp is None else grp["accuracy"],
        "metrics": rows,
        "scenario": _scenario(res.methods, reference, source),
    }
    return summary


def _at_boundary(
    res: MembershipResult, individual: dict[str, dict[str, Any]], head: dict[str, Any]
) -> dict[str, str]:
    """The summary's ``*_ci`` keys that a boundary rule made (an AUC or TPR of 0 or 1, whose
    bootstrap is a point; :mod:`lmleak.attacks.mia_stats`), each with its rule."""
    h = res.headline
    report = (
        h["report"]
        if head["headline_selection"] == "split-half" and h is not None
        else individual[head["mia_method"]]
    )
    rules: dict[str, str | None] = {
        "mia_auc_ci": report.get("auc_ci_rule"),
        "tpr_at_fpr_ci": report.get("tpr_at_1pct_fpr_ci_rule"),
        "mia_best_raw_auc_ci": (individual.get(head["mia_best_raw_method"] or "") or {}).get("auc_ci_rule"),
        "placebo_auc_ci": (res.placebo.get(head["mia_method"]) or {}).get("auc_ci_rule"),
        "blind_auc_ci": None if res.blind is None or res.blind.folds == 0 else res.blind.auc_ci_rule,
        **{f"mia_auc_ci_by_attack.{f}": r.get("auc_ci_rule") for f, r in individual.items()},
    }
    return {k: v for k, v in rules.items() if isinstance(v, str)}  # a table gives NaN for a missing rule


def _scenario(methods: Sequence[str], reference: Any, source: str | None) -> dict[str, Any]:
    """The KART record of a membership run: candidate texts, scores access (generation when every
    method needs only generated text, as SaMIA), each method's resources."""
    return scenario_record(
        attack="membership_inference",
        knowledge=("candidate_texts",),
        access="generation"
        if methods and all(METHODS[m].access == "generation" for m in methods)
        else "scores",
        target="membership",
        resources=tuple(
            dict.fromkeys(
                (("reference_model",) if reference is not None else ())
                + tuple(r for m in methods for r in METHODS[m].resources)
            )
        ),
        notes="balanced members vs same-format non-members (paper 002 A.4)"
        + (f"; {source}" if source else ""),
    )


def _headline_keys(res: MembershipResult, individual: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The headline attack chosen honestly (split-half, else the only method, else the fixed rule)
    and its numbers, with the best raw AUC beside it."""
    methods = list(individual)
    h = res.headline
    if len(methods) == 1:
        selection, method, report = "single-method", methods[0], individual[methods[0]]
        note = "one method scored: nothing was selected, so its AUC on every text is the headline"
    elif h is not None:
        selection, method, report = "split-half", h["method"], h["report"]
        note = (
            f"{method} had the highest AUC on one half of the groups ({plural(h['selection_groups'], 'group')}); "
            f"mia_auc is its AUC on the other half ({plural(h['report_groups'], 'group')}), which played no part "
            "in the choice"
        )
    else:
        method = headline_feature(methods)
        selection, report = "fixed", individual[method]
        note = (
            "too few groups to split in halves (need 4 per side): the fixed rule's method (reference with a "
            "reference model, else perplexity) on every text; nothing was chosen after looking"
        )
    finite = {f: r["auc"] for f, r in individual.items() if r["auc"] is not None}
    best = max(finite, key=lambda f: finite[f]) if finite else None
    return {
        "mia_method": method,
        "mia_attack": method,
        "headline_selection": selection,
        "mia_headline_note": note,
        "mia_selection_auc_by_attack": None
        if selection != "split-half" or h is None
        else h["selection_auc_by_attack"],
        "mia_auc": report["auc"],
        "mia_auc_ci": report["auc_ci"],
        "mia_accuracy": report["accuracy"],
        "mia_tpr_at_1pct_fpr": report["tpr_at_1pct_fpr"],
        "mia_tpr_at_1pct_fpr_note": report["tpr_at_1pct_fpr_note"],
        "tpr_at_fpr": report["tpr_at_1pct_fpr"],
        "tpr_at_fpr_ci": report["tpr_at_1pct_fpr_ci"],
        "tpr_at_fpr_rate": 0.01,
        "tpr_at_fpr_note": report["tpr_at_1pct_fpr_note"],
        "mia_best_raw_auc": None if best is None else finite[best],
        "mia_best_raw_auc_ci": None if best is None else individual[best]["auc_ci"],
        "mia_best_raw_method": best,
        "mia_best_raw_note": "the highest of the methods' AUCs on every text, selected after the fact "
        "(optimistic: the maximum of several noisy AUCs); the headline mia_auc is the honest figure",
    }


def _placebo_keys(res: MembershipResult, method: str) -> dict[str, Any]:
    """The headline attack on two halves of the non-members' groups (one labelled members)."""
    p = res.placebo.get(method)
    ci = None if p is None else p["auc_ci"]
    off = ci is not None and not ci[0] <= 0.5 <= ci[1]
    return {
        "placebo_auc": None if p is None else p["auc"],
        "placebo_auc_ci": ci,
        "placebo_auc_by_attack": {f: None if v is None else v["auc"] for f, v in res.placebo.items()},
        "placebo_note": "fewer than 2 non-member groups: no placebo"
        if p is None
        else f"{method} on the non-members alone, their {p['num_groups']} groups split in two halves and one "
        "half labelled members: the model saw neither, so this AUC should cover 0.5",
        "placebo_warning": f"the placebo AUC's interval [{ci[0]:.3f}, {ci[1]:.3f}] excludes 0.5: the attack "
        "separates two halves of users the model never saw, so part of its AUC is not membership"
        if off and ci is not None
        else None,
    }


def _blind_keys(res: MembershipResult, individual: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The blind baseline's AUC and interval, and the warning when it may explain the attacks."""
    bl = res.blind
    if bl is None or bl.folds == 0:
        why = "not run (--no-blind)" if bl is None else "too few groups for cross-validation (2 a side)"
        return {"blind_auc": None, "blind_auc_ci": None, "blind_baseline_auc": None,
                "blind_baseline_warning": None, "blind_note": why}  # fmt: skip
    ci = None if bl.auc_ci is None else [float(bl.auc_ci[0]), float(bl.auc_ci[1])]
    warning = blind_warning(
        bl.auc,
        {f: r["auc"] for f, r in individual.items()},
        blind_ci=ci,
        attack_cis={f: r["auc_ci"] for f, r in individual.items()},
    )
    return {
        "blind_auc": bl.auc,
        "blind_auc_ci": ci,
        "blind_baseline_auc": bl.auc,
        "blind_baseline_warning": warning,
        "blind_note": f"{bl.folds}-fold cross-validation over {plural(bl.num_groups, 'group')} "
        f"({res.sets.get('grouping')}), each group in one fold",
    }
