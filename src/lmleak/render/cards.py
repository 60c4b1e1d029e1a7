"""The report's cards: each headline number's label, value, detail line, null and interval."""

from __future__ import annotations

import html
import json
from typing import Any

from lmleak.errors import LmleakError
from lmleak.render.headline import PER_K
from lmleak.render.verdict import (
    format_interval,
)
from lmleak.report.metrics import format_epsilon
from lmleak.scenarios.describe import notation
from lmleak.words import plural

LABELS = {
    "pii_unique_sequences": "Leaked PII (user-unique sequences)",
    "unique_sequences": "Unique leaked sequences",
    "curated_unique_sequences": "Curated unique sequences",
    "leakage_epsilon": "Leakage ε",
    "max_exposure": "Highest canary exposure (bits)",
    "mia_auc": "Membership inference AUC",
    "mia_accuracy": "Membership inference accuracy",
    "pii_exact_match": "PII exact-match rate",
    "pii_likelihood_ratio": "PII likelihood ratio (target / null)",
    "pii_likelihood_ratio_geomean": "PII likelihood ratio, typical (geometric mean)",
    "dp_epsilon": "DP ε",
    "confidentiality_epsilon": "Confidentiality ε (Bayesian)",
    # issue 20: one-run DP audit and untargeted extraction
    "epsilon_lower_bound": "Measured ε lower bound (DP audit)",
    "extracted": "Extracted training samples (verified)",
    "users_at_risk": "People at risk (leaked PII at the first k, or probing hit)",  # issue 27: users.parquet
}


def format_value(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list | tuple) or (hasattr(v, "tolist") and getattr(v, "ndim", 0) == 1):
        return html.escape(", ".join(str(x) for x in list(v))) or "—"
    if isinstance(v, float):
        if v != v:  # NaN
            return "—"
        return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.3e}"
    return html.escape(str(v))


def card_value(key: str, headline: dict[str, Any]) -> str:
    """The card's number; a report metric measured at several k shows every k (the strongest honest
    value must not hide behind the first k listed)."""

    def one(h: dict[str, Any]) -> str:
        if key == "leakage_epsilon" and h.get("leakage_epsilon_infinite"):
            return "∞"
        if key == "leakage_epsilon" and h.get("log_leakage_epsilon") is not None:
            return format_epsilon(h["log_leakage_epsilon"])
        if key == "pii_exact_match" and h.get("pii_exact_match_members") is not None:
            controls = h.get("pii_exact_match_controls")
            tail = "" if controls is None else f" · controls {controls:.1%}"
            return f"members {h['pii_exact_match_members']:.1%}{tail}"
        if key == "dp_epsilon" and h.get("dp_epsilon") is not None and h.get("privacy_unit") in UNIT_WORDS:
            return f"{format_value(h['dp_epsilon'])} per {UNIT_WORDS[h['privacy_unit']]}"
        return format_value(h.get(key))

    by_k = headline.get("by_k") or {}
    if key in PER_K and len(by_k) > 1:
        return " · ".join(one(by_k[k]) for k in sorted(by_k, key=int))
    return one(headline)


def k_note(key: str, headline: dict[str, Any], first_k: int | None = None) -> str:
    """The k a card's number is at (issue 32: every card states its k): every k of a report metric,
    and for people at risk the one k its leaked PII is counted at (``first_k``: the leakage report's
    headline k; else the smallest k measured).

    Example:
        >>> h = {"by_k": {"1": {}, "3": {}}, "users_at_risk": 0}
        >>> k_note("pii_unique_sequences", h)
        " Values at k = 1 · 3 (the tab attack's top-k)."
        >>> k_note("users_at_risk", h, 1)
        " Leaked PII counted at k = 1 only (the leakage report's first k; the Leaked PII card shows k = 3 too)."
    """
    by_k = headline.get("by_k") or {}
    ks = sorted(by_k, key=int)
    if key in PER_K and len(ks) > 1:
        return f" Values at k = {' · '.join(ks)} (the tab attack's top-k)."
    if key in PER_K and ks:
        return f" At k = {ks[0]} (the tab attack's top-k)."
    if key == "users_at_risk" and (first_k is not None or ks):
        k = str(first_k) if first_k is not None else ks[0]
        others = [x for x in ks if x != k]
        tail = f"; the Leaked PII card shows k = {', '.join(others)} too" if others else ""
        return f" Leaked PII counted at k = {k} only (the leakage report's first k{tail})."
    return ""


