"""The release verdict: every limit the user set, checked against every audited model, as one table.

One function computes it (:func:`verdict_of`); ``lmleak gate`` prints it and exits by it, and the HTML
report opens with it, so the two cannot disagree. Each row is a limit for one model (and one k of the
tab attack) with the measured value, its 95 % interval where the stage wrote one (``X_ci``), and one
of four results, decided on the interval (:mod:`lmleak.render.decision`, issue 32):

- **pass** / **fail**: the whole interval is within / beyond the limit (a value without an interval:
  the value is, and the row's note says why that is sound or that no interval was recorded);
- **inconclusive**: the interval straddles the limit; the row's power line says how many people
  (texts, probes) would settle it at the observed effect. An inconclusive row fails the verdict
  unless ``allow_inconclusive`` is set;
- **not evaluable**: the analysis did not run for this model (skipped, not configured, or run on
  nothing: no eligible probing subject, no canary, no null), or had too little data (an MIA with fewer
  than :data:`MIN_MIA_PER_SIDE` texts a side). The row says why and the one line that would run it. A
  not-evaluable row fails the verdict unless ``allow_not_evaluable`` is set, or the limit comes from a
  profile that marks it as applying only where its analysis exists (``required=False``).

Where the limits come from (:func:`resolve_limits`): ``--max-…`` options and ``--profile`` on the
command line; without them, the ``gate:`` section of the audit config that wrote the run
(:func:`configured_verdict`).

Special cases, each stated in the row: leakage ε of a model with no user-unique sequence passes with
the value "0 sequences to bound" (the maximum over an empty set), and is not evaluable when the run
had no public model; an infinite leakage ε (a public model that gives a leaked text probability 0) is
+∞ and fails every limit; the membership limit checks the headline attack (``mia_auc``), names it
(``method``) and states the best raw AUC of any method beside it as selected after the fact; a limit
on an excess over a null (``pii_people_excess``) with no null is not evaluable with the stage's
``<metric>_reason`` and ``<metric>_fix``. Wherever a run measured a DP audit's lower bound for a model
that claims ε, the claim is checked too, at the claimed δ.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lmleak.render.decision import decide, no_interval_note, power_line
from lmleak.render.headline import MIA_PER_SIDE, PER_K
from lmleak.render.limits import (
    LIMIT_OPTIONS,
    PROFILES,
    Limit,
    gate_section,
    limits_from_config,
    profile_limits,
    resolve_limits,
)
from lmleak.words import plural

#: An MIA AUC from fewer texts than this on either side is "not evaluable" (too little data).
MIN_MIA_PER_SIDE = 10

__all__ = [
    "LIMIT_OPTIONS",
    "PROFILES",
    "GateCheck",
    "Limit",
    "Verdict",
    "configured_verdict",
    "gate_section",
    "limits_from_config",
    "profile_limits",
    "resolve_limits",
    "verdict_checks",
    "verdict_of",
    "verdict_rows",
]

LIMIT_LABELS: dict[str, str] = {
    "unique_sequences": "Unique leaked sequences",
    "pii_unique_sequences": "Leaked PII (user-unique sequences)",
    "leakage_epsilon": "Leakage ε",
    "max_exposure": "Highest canary exposure (bits)",
    "mia_auc": "Membership inference AUC",
    "pii_exact_match": "PII exact-match rate",
    "pii_people_excess": "People with leaked PII beyond the null (share)",
    "pii_exact_match_excess": "PII exact-match rate, members − held-out controls",
    "epsilon_lower_bound": "Measured ε lower bound (DP audit)",
    "extracted": "Extracted training samples",
    "epsilon_lower_bound <= claimed dp_epsilon": "DP claim vs measured ε lower bound",
}

#: which analysis (audit stage) measures each limited metric
METRIC_STAGE: dict[str, str] = {
    "unique_sequences": "report",
    "pii_unique_sequences": "report",
    "curated_unique_sequences": "report",
    "leakage_epsilon": "report",
    "max_exposure": "exposure",
    "mia_auc": "mia",
    "mia_accuracy": "mia",
    "pii_exact_match": "probe",
    "pii_exact_match_excess": "probe",
    "pii_people_excess": "report",
    "pii_likelihood_ratio": "probe",
    "pii_likelihood_ratio_geomean": "probe",
    "epsilon_lower_bound": "dp_audit",
    "extracted": "extract",
}

#: the one line that runs an analysis an audit did not run (audit config keys; docs/audit.md)
STAGE_FIX: dict[str, str] = {
    "report": "add `report: {}` under `analyses:` in the audit config (or run `lmleak report`)",
    "exposure": "insert canaries into the training data (`lmleak synth customersim --canaries N` writes a corpus "
    "with canaries.jsonl), retrain, and set `analyses.exposure.canaries: canaries.jsonl`",
    "mia": "add `mia: {}` under `analyses:` (members: the model's training users, non-members: its held-out "
    "users in holdout.json), or `mia: {non_members: PEOPLE.jsonl}` (a corpus of people it never saw)",
    "probe": "build subjects with `lmleak probe build --corpus CORPUS --out subjects.jsonl` and set "
    "`analyses.probe.subjects: subjects.jsonl`",
    "dp_audit": "add `dp_audit: {m: 256}` under `analyses:` (retrains the model's recipe with canaries)",
    "extract": "add `extract: {num_samples: 1000}` under `analyses:`",
}


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One row of the verdict: a limit for one model (and one k).

    ``status`` None means "from the value": decided on the interval when there is one (pass, fail,
    inconclusive: :func:`~lmleak.render.decision.decide`), on the value when not, not evaluable
    without a value; ``reason`` says why a row is not evaluable (or why it passes without a number),
    ``fix`` the one line that would measure it, ``note`` anything a reader needs beside the number (the
    attack the MIA headline is, how a value without an interval is decided), ``power`` how many people
    would settle an inconclusive row, ``shown`` the value cell when there is no number to show
    ("0 sequences to bound")."""

    model: str
    metric: str
    limit: float
    value: float | None
    direction: str = "max"  # "max": value <= limit passes; "min": value >= limit passes
    status: str | None = None
    interval: tuple[float, float] | None = None
    reason: str | None = None
    fix: str | None = None
    note: str | None = None
    method: str | None = None
    required: bool = True
    rationale: str | None = None
    power: str | None = None
    shown: str | None = None

    @property
    def verdict(self) -> str:
        """``pass``, ``fail``, ``inconclusive`` or ``not_evaluable``."""
        if self.status is not None:
            return self.status
        if self.value is None:
            return "not_evaluable"
        return decide(self.value, self.interval, self.limit, self.direction)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def blocks(self, allow_not_evaluable: bool = False, allow_inconclusive: bool = False) -> bool:
        """Whether this row fails the verdict: a failed limit, an inconclusive one (unless allowed:
        whether required or not, the analysis ran and did not settle it), or a required one not
        evaluable (unless allowed)."""
        verdict = self.verdict
        if verdict == "fail":
            return True
        if verdict == "inconclusive":
            return not allow_inconclusive
        return verdict == "not_evaluable" and self.required and not allow_not_evaluable

    def to_dict(self) -> dict[str, Any]:
        """The check in ``lmleak gate --json``: ``model, metric, limit, value, passed`` and ``status``
        (pass / fail / inconclusive / not_evaluable), ``direction``, ``interval``, ``reason``, ``fix``,
        ``note``, ``power``, ``shown``, ``method``, ``required``, ``rationale``."""
        return {
            "model": self.model,
            "metric": self.metric,
            "limit": self.limit,
            "value": self.value,
            "passed": self.passed,
            "status": self.verdict,
            "direction": self.direction,
            "interval": None if self.interval is None else list(self.interval),
            "reason": self.reason,
            "fix": self.fix,
            "note": self.note,
            "power": self.power,
            "shown": self.shown,
            "method": self.method,
            "required": self.required,
            "rationale": self.rationale,
        }

    def describe(self) -> str:
        """One line for the terminal."""
        kind = "floor" if self.direction == "min" else "limit"
        what = self.metric + (f" [{self.method}]" if self.method else "")
        if self.verdict == "not_evaluable":
            tail = "" if self.required else " (not required)"
            return f"{self.model}: {what} was not measured ({kind} {self.limit:g}){tail}: {self.reason}" + (
                f"; to measure it: {self.fix}" if self.fix else ""
            )
        value = self.shown or ("—" if self.value is None else format_value(self.metric, self.value))
        ci = "" if self.interval is None else f" [95% {format_interval(self.metric, self.interval)}]"
        verdict = {"pass": "ok", "inconclusive": "INCONCLUSIVE"}.get(self.verdict, "FAILED")
        why = "".join(f" — {x}" for x in (self.reason, self.power) if x)
        return f"{self.model}: {what} = {value}{ci} ({kind} {self.limit:g}) {verdict}{why}"


