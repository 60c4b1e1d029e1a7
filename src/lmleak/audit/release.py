"""The release summary of an audit: what a release manager reads first.

For each audited model, ``summary.json`` gets ``release.models[name]`` with

- ``people_affected``: the distinct people whose PII leaked — from the leakage report, the trained-on
  users who own a headline leaked-PII sequence, beside the held-out people who do (the null, never
  counted as leaks; :func:`leaked_pii_people`); from PII probing, the
  probed people whose PII the model generated verbatim (members and held-out controls apart, where
  the subjects file says whose is whose);
- ``not_run``: every analysis that did not run, or ran on nothing, with ``reason`` and ``fix`` (the
  one line that would run it) and the gate ``metrics`` it leaves unmeasured — configured stages the
  audit skipped, stages not configured, leakage ε without a public model, exposure without canaries,
  probing with no eligible subject at its level, membership inference with too few texts.

The verdict itself is not stored: it depends on the limits, and :mod:`lmleak.render.verdict`
computes it from this summary wherever it is shown (terminal, HTML, ``lmleak gate``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmleak.audit.config import AuditConfig, enabled_stages
from lmleak.audit.nonmembers import NO_NON_MEMBERS, mia_fix
from lmleak.render.headline import texts_a_side
from lmleak.render.verdict import MIN_MIA_PER_SIDE, STAGE_FIX
from lmleak.words import plural

#: the headline metrics each stage gives (what a stage that did not run leaves unmeasured)
STAGE_METRICS = {
    "report": ["unique_sequences", "pii_unique_sequences", "curated_unique_sequences", "leakage_epsilon"],
    "exposure": ["max_exposure"],
    "mia": ["mia_auc", "mia_accuracy"],
    "probe": [
        "pii_exact_match",
        "pii_exact_match_excess",
        "pii_likelihood_ratio",
        "pii_likelihood_ratio_geomean",
    ],
    "dp_audit": ["epsilon_lower_bound"],
    "extract": ["extracted"],
}

PUBLIC_MODEL_FIX = (
    "set `public_model:` in the audit config (smollm2-135m, `base` for a fine-tune, `leave-out`, or a model "
    "folder that never saw the data)"
)


def _entry(analysis: str, reason: str, fix: str | None, metrics: list[str] | None = None) -> dict[str, Any]:
    return {"analysis": analysis, "reason": reason, "fix": fix, "metrics": list(metrics or [])}


def _stage_summary(run: Path, model: dict[str, Any], stage: str) -> dict[str, Any] | None:
    rel = (model.get("stages") or {}).get(stage)
    if rel is None:
        return None
    p = run / rel / "summary.json"
    return dict(json.loads(p.read_text(encoding="utf-8"))) if p.exists() else None


def not_run(
    cfg: AuditConfig, run: Path, model: dict[str, Any], probe_levels: dict[str, int] | None = None
) -> list[dict[str, Any]]:
    """Every analysis that did not run for one model (its ``summary.json`` entry), or ran on nothing."""
    skipped = model.get("skipped") or {}
    out: list[dict[str, Any]] = []
    names = {
        "report": "leakage report (unique sequences, leaked PII, leakage ε)",
        "exposure": "canary exposure",
        "mia": "membership inference",
        "probe": "PII probing",
        "dp_audit": "one-run DP audit of the model's claim",
        "extract": "untargeted extraction",
    }
    claims_dp = (model.get("privacy") or {}).get("dp_epsilon") is not None
    configured = dict(enabled_stages(cfg))
    for stage, metrics in STAGE_METRICS.items():
        if stage in skipped:
            fix = STAGE_FIX.get(stage)
            if skipped[stage] == NO_NON_MEMBERS:  # the exact line that runs it (issue 29)
                fix = mia_fix(cfg, str(model.get("path")))
            out.append(_entry(names[stage], f"skipped: {skipped[stage]}", fix, metrics))
        elif stage not in configured:
            if stage == "dp_audit" and not claims_dp:
                continue  # a model that claims no DP has no claim to audit
            why = {
                "exposure": "no canaries: exposure measures secrets inserted into the training data, and this "
                "audit names no canaries file",
                "probe": "no subjects file: probing needs the people to probe",
            }.get(stage, "not configured in this audit")
            out.append(_entry(names[stage], why, STAGE_FIX.get(stage), metrics))
        else:
            out.extend(_ran_on_little(cfg, stage, _stage_summary(run, model, stage), probe_levels))
    return out


def _ran_on_little(
    cfg: AuditConfig, stage: str, summary: dict[str, Any] | None, probe_levels: dict[str, int] | None
) -> list[dict[str, Any]]:
    """The parts of a stage that ran that measured nothing: no public model, no PII policy, no
    eligible probing subject, too few membership texts."""
    if summary is None:
        return []
    out = []
    if stage == "report":
        out.extend(_report_on_little(summary))
    elif stage == "mia":
        n = texts_a_side(summary)
        if isinstance(n, int) and n < MIN_MIA_PER_SIDE:
            out.append(
                _entry(
                    "membership inference",
                    f"too little data: {plural(n, 'text')} a side (fewer than {MIN_MIA_PER_SIDE})",
                    "give more members and non-members (more held-out users: lmleak train --holdout-users)",
                    STAGE_METRICS["mia"],
                )
            )
        if cfg.public_model is None:
            out.append(
                _entry(
                    "reference-model membership attack",
                    "no public model to calibrate against",
                    PUBLIC_MODEL_FIX,
                )
            )
    elif stage == "probe":
        out.extend(_probe_on_nothing(summary, probe_levels or {}))
    elif stage == "exposure" and summary.get("num_canaries") == 0:
        out.append(
            _entry(
                "canary exposure",
                "the canaries file holds no canary",
                STAGE_FIX["exposure"],
                STAGE_METRICS["exposure"],
            )
        )
    return out


def _report_on_little(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The leakage report's parts that measured nothing: no public model, no null for leaked PII,
    no PII policy."""
    out = []
    if summary.get("public_model") is None:
        out.append(
            _entry(
                "leakage ε and curated unique sequences",
                "no public model: leakage ε compares the model with a model that never saw the data",
                PUBLIC_MODEL_FIX,
                ["leakage_epsilon", "curated_unique_sequences"],
            )
        )
    if summary.get("pii_policy") is not None and "null_kind" in summary and summary["null_kind"] is None:
        out.append(
            _entry(
                "leaked PII against its null",
                summary.get("pii_people_excess_reason") or "no null",
                summary.get("pii_people_excess_fix"),
                ["pii_people_excess"],
            )
        )
    if summary.get("pii_policy") is None:
        out.append(
            _entry(
                "leaked PII",
                "no PII policy: analyses.report.pii_policy is null",
                "set `analyses.report.pii_policy: regex`",
                ["pii_unique_sequences"],
            )
        )
    return out