def card_detail(key: str, headline: dict[str, Any]) -> str:
    if key == "epsilon_lower_bound":  # issue 20: the claim beside the measurement, as one sentence
        claimed = headline.get("dp_epsilon")
        measured = headline.get("epsilon_lower_bound")
        claim = f"Claimed ε ≤ {claimed:.3g}" if claimed is not None else "No DP claim (plain training)"
        verdict = " The claim is violated." if claimed is not None and measured > claimed else ""
        return f" {claim}; measured ≥ {measured:.3g}.{verdict}"
    if key == "pii_unique_sequences":
        by_type = headline.get("pii_unique_sequences_by_type") or {}
        listed = ", ".join(f"{t} {n}" for t, n in sorted(by_type.items(), key=lambda kv: -kv[1]))
        return f" By type (first k): {listed}." if listed else ""
    if key == "pii_exact_match" and headline.get("pii_exact_match_members") is not None:
        p = headline.get("pii_exact_match_fisher_p")
        return (
            f" Members are people the model trained on ({plural(headline.get('pii_exact_match_members_n'), 'probe')}), "
            f"controls people it never saw ({headline.get('pii_exact_match_controls_n')}): the controls' rate is "
            f"what guessing gives. Pooled: {format_value(headline.get('pii_exact_match'))}."
            + (f" Members > controls: Fisher p = {p:.2g}." if p is not None else "")
        )
    if key == "confidentiality_epsilon" and headline.get("confidentiality_gamma") is not None:
        basis = headline.get("confidentiality_gamma_basis") or "the recorded miss rate"
        tail = (
            " Theorem 8.3 adds δ₂, the conservative policy's miss rate, which is not measured: 0 is assumed."
            if headline.get("confidentiality_delta2_assumed")
            else ""
        )
        return f" Computed at γ = {headline['confidentiality_gamma']:.4g} ({basis}).{tail}"
    if key == "dp_epsilon" and headline.get("privacy_unit"):
        unit = {"user": "one person (all of a user's data)", "sequence": "one training sequence"}.get(
            headline["privacy_unit"], headline["privacy_unit"]
        )
        tail = ""
        g, k = headline.get("group_privacy_epsilon_largest_user"), headline.get("largest_user_sequences")
        if headline["privacy_unit"] == "sequence" and g is not None and k:
            tail = (
                f" Per person this is only a group-privacy bound: the largest user, with {plural(k, 'sequence')}, "
                f"is protected at ε = {format_value(g)} (k·ε, Dwork & Roth Thm 2.2) — train with "
                "--privacy-unit user to protect people."
            )
        return f" The privacy unit is {unit}.{tail}"
    if key == "mia_auc" and headline.get("mia_method"):
        how = f", chosen by {headline['headline_selection']}" if headline.get("headline_selection") else ""
        return f" Headline attack: {headline['mia_method']}{how} (every attack: the table under Plots)."
    return ""


#: ``privacy_unit`` (issue 27) as the DP card says it: "ε 2.9 per person"
UNIT_WORDS = {"user": "person", "sequence": "sequence"}


def card_null(key: str, headline: dict[str, Any]) -> str | None:
    """The null the card's number is read against (issue 26: every headline beside its placebo), or None."""

    def ci(name: str) -> str:
        pair = headline.get(f"{name}_ci")
        return (
            f" [{format_interval(name, pair)}]" if isinstance(pair, list | tuple) and len(pair) == 2 else ""
        )

    if key == "mia_auc" and headline.get("placebo_auc") is not None:
        parts = [
            f"Placebo (two halves of people it never saw): {format_value(headline['placebo_auc'])}{ci('placebo_auc')}"
        ]
        if headline.get("blind_auc") is not None:
            parts.append(f"blind text-only baseline: {format_value(headline['blind_auc'])}{ci('blind_auc')}")
        return "; ".join(parts) + " — both should cover 0.5."
    if key == "pii_unique_sequences":
        return pii_null_line(headline)
    if key == "max_exposure" and headline.get("placebo_max_exposure") is not None:
        return f"Placebo (as many canaries never inserted): at most {format_value(headline['placebo_max_exposure'])} bits."
    if (
        key == "pii_exact_match"
        and headline.get("pii_exact_match_members") is None
        and headline.get("pii_exact_match_controls") is not None
    ):
        return (
            "Every probed person was a held-out control (never trained on): this is what guessing gives, "
            "not a measurement of what the model reveals."
        )
    return None