def format_value(metric: str, value: float) -> str:
    """A value as the verdict shows it: ∞, e^x for a leakage ε too large to print, else 4 digits.

    Example:
        >>> format_value("leakage_epsilon", math.inf), format_value("leakage_epsilon", 1e308), format_value("mia_auc", 0.61234)
        ('∞', 'e^709.2', '0.6123')
    """
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if metric.startswith("leakage_epsilon") and value > 1e5:
        return f"e^{math.log(value):.1f}"
    return f"{value:.4g}"


def format_interval(metric: str, interval: Sequence[float]) -> str:
    return f"{format_value(metric, float(interval[0]))}, {format_value(metric, float(interval[1]))}"


def _interval(values: Mapping[str, Any], name: str) -> tuple[float, float] | None:
    ci = values.get(f"{name}_ci")
    if isinstance(ci, list | tuple) and len(ci) == 2 and all(isinstance(x, int | float) for x in ci):
        return float(ci[0]), float(ci[1])
    return None


def _value(values: Mapping[str, Any], metric: str) -> float | None:
    """A metric's value; leakage ε from its logarithm (+∞ beyond a float, and where the run recorded
    an infinite ratio that JSON stores as null)."""
    if metric == "leakage_epsilon":
        if values.get("leakage_epsilon_infinite"):
            return math.inf
        if values.get("log_leakage_epsilon") is not None:
            x = float(values["log_leakage_epsilon"])
            return math.inf if x > 709 else math.exp(x)
    value = values.get(metric)
    return None if value is None or isinstance(value, dict | list | str) else float(value)