def _probe_on_nothing(summary: dict[str, Any], counts: dict[str, int]) -> list[dict[str, Any]]:
    """Probing that found no eligible subject at its level (every target type without a prompt)."""
    targets = summary.get("targets") or {}
    if not targets or any(t.get("prompts") for t in targets.values()):
        return []
    level = summary.get("level")
    better = [lv for lv, n in counts.items() if n and lv != level]
    fix = (
        f"set `analyses.probe.level: {better[0]}` ({plural(counts[better[0]], 'subject')} eligible there)"
        if better
        else "give subjects with a name and at least one of phone, email, address (lmleak probe build)"
    )
    return [
        _entry(
            "PII probing",
            f"ran on nothing: no subject has the items the {level} level needs",
            fix,
            STAGE_METRICS["probe"],
        )
    ]


def probe_people(generations: Any, user_of: dict[str, str], controls: set[str]) -> dict[str, Any]:
    """Probed *people* whose PII the model generated verbatim (any template), by target type; members
    and controls apart. People are counted by user id, not by subject row (issue 32: "248 probed
    people" were 248 rows of 228 users): the probe stage writes each row's person (``user_id``, empty
    for a third party found only in other people's documents) and ``membership`` (member, control,
    unknown) into ``generations.parquet``; a run written before that is read through ``user_of``
    (subject id -> user id) and ``controls`` (the users held out), as then.

    Example:
        >>> import pandas as pd
        >>> g = pd.DataFrame({"subject_id": ["s1", "s1", "s2", "s3"], "target_type": ["email", "phone", "email", "email"],
        ...                   "exact_match": [True, True, False, True]})
        >>> probe_people(g, {"s1": "u1", "s2": "u2", "s3": "u3"}, {"u3"})
        {'people': 2, 'by_type': {'email': 2, 'phone': 1}, 'probed': 3, 'members': 1, 'controls': 1, 'members_probed': 2, 'controls_probed': 1}

    ``probed`` (and ``members_probed``, ``controls_probed``): how many people each count is out of —
    "0 trained on, 0 held-out controls" read the same whether 2 or no controls were probed. With the
    stage's columns: ``unknown`` / ``unknown_probed`` (people whose membership is unknown: third
    parties, or everyone when the model records no held-out people — then no member or control count
    is given at all), ``third_parties_probed`` and ``subject_rows_probed``.
    """
    g = generations
    if "member" in g.columns and "user_id" in g.columns:
        return _probe_people_by_column(g)
    person = [user_of.get(str(s), str(s)) for s in g["subject_id"]]
    g = g.assign(person=person)
    hits = g[g["exact_match"].fillna(False).astype(bool)]
    people = set(hits["person"])
    probed = set(g["person"])
    by_type = {str(t): int(part["person"].nunique()) for t, part in hits.groupby("target_type")}
    out: dict[str, Any] = {
        "people": len(people),
        "by_type": dict(sorted(by_type.items())),
        "probed": len(probed),
    }
    if user_of and {str(s) for s in g["subject_id"]} <= set(user_of):
        held_out = sum(1 for u in people if u in controls)
        held_out_probed = sum(1 for u in probed if u in controls)
        out.update(members=len(people) - held_out, controls=held_out)
        out.update(members_probed=len(probed) - held_out_probed, controls_probed=held_out_probed)
    return out