def pii_null_line(headline: dict[str, Any]) -> str | None:
    """The leaked-PII card's null (issue 32): per k, the trained-on people's count against the
    held-out people's, and the excess share of people affected; or why there is no null."""
    by_k = headline.get("by_k") or {"": headline}
    parts = []
    for k in sorted(by_k, key=lambda x: int(x) if x else 0):
        h = by_k[k]
        at = f"k = {k}: " if k else ""
        kind = h.get("null_kind")
        if kind is None and h.get("pii_people_excess_reason") is None:
            continue  # a report from before the null (or no PII policy)
        if kind == "held_out":
            null_ci = h.get("null_pii_unique_sequences_ci")
            ci_text = f" [{null_ci[0]:.3g}, {null_ci[1]:.3g}]" if isinstance(null_ci, list | tuple) else ""
            line = (
                f"{at}trained-on people {h.get('pii_unique_sequences_members')}, held-out people "
                f"{h.get('null_pii_unique_sequences')}{ci_text}"
            )
        elif kind == "public_model":
            line = f"{at}trained-on people {h.get('pii_unique_sequences_members')} curated (null: the public model)"
        else:
            parts.append(
                f"{at}no null — {h.get('pii_people_excess_reason')}; to get one: {h.get('pii_people_excess_fix')}"
            )
            continue
        ex, ci = h.get("pii_people_excess"), h.get("pii_people_excess_ci")
        if ex is not None:
            tail = f" [{ci[0]:+.1%}, {ci[1]:+.1%}]" if isinstance(ci, list | tuple) else ""
            line += f"; people affected beyond the null {ex:+.1%}{tail}"
        parts.append(line)
    return ("Null: " + "; ".join(parts) + ".") if parts else None


def _ci_text(key: str, ci: Any) -> str | None:
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return None
    try:
        return f"[{format_interval(key, ci)}]"
    except (TypeError, ValueError):
        return None


def card_interval(key: str, headline: dict[str, Any]) -> str | None:
    """The card's 95 % interval (``<key>_ci`` of the stage), or None; a report metric at several k
    gets each k's interval, named by its k (issue 32: the first k's interval alone read as every k's).

    Example:
        >>> h = {"pii_unique_sequences_ci": [0, 3.5], "by_k": {"1": {"pii_unique_sequences_ci": [0, 3.5]},
        ...      "3": {"pii_unique_sequences_ci": [0, 5]}}}
        >>> card_interval("pii_unique_sequences", h)
        '95% intervals: k = 1 [0, 3.5] · k = 3 [0, 5]'
    """
    by_k = headline.get("by_k") or {}
    if key in PER_K and len(by_k) > 1:
        parts = [(k, _ci_text(key, by_k[k].get(f"{key}_ci"))) for k in sorted(by_k, key=int)]
        shown = [f"k = {k} {ci}" for k, ci in parts if ci]
        return f"95% intervals: {' · '.join(shown)}" if shown else None
    ci = _ci_text(key, headline.get(f"{key}_ci"))
    return None if ci is None else f"95% interval {ci}"


def describe_scenario(scenario: dict[str, Any] | None) -> str | None:
    """The scenario in paper 004's notation, or compact JSON for a record that does not parse."""
    if not scenario:
        return None
    try:
        return notation(scenario)
    except (
        LmleakError,
        KeyError,
        TypeError,
        ValueError,
    ):  # an old or hand-edited record: show it as it is rather than fail the page
        return json.dumps(scenario, sort_keys=True)