@dataclass(frozen=True, slots=True)
class _Context:
    """What the verdict knows about one model besides its headline: the run summary's record of it."""

    meta: dict[str, Any] = field(default_factory=dict)  # summary["models"][name] (empty: one stage's run)
    release: dict[str, Any] = field(default_factory=dict)  # summary["release"]["models"][name]
    top: dict[str, Any] = field(default_factory=dict)  # the model's whole headline (per-k rows read it too)
    public_model: bool | None = None  # whether the leakage report had a public model (None: not recorded)

    def unmeasured(self, metric: str, values: Mapping[str, Any]) -> tuple[str, str | None]:
        """Why ``metric`` has no value for this model (``values``: its headline, or one k of it), and
        the one line that would measure it: the stage's own ``<metric>_reason`` / ``_fix`` first."""
        reason = values.get(f"{metric}_reason") or self.top.get(f"{metric}_reason")
        if isinstance(reason, str) and reason:
            fix = values.get(f"{metric}_fix") or self.top.get(f"{metric}_fix")
            return reason, fix if isinstance(fix, str) else None
        names = {metric, _MEASURED_FROM.get(metric, metric)}
        for entry in self.release.get("not_run") or ():
            if names & set(entry.get("metrics") or ()):
                return str(entry["reason"]), entry.get("fix")
        stage = METRIC_STAGE.get(metric, metric)
        skipped = (self.meta.get("skipped") or {}).get(stage)
        if skipped:
            return f"the {stage} stage was skipped: {skipped}", None
        if self.meta and stage not in (self.meta.get("stages") or {}):
            return f"the {stage} analysis did not run in this audit", STAGE_FIX.get(stage)
        if not self.meta and not (stage == "report" and "unique_sequences" in values):
            return f"this run has no {stage} results", STAGE_FIX.get(stage)
        return _MEASURED_ONLY_WITH.get(metric, (f"the {stage} stage ran but did not measure {metric}", None))


#: an excess is measured from its metric: what leaves that unmeasured (the release summary's not_run) leaves it too
_MEASURED_FROM = {"pii_exact_match_excess": "pii_exact_match", "pii_people_excess": "pii_unique_sequences"}

_PUBLIC_MODEL_FIX = "set `public_model:` in the audit config (or `lmleak report --public-model`)"