def leaked_pii_people(report: dict[str, Any]) -> dict[str, Any]:
    """``people_affected.leaked_pii`` from a leakage report's summary: the trained-on people who own
    a headline leaked-PII sequence (``people``, ``by_type``) out of ``members_n``, beside the
    held-out people who do (``held_out`` of ``held_out_n``: what the model generalises, never
    counted as leaks), the excess share with its interval, and the members' leaks by whose PII
    they hold. A report from before the null (no ``null_kind`` key) counts everyone, as it did.

    Example:
        >>> r = {"pii_users": 3, "pii_users_by_type": {"EMAIL": 3}, "k": 1, "min_tokens": 5,
        ...      "null_kind": "held_out", "pii_people_members": 2, "pii_people_members_n": 8,
        ...      "pii_people_members_by_type": {"EMAIL": 2}, "pii_people_null": 1, "pii_people_null_n": 2,
        ...      "pii_people_excess": -0.25, "pii_people_excess_ci": [-0.7, 0.2],
        ...      "pii_owner_counts": {"own": 1, "third_party": 2, "unknown": 0}}
        >>> p = leaked_pii_people(r)
        >>> p["people"], p["members_n"], p["held_out"], p["held_out_n"], p["by_type"]
        (2, 8, 1, 2, {'EMAIL': 2})
    """
    out: dict[str, Any] = {
        "people": report["pii_users"],
        "by_type": report.get("pii_users_by_type") or {},
        "k": report.get("k"),
        "min_tokens": report.get("min_tokens"),
    }
    if "null_kind" not in report:
        return out
    out.update(
        people=report.get("pii_people_members"),
        by_type=report.get("pii_people_members_by_type") or {},
        members_n=report.get("pii_people_members_n"),
        held_out=report.get("pii_people_null"),
        held_out_n=report.get("pii_people_null_n"),
        null_kind=report.get("null_kind"),
        excess=report.get("pii_people_excess"),
        excess_ci=report.get("pii_people_excess_ci"),
        owners=report.get("pii_owner_counts") or {},
    )
    for key in ("pii_people_excess_reason", "pii_people_excess_fix"):
        if report.get(key) is not None:
            out[key.removeprefix("pii_people_excess_")] = report[key]
    return out


def _probe_people_by_column(g: Any) -> dict[str, Any]:
    """:func:`probe_people` from the probe stage's ``user_id`` (the person), ``member`` (1 member,
    0 control, NaN unknown) and ``third_party`` columns — numbers and keyed ids, so a redacted run
    counts the same people."""
    g = g.assign(person=g["user_id"].astype(str))
    hits = g[g["exact_match"].fillna(False).astype(bool)]
    by_type = {str(t): int(part["person"].nunique()) for t, part in hits.groupby("target_type")}
    status = g.groupby("person")["member"].first()
    hit_people = set(hits["person"])
    out: dict[str, Any] = {
        "people": len(hit_people),
        "by_type": dict(sorted(by_type.items())),
        "probed": int(len(status)),
    }
    known = bool(status.notna().any())
    groups = (("members", status == 1), ("controls", status == 0), ("unknown", status.isna()))
    for name, mask in groups:
        if name != "unknown" and not known:
            continue  # no held-out people: nobody is a member or a control, and no line may say so
        who = set(status[mask].index)
        out[name], out[f"{name}_probed"] = len(who & hit_people), len(who)
    third = (
        g["third_party"].fillna(False).astype(bool)
        if "third_party" in g.columns
        else g["member"].isna() & False
    )
    out["third_parties_probed"] = int(g.loc[third, "person"].nunique())
    out["subject_rows_probed"] = int(g["subject_id"].nunique())
    out["membership"] = "held_out" if known else "unknown"
    return out


def people_affected(
    run: Path, model: dict[str, Any], user_of: dict[str, str], controls: set[str]
) -> dict[str, Any]:
    """``people_affected`` of one model: from the leakage report's ``pii_users`` and from probing."""
    out: dict[str, Any] = {}
    report = _stage_summary(run, model, "report")
    if report is not None and report.get("pii_users") is not None:
        out["leaked_pii"] = leaked_pii_people(report)
    rel = (model.get("stages") or {}).get("probe")
    gen = None if rel is None else run / rel / "generations.parquet"
    if gen is not None and gen.exists():
        import pandas as pd

        out["probing"] = probe_people(pd.read_parquet(gen), user_of, controls)
    return out


def release_summary(
    cfg: AuditConfig,
    run: Path,
    models: dict[str, dict[str, Any]],
    subjects_of: Callable[[str], tuple[dict[str, str], set[str]]],
    probe_levels: dict[str, int] | None = None,
) -> dict[str, Any]:
    """``summary["release"]``: per model, ``people_affected`` and ``not_run``. ``subjects_of(model
    name)`` gives the probed subjects' users and the model's held-out users (for members vs controls);
    ``probe_levels`` the subjects eligible at each probing level (to name the level that has them)."""
    out: dict[str, Any] = {}
    for name, m in models.items():
        user_of, controls = subjects_of(name)
        out[name] = {
            "people_affected": people_affected(run, m, user_of, controls),
            "not_run": not_run(cfg, run, m, probe_levels),
        }
    return {"models": out}