#: metrics a stage measures only with something more, and what (reason, fix)
_MEASURED_ONLY_WITH: dict[str, tuple[str, str | None]] = {
    "leakage_epsilon": (
        "no public model: leakage ε compares the model with a model that never saw the data",
        _PUBLIC_MODEL_FIX,
    ),
    "curated_unique_sequences": (
        "no public model: the curated count keeps the sequences a public model finds unlikely",
        _PUBLIC_MODEL_FIX,
    ),
    "pii_unique_sequences": (
        "no PII policy ran over the leaked sequences",
        "set `analyses.report.pii_policy: regex` (or `lmleak report --pii-policy regex`)",
    ),
    "pii_people_excess": (
        "no null: the leakage report ran over no held-out people and with no public model, so nothing "
        "says what a model that never saw these people reproduces",
        "train with held-out people (`lmleak train --holdout-users`, which writes holdout.json) or set "
        "`public_model:` in the audit config",
    ),
    "pii_exact_match_excess": (
        "no held-out control was probed: the excess compares members with people the model never saw",
        "build subjects over the model's held-out people too (`lmleak probe build --corpus CORPUS`, their "
        "user_id in holdout.json)",
    ),
}


def _check(model: str, limit: Limit, values: Mapping[str, Any], ctx: _Context, suffix: str = "") -> GateCheck:
    """One limit on one model's values (a headline, or one k of it), decided on its interval."""
    metric = limit.metric
    common: dict[str, Any] = {
        "model": model,
        "metric": metric + suffix,
        "limit": float(limit.value),
        "direction": limit.direction,
        "required": limit.required,
        "rationale": limit.rationale,
    }
    value = _value(values, metric)
    if metric == "leakage_epsilon" and value is None and values.get("unique_sequences") == 0:
        return _nothing_to_bound(common, ctx)
    if value is None:
        reason, fix = ctx.unmeasured(metric, values)
        return GateCheck(**common, value=None, reason=reason, fix=fix)
    extra: dict[str, Any] = {
        "interval": _interval(values, metric),
        **_metric_context(metric, values, ctx.top),
    }
    return _decided(GateCheck(**common, value=value, **extra), values, ctx.top)


def _nothing_to_bound(common: dict[str, Any], ctx: _Context) -> GateCheck:
    """Leakage ε of a model with no user-unique sequence: a pass stating "0 sequences to bound", or
    not evaluable when the run had no public model (ε could not have been measured either way)."""
    if ctx.public_model is False:
        reason, fix = _MEASURED_ONLY_WITH["leakage_epsilon"]
        return GateCheck(
            **common, value=None, reason=reason + " (and no user-unique sequence leaked)", fix=fix
        )
    reason = "no user-unique sequence leaked: there is nothing to bound (the maximum over an empty set)"
    return GateCheck(**common, value=None, status="pass", reason=reason, shown="0 sequences to bound")


def _decided(check: GateCheck, values: Mapping[str, Any], top: Mapping[str, Any]) -> GateCheck:
    """The check with how it was decided: a note when it has no interval, a power line when inconclusive."""
    if check.status is not None or check.value is None:
        return check
    base = check.metric.split(" (k=")[0]
    if check.interval is None:
        note = "; ".join(x for x in (check.note, no_interval_note(base)) if x)
        return replace(check, note=note)
    if check.verdict == "inconclusive":
        power = power_line(base, check.value, check.interval, check.limit, values, top)
        return replace(check, power=power)
    return check


def _metric_context(metric: str, values: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """What a row needs beside its number, per metric: the MIA's attack and placebo, probing's members
    against controls, the null an excess is over."""
    if metric == "mia_auc":
        return _mia_context(values)
    if metric == "pii_people_excess":
        return {"note": _people_excess_note({**top, **values})}
    if metric == "pii_exact_match_excess":
        return {"note": _probe_note(values, "members − controls")}
    if metric == "pii_exact_match" and values.get("pii_exact_match_members") is not None:
        return {"note": _probe_note(values)}
    if metric == "pii_exact_match" and values.get("pii_exact_match_controls") is not None:
        return {
            "status": "not_evaluable",
            "reason": _NO_MEMBERS_PROBED.format(values.get("pii_exact_match_controls_n")),
            "fix": "probe people of the training corpus: `lmleak probe build --corpus CORPUS` "
            "(their user_id a training user)",
        }
    return {}


def _share(k: Any, n: Any) -> str:
    if not isinstance(k, int | float) or not isinstance(n, int | float) or n <= 0:
        return "not recorded"
    return f"{k:g} of {n:g} ({k / n:.1%})"


def _people_excess_note(values: Mapping[str, Any]) -> str:
    """The excess's two shares and its null: "trained-on people 12 of 200 (6.0%); held-out ..."."""
    members = (
        f"trained-on people {_share(values.get('pii_people_members'), values.get('pii_people_members_n'))}"
    )
    if values.get("null_kind") == "public_model":
        return (
            f"{members}; null: the curated count against a public model (the null share is 0 by construction)"
        )
    null = _share(values.get("pii_people_null"), values.get("pii_people_null_n"))
    return f"{members}; held-out people (never trained on, the null) {null}"


_NO_MEMBERS_PROBED = (
    "no probed person was trained on: all {} probes were of held-out controls (people the model never "
    "saw, its holdout.json), so the rate says what guessing gives, not what the model reveals"
)


def _mia_context(values: Mapping[str, Any]) -> dict[str, Any]:
    """The MIA row's method, its selection, the best raw AUC beside it, and "too little data"."""
    method = values.get("mia_method")
    selection = values.get("headline_selection")
    notes = []
    if selection:
        notes.append(f"headline attack chosen by {selection}")
    by_attack = values.get("mia_auc_by_attack") or {}
    if isinstance(by_attack, dict) and by_attack:
        best = max(by_attack, key=lambda k: by_attack[k] if by_attack[k] is not None else -1.0)
        headline = values.get("mia_auc")
        if (
            best != method
            and by_attack[best] is not None
            and (headline is None or by_attack[best] > headline)
        ):
            notes.append(f"best raw AUC {by_attack[best]:.4g} ({best}, selected after the fact)")
    placebo, placebo_ci = values.get("placebo_auc"), _interval(values, "placebo_auc")
    if placebo is not None:
        within = "" if placebo_ci is None else f" [{placebo_ci[0]:.3g}, {placebo_ci[1]:.3g}]"
        notes.append(f"placebo AUC {placebo:.4g}{within} (should cover 0.5)")
    out: dict[str, Any] = {"method": method, "note": "; ".join(notes) or None}
    if placebo is not None and placebo_ci is not None and not placebo_ci[0] <= 0.5 <= placebo_ci[1]:
        out["status"] = "not_evaluable"
        out["reason"] = (
            f"the placebo failed: on two halves of people the model never saw, the attack reaches AUC "
            f"{placebo:.3g} [{placebo_ci[0]:.3g}, {placebo_ci[1]:.3g}], which excludes 0.5 — it tells these "
            "people apart without any membership, so its AUC here does not measure membership"
        )
        out["fix"] = (
            "give membership inference more people the model never saw (lmleak train --holdout-users "
            "with a larger share, or lmleak audit --holdout PEOPLE.jsonl)"
        )
    n = values.get(MIA_PER_SIDE)
    if isinstance(n, int | float) and n < MIN_MIA_PER_SIDE:
        sd = math.sqrt((2 * n + 1) / (12 * n * n)) if n > 0 else math.inf
        out["status"] = "not_evaluable"
        out["reason"] = (
            f"too little data: {plural(int(n), 'text')} a side (fewer than {MIN_MIA_PER_SIDE}); a chance AUC has a "
            f"standard deviation of {sd:.2f} there"
        )
        out["fix"] = "give more members and non-members (more held-out users: lmleak train --holdout-users)"
    return out


def _probe_note(values: Mapping[str, Any], what: str = "pooled rate") -> str:
    m, c = values.get("pii_exact_match_members"), values.get("pii_exact_match_controls")
    parts = [] if m is None else [f"members {m:.1%} (n = {values.get('pii_exact_match_members_n')})"]
    if c is not None:
        parts.append(f"held-out controls {c:.1%} (n = {values.get('pii_exact_match_controls_n')})")
    if values.get("pii_exact_match_fisher_p") is not None:
        parts.append(f"Fisher p {values['pii_exact_match_fisher_p']:.2g}")
    return "; ".join([what, ", ".join(parts)]) if parts else what


def _claim_check(model: str, headline: Mapping[str, Any]) -> GateCheck | None:
    """A DP claim against the DP audit's lower bound at the claimed δ (always checked when measured)."""
    bound = headline.get("epsilon_lower_bound_at_claimed_delta", headline.get("epsilon_lower_bound"))
    if bound is None or headline.get("dp_epsilon") is None:
        return None
    delta = headline.get("claimed_delta")
    check = GateCheck(
        model,
        "epsilon_lower_bound <= claimed dp_epsilon",
        float(headline["dp_epsilon"]),
        float(bound),
        note=None if delta is None else f"bound at the claimed δ = {delta:g}",
    )
    return _decided(check, headline, headline)


def _public_model(summary: Mapping[str, Any], release: Mapping[str, Any]) -> bool | None:
    """Whether the model's leakage report had a public model: False when the release summary lists
    leakage ε as not run, or a single report stage recorded ``public_model: null``; None when unknown."""
    if any("leakage_epsilon" in (e.get("metrics") or ()) for e in release.get("not_run") or ()):
        return False
    if not isinstance(summary.get("models"), dict) and "public_model" in summary:
        return summary["public_model"] is not None
    return None


#: The note on every row of a model behind an API whose tokenizer was not checked (issue 33).
UNVERIFIED_TOKENIZER = (
    "tokenizer unverified (tokenizer_verified: false: the server has no /tokenize); a wrong one makes a "
    "leaking model look clean"
)


def _tokenizer_unverified(summary: Mapping[str, Any], headline: Mapping[str, Any], ctx: _Context) -> bool:
    """Whether the run records the model's tokenizer as unchecked against its server (a one-stage
    summary's ``tokenizer_verified``, or the audit's record of the model's access)."""
    access: Mapping[str, Any] = (
        ctx.meta.get("access") or {} if isinstance(ctx.meta.get("access"), dict) else {}
    )
    one_stage = summary.get("tokenizer_verified") is False and not ctx.meta
    return (
        one_stage or headline.get("tokenizer_verified") is False or access.get("tokenizer_verified") is False
    )


def verdict_checks(
    summary: Mapping[str, Any], headlines: Mapping[str, Mapping[str, Any]], limits: Sequence[Limit]
) -> list[GateCheck]:
    """Every check of the verdict: per model, the DP claim (when a DP audit measured it), then each
    limit — per k of the tab attack for the report's metrics, so the verdict covers every k."""
    models = summary.get("models") if isinstance(summary.get("models"), dict) else {}
    releases = (summary.get("release") or {}).get("models") or {}
    checks: list[GateCheck] = []
    for model, headline in headlines.items():
        release = dict(releases.get(model) or {})
        ctx = _Context(
            dict((models or {}).get(model) or {}), release, dict(headline), _public_model(summary, release)
        )
        claim = _claim_check(model, headline)
        if claim is not None:
            checks.append(claim)
        by_k = headline.get("by_k") or {}
        first = len(checks)
        for limit in limits:
            if limit.option == "min_epsilon_lower_bound" and headline.get("dp_epsilon") is not None:
                continue  # the floor is for controls (no DP claim); a DP model has its claim check
            if limit.metric in PER_K and by_k:
                for k in sorted(by_k, key=int):
                    checks.append(_check(model, limit, by_k[k], ctx, f" (k={k})"))
            else:
                checks.append(_check(model, limit, headline, ctx))
        if _tokenizer_unverified(summary, headline, ctx):
            checks[first:] = [
                replace(c, note=f"{c.note}; {UNVERIFIED_TOKENIZER}" if c.note else UNVERIFIED_TOKENIZER)
                for c in checks[first:]
            ]
    floor = next((lim for lim in limits if lim.option == "min_epsilon_lower_bound"), None)
    if floor is not None and floor.value > 0 and not any(c.direction == "min" for c in checks):
        # every model claims DP: nothing shows the audit's power, and a floor must not pass silently
        checks.append(
            GateCheck(
                "(none)",
                "epsilon_lower_bound of a model without a DP claim",
                float(floor.value),
                None,
                direction="min",
                reason="every audited model claims DP: no plain-trained control shows the audit's power",
                fix="audit a plain-trained model of the same recipe with `dp_audit` as a control",
            )
        )
    return checks


@dataclass(frozen=True, slots=True)
class Verdict:
    """Every check of a release gate. It passes when no check fails, none is inconclusive (or
    ``allow_inconclusive``), and every required limit was evaluable (or ``allow_not_evaluable``)."""

    checks: tuple[GateCheck, ...]
    allow_not_evaluable: bool = False
    profile: str | None = None
    allow_inconclusive: bool = False

    @property
    def failed(self) -> list[GateCheck]:
        """The checks that fail the verdict (failed, inconclusive or not evaluable, unless allowed)."""
        return [c for c in self.checks if c.blocks(self.allow_not_evaluable, self.allow_inconclusive)]

    @property
    def passed(self) -> bool:
        return not self.failed

    def _status(self, rows: Sequence[GateCheck]) -> str:
        blocking = {c.verdict for c in rows if c.blocks(self.allow_not_evaluable, self.allow_inconclusive)}
        return next((s for s in ("fail", "inconclusive", "not_evaluable") if s in blocking), "pass")

    @property
    def status(self) -> str:
        """``pass``; else the first of ``fail`` (a limit failed), ``inconclusive`` (an interval
        straddles its limit) and ``not_evaluable`` (a required limit was not measured) that blocks."""
        return self._status(self.checks)

    def model_status(self, model: str) -> str:
        """:attr:`status` for one model, or ``no_limits``."""
        rows = [c for c in self.checks if c.model == model]
        return self._status(rows) if rows else "no_limits"

    def to_dict(self) -> dict[str, Any]:
        """``lmleak gate --json``: ``passed``, ``status``, ``allow_not_evaluable``, ``allow_inconclusive``,
        ``profile`` and ``checks``."""
        return {
            "passed": self.passed,
            "status": self.status,
            "allow_not_evaluable": self.allow_not_evaluable,
            "allow_inconclusive": self.allow_inconclusive,
            "profile": self.profile,
            "checks": [c.to_dict() for c in self.checks],
        }


def verdict_of(
    summary: Mapping[str, Any],
    headlines: Mapping[str, Mapping[str, Any]],
    limits: Sequence[Limit],
    *,
    allow_not_evaluable: bool = False,
    profile: str | None = None,
    allow_inconclusive: bool = False,
) -> Verdict:
    """The verdict table of a run (its ``summary.json`` and headlines) under ``limits``."""
    checks = tuple(verdict_checks(summary, headlines, limits))
    return Verdict(checks, allow_not_evaluable, profile, allow_inconclusive)


def configured_verdict(
    summary: Mapping[str, Any],
    headlines: Mapping[str, Mapping[str, Any]],
    *,
    allow_not_evaluable: bool = False,
    allow_inconclusive: bool = False,
) -> Verdict:
    """The verdict under the ``gate:`` section of the audit config that wrote the run (its limits,
    profile, ``allow_not_evaluable`` and ``allow_inconclusive``; either allowance given here as well)."""
    gate = gate_section(summary)
    limits, allow, profile = limits_from_config(gate)
    return verdict_of(
        summary,
        headlines,
        limits,
        allow_not_evaluable=allow or allow_not_evaluable,
        profile=profile,
        allow_inconclusive=bool((gate or {}).get("allow_inconclusive")) or allow_inconclusive,
    )


STATUS_WORDS = {
    "pass": "Pass",
    "fail": "Fail",
    "inconclusive": "Inconclusive",
    "not_evaluable": "Not evaluable",
    "no_limits": "No limits set",
}


def verdict_rows(verdict: Verdict) -> list[dict[str, str]]:
    """The verdict as display rows (the HTML card and ``lmleak gate`` print these same cells):
    ``model, limit, value, interval, result, why``."""
    rows = []
    for c in verdict.checks:
        base = c.metric.split(" (k=")[0]
        label = LIMIT_LABELS.get(base, base) + c.metric[len(base) :]
        kind = "≥" if c.direction == "min" else "≤"
        result = STATUS_WORDS[c.verdict]
        if c.verdict == "not_evaluable":
            if c.blocks(verdict.allow_not_evaluable):
                result += " (blocks)"
            else:
                result += " (optional)" if not c.required else " (allowed)"
        elif c.verdict == "inconclusive":
            result += " (allowed)" if verdict.allow_inconclusive else " (blocks)"
        why = [x for x in (c.reason, c.power, c.note, f"to measure it: {c.fix}" if c.fix else None) if x]
        rows.append(
            {
                "model": c.model,
                "limit": f"{label}{' [' + c.method + ']' if c.method else ''} {kind} {c.limit:g}",
                "value": c.shown or ("—" if c.value is None else format_value(c.metric, c.value)),
                "interval": "—" if c.interval is None else f"[{format_interval(c.metric, c.interval)}]",
                "result": result,
                "status": c.verdict,
                "why": "; ".join(why),
                "rationale": c.rationale or "",
            }
        )
    return rows
