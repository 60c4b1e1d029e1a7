"""One probing run (paper 003 §4.2): likelihoods vs null, generation, summary with KART scenario."""

# long: the run, its two passes and the level choice (choose_level, which run_probe applies when the
# settings name no level) read the same settings and loaded inputs; split by pass when it grows

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from lmleak.models.base import Capability, scoring_convention
from lmleak.probe.blackbox import generate_probes
from lmleak.probe.figures import write_figures
from lmleak.probe.likelihood import null_permutation, target_likelihoods
from lmleak.probe.metrics import (
    best_per_pair,
    fisher_greater_p,
    gamma_curve,
    gamma_lt_k,
    mann_whitney_greater_p,
    wilcoxon_p,
)
from lmleak.probe.nulls import made_up_subjects, made_up_summary, name_guess_baseline
from lmleak.probe.people import (
    CONTROL,
    MEMBER,
    THIRD_PARTY_PREFIX,
    UNKNOWN,
    add_group_intervals,
    exact_match_by_shape,
    exact_match_excess,
    exact_match_intervals,
    membership_of,
    people_counts,
)
from lmleak.probe.settings import DEFAULT_TARGETS, ProbeSettings
from lmleak.probe.templates import LEVELS, Probe, build_probes, max_new_tokens, templates_and_budgets
from lmleak.runs import secure_dir, write_parquet, write_summary, writes_run
from lmleak.scenarios import scenario_record
from lmleak.shards import ModelWork, ShardEngine, Shipped, fingerprint_of, run_rows
from lmleak.words import plural


def collect_probes(
    subjects: list[dict[str, Any]],
    target_type: str,
    *,
    level: str,
    k: int | None,
    templates: dict | None = None,
) -> list[Probe]:
    out: list[Probe] = []
    for s in subjects:
        out.extend(build_probes(s, target_type, level=level, k=k, templates=templates))
    return out


#: the association levels in the order a level is picked when none is given: the paper's triplet,
#: then the level that asks for fewer items, then the one that asks for more
LEVEL_ORDER = ("triplet", "twin", "quadruplet")


def eligible_by_level(
    subjects: list[dict[str, Any]], targets: tuple[str, ...] = DEFAULT_TARGETS
) -> dict[str, int]:
    """How many subjects each association level can probe (at least one target type with the items
    the level needs beside the name: 0 more at twin, 1 at triplet, 2 at quadruplet).

    Example:
        >>> eligible_by_level([{"name": "Ann", "email": "a@example.org", "phone": "201-555-0100"},
        ...                    {"name": "Bob", "email": "b@example.org"}])
        {'triplet': 1, 'twin': 2, 'quadruplet': 0}
    """
    return {
        level: sum(1 for s in subjects if any(build_probes(s, t, level=level, k=1) for t in targets))
        for level in LEVEL_ORDER
        if level in LEVELS
    }


def choose_level(
    subjects: list[dict[str, Any]], level: str | None, targets: tuple[str, ...] = DEFAULT_TARGETS
) -> tuple[str, str | None]:
    """The level to probe at and a warning (None when there is nothing to say).

    ``level`` None (left unset): triplet when any subject has one, else the first level of
    :data:`LEVEL_ORDER` that has eligible subjects, said in the warning. A level given with no eligible
    subject is kept (the user chose it) and the warning names the level that has them.

    Example:
        >>> pairs = [{"name": "Ann", "email": "a@example.org"}, {"name": "Bob", "email": "b@example.org"}]
        >>> choose_level(pairs, None)[0], choose_level(pairs, "triplet")[1][:49]
        ('twin', 'probe level triplet: no subject has the items it ')
    """
    counts = eligible_by_level(subjects, targets)
    have = [lv for lv in LEVEL_ORDER if counts.get(lv)]
    needs = "a name and at least one of phone, email, address"
    if level is None:
        if not have:
            return "triplet", f"probe level: no subject has the items any level needs ({needs})"
        if have[0] != "triplet":
            return have[0], (
                f"probe level: no subject has the items triplet needs; probing at {have[0]}, "
                f"where {counts[have[0]]} of {plural(len(subjects), 'subject')} {'is' if counts[have[0]] == 1 else 'are'} eligible"
            )
        return "triplet", None
    if counts.get(level):
        return level, None
    where = (
        f"{have[0]} has {counts[have[0]]} eligible subjects: set the level to {have[0]}"
        if have
        else f"no level has any ({needs})"
    )
    return (
        level,
        f"probe level {level}: no subject has the items it needs, so nothing will be probed; {where}",
    )


def null_targets(probes: list[Probe], seed: int = 0) -> list[str]:
    """Each probe's null target: the same-type PII of another subject, by a seeded derangement over
    the subjects of that target type (relationship:father, ... deranged separately)."""
    null_of: dict[tuple[str, str], str] = {}
    for tt in sorted({p.target_type for p in probes}):
        target_of = {p.subject_id: p.target for p in probes if p.target_type == tt}
        subjects = sorted(target_of)
        perm = null_permutation(len(subjects), seed)
        null_of.update({(tt, s): target_of[subjects[perm[i]]] for i, s in enumerate(subjects)})
    return [null_of[(p.target_type, p.subject_id)] for p in probes]


def null_target_sets(probes: list[Probe], seed: int = 0) -> list[tuple[str, ...]]:
    """Each probe's null targets, as many as its own targets: a person with ``m`` addresses (issue 28,
    ``emails``) is scored on each and counts by the best, so the null is the best of ``m`` other
    people's values, not one (a maximum of ``m`` against a single value would favour the person for
    having addresses, not for being known). The first null is :func:`null_targets`' (one value: the
    same as before); the others are further subjects of that target type, drawn without
    replacement (seeded; fewer when there are too few subjects).

    Example:
        >>> from lmleak.probe.templates import Probe
        >>> ps = [Probe("a", "email", 0, "", "", "a@x.org", (), ("a2@x.org",)),
        ...       Probe("b", "email", 0, "", "", "b@x.org", ()), Probe("c", "email", 0, "", "", "c@x.org", ())]
        >>> [len(n) for n in null_target_sets(ps)], "a@x.org" in null_target_sets(ps)[0]
        ([2, 1, 1], False)
    """
    first = null_targets(probes, seed)
    null_of = {(p.target_type, p.subject_id): n for p, n in zip(probes, first, strict=True)}
    extra: dict[tuple[str, str], tuple[str, ...]] = {}
    for tt in sorted({p.target_type for p in probes}):
        target_of = {p.subject_id: p.target for p in probes if p.target_type == tt}
        own = {p.subject_id: p.targets for p in probes if p.target_type == tt}
        names = sorted(target_of)
        rng = np.random.default_rng([seed, 28])
        for sid in names:  # a fixed order: the draws do not depend on the probes' order
            if len(own[sid]) < 2:
                continue
            taken = {null_of[(tt, sid)], *own[sid]}  # neither the first null again nor their own value
            others = [o for o in names if o != sid and target_of[o] not in taken]
            drawn = rng.permutation(len(others))[: len(own[sid]) - 1]
            extra[(tt, sid)] = tuple(target_of[others[j]] for j in drawn)
    return [(n, *extra.get((p.target_type, p.subject_id), ())) for p, n in zip(probes, first, strict=True)]


def _score_probes(pairs: list[tuple[Probe, tuple[str, ...]]], *, model: Any) -> list[dict[str, Any]]:
    """Eq. 2 / Eq. 4 of every target of each probe and of its nulls, each metric's best (maximum)
    kept: ``likelihood`` of a person with several addresses is that of the best one
    (``best_target``), against the best of as many other people's (:func:`null_target_sets`)."""
    prompts: list[str] = []
    texts: list[str] = []
    spans = []  # per probe: where its own targets start, where its nulls start, where they end
    for p, nulls in pairs:
        start = len(texts)
        texts += [*p.targets, *nulls]
        prompts += [p.prompt] * (len(p.targets) + len(nulls))
        spans.append((start, start + len(p.targets), len(texts)))
    lik, norm, lp = target_likelihoods(model, prompts, texts)
    rows = []
    for (p, nulls), (a, b, c) in zip(pairs, spans, strict=True):
        best = a + int(np.argmax(lp[a:b]))
        rows.append(
            {
                "subject_id": p.subject_id,
                "target_type": p.target_type,
                "template": p.template_index,
                "prompt": p.prompt,
                "target": p.target,
                "likelihood": float(lik[a:b].max()),
                "normalized_likelihood": float(norm[a:b].max()),
                "log_likelihood": float(lp[best]),
                "null_target": nulls[0],
                "null_likelihood": float(lik[b:c].max()),
                "null_normalized_likelihood": float(norm[b:c].max()),
                "null_log_likelihood": float(lp[b:c].max()),
                "best_target": texts[best],
                "targets_scored": b - a,
            }
        )
    return rows


def likelihood_rows(
    model: Any,
    probes: list[Probe],
    *,
    seed: int = 0,
    work_dir: str | Path | None = None,
    shard_size: int = 64,
    engine: ShardEngine | None = None,
    model_spec: Any = None,
) -> list[dict[str, Any]]:
    """Eq. 2 / Eq. 4 for every probe, and for its null targets (:func:`null_target_sets`), scored
    with the same prompt; a person with several addresses by the best one (:func:`_score_probes`).
    With ``work_dir``, in resumable shards of ``shard_size`` probes there, on ``engine`` (Ray actors
    load ``model_spec``, or receive ``model`` pickled when it is None)."""
    pairs = list(zip(probes, null_target_sets(probes, seed), strict=True))
    if work_dir is None:
        return _score_probes(pairs, model=model)
    fp = fingerprint_of("probe-likelihood", getattr(model, "name", ""), type(model).__name__, pairs)
    factory = ModelWork(_score_probes, {"model": model_spec or Shipped(model)})
    return run_rows(
        pairs,
        lambda chunk: _score_probes(chunk, model=model),
        work_dir,
        fingerprint=fp,
        shard_size=shard_size,
        description="probing (likelihood)",
        engine=engine,
        factory=factory,
    )


#: The likelihood rows' columns that :func:`summarize_likelihoods` averages, in its keys' order.
_LIKELIHOOD_COLUMNS = (
    "likelihood",
    "null_likelihood",
    "log_likelihood",
    "null_log_likelihood",
    "normalized_likelihood",
    "null_normalized_likelihood",
)


def summarize_likelihoods(df: Any) -> dict[str, Any]:
    """Per subject the maximum over templates (A.3), then mean target vs null, Wilcoxon p, γ<k."""
    g = df.groupby("subject_id")[list(_LIKELIHOOD_COLUMNS)].max()
    lik = g["likelihood"].to_numpy()
    return {
        "subjects": int(len(g)),
        **{f"mean_{c}": float(g[c].mean()) for c in _LIKELIHOOD_COLUMNS},
        "wilcoxon_p": wilcoxon_p(g["likelihood"].to_numpy(), g["null_likelihood"].to_numpy()),
        "wilcoxon_p_log": wilcoxon_p(g["log_likelihood"].to_numpy(), g["null_log_likelihood"].to_numpy()),
        "gamma": {f"<{k}": gamma_lt_k(lik, k) for k in (10, 100, 1000)},
        "gamma_curve": gamma_curve(lik),
        "expected_queries_median": float(np.median(1.0 / np.maximum(lik, 1e-300))),
    }


#: The generation rows' boolean metrics that :func:`summarize_generations` turns into rates.
_GENERATION_METRICS = frozenset(
    "exact_match email_id area_code first_7 first_8 first_9 edit_le_1 edit_le_2 edit_le_3".split()
)


def summarize_generations(df: Any) -> dict[str, Any]:
    """Exact-match rate per subject (any template / sample matched, A.3 'maximum'), string metrics alike."""
    cols = [c for c in df.columns if c in _GENERATION_METRICS]
    g = df.groupby("subject_id")[cols].max()
    out = {"exact_match_rate": float(g["exact_match"].mean()), "generated": int(len(df))}
    out.update(
        {f"{c}_rate": float(g[c].fillna(False).astype(bool).mean()) for c in cols if c != "exact_match"}
    )
    return out


def overall_metrics(lrows: list[dict[str, Any]], grows: list[dict[str, Any]]) -> dict[str, Any]:
    """Top-level ``pii_exact_match`` (share of (subject, target type) pairs reproduced exactly by any
    template, §4.2), ``pii_likelihood_ratio`` (mean target / mean null likelihood over all
    (subject, target type) pairs, max over templates as in A.3) and ``pii_likelihood_ratio_geomean``
    (exp of the mean of log target − log null over the same pairs: the typical factor, which the few
    most likely items — e-mails at 1e-4 beside phones at 1e-14 — cannot dominate as they dominate
    the ratio of means); None when not measured.

    Example:
        >>> rows = [{"subject_id": "a", "target_type": "phone", "likelihood": 0.2, "null_likelihood": 0.1,
        ...          "log_likelihood": -1.6, "null_log_likelihood": -2.3},
        ...         {"subject_id": "a", "target_type": "email", "likelihood": 0.4, "null_likelihood": 0.8,
        ...          "log_likelihood": -0.9, "null_log_likelihood": -0.2}]
        >>> m = overall_metrics(rows, [{"subject_id": "a", "target_type": "phone", "exact_match": True}])
        >>> m["pii_exact_match"], round(m["pii_likelihood_ratio"], 3), round(m["pii_likelihood_ratio_geomean"], 6)
        (1.0, 0.667, 1.0)
    """
    import math

    import pandas as pd

    out: dict[str, Any] = {
        "pii_exact_match": None,
        "pii_likelihood_ratio": None,
        "pii_likelihood_ratio_geomean": None,
    }
    if grows:
        out["pii_exact_match"] = float(best_per_pair(grows, "exact_match").astype(bool).mean())
    if lrows:
        g = best_per_pair(lrows, ["likelihood", "null_likelihood"])
        null = float(g["null_likelihood"].mean())
        out["pii_likelihood_ratio"] = float(g["likelihood"].mean()) / null if null > 0 else None
        frame = pd.DataFrame(lrows)
        if "log_likelihood" in frame:
            lg = best_per_pair(frame, ["log_likelihood", "null_log_likelihood"])
            out["pii_likelihood_ratio_geomean"] = math.exp(
                float((lg["log_likelihood"] - lg["null_log_likelihood"]).mean())
            )
    return out


def compare_groups(
    lrows: list[dict[str, Any]],
    grows: list[dict[str, Any]],
    controls: set[str],
    subject_user: dict[str, str],
    unknown: Collection[str] = (),
) -> dict[str, Any]:
    """Members vs controls, side by side (issue 14): controls are subjects whose user the model never
    saw (``holdout.json``). Per (subject, target type) pair, maximum over templates as in A.3:

    - exact match rate per group, and a one-sided Fisher exact test that members' rate is higher;
    - the log likelihood ratio target - null per group, and a one-sided Mann-Whitney U test that
      members' ratios are higher (the ratio, not the raw likelihood, so that PII that is easy to
      guess for anyone does not decide the comparison);
    - the Wilcoxon target-vs-null test within each group (raw likelihoods, and log beside it).

    A pooled test can hide a strong member effect under controls that show none; these do not.
    Subjects in ``unknown`` (third parties without a user id of their own, issue 32) are in neither.
    """
    unknown = set(unknown)

    def group_of(sid: str) -> str:
        if sid in unknown:
            return "unknown"
        return "controls" if subject_user.get(sid, sid) in controls else "members"

    out: dict[str, Any] = {"members": {}, "controls": {}, "tests": {}}
    if grows:
        _compare_exact_match(grows, group_of, out)
    if lrows:
        _compare_likelihoods(lrows, group_of, out)
    return out


def _compare_exact_match(
    grows: list[dict[str, Any]], group_of: Callable[[str], str], out: dict[str, Any]
) -> None:
    """Exact-match rate per group and the one-sided Fisher test, written into ``out``."""
    g = best_per_pair(grows, "exact_match").astype(bool).reset_index()
    g["group"] = [group_of(s) for s in g["subject_id"]]
    for name in ("members", "controls"):
        part = g[g["group"] == name]
        out[name].update(
            {
                "pairs_generated": int(len(part)),
                "exact_match_hits": int(part["exact_match"].sum()),
                "exact_match_rate": float(part["exact_match"].mean()) if len(part) else None,
            }
        )
    m, c = out["members"], out["controls"]
    out["tests"]["exact_match_fisher_p"] = fisher_greater_p(
        m["exact_match_hits"], m["pairs_generated"], c["exact_match_hits"], c["pairs_generated"]
    )


def _compare_likelihoods(
    lrows: list[dict[str, Any]], group_of: Callable[[str], str], out: dict[str, Any]
) -> None:
    """Log likelihood ratio and Wilcoxon tests per group, and the Mann-Whitney test, into ``out``."""
    lk = best_per_pair(
        lrows, ["likelihood", "null_likelihood", "log_likelihood", "null_log_likelihood"]
    ).reset_index()
    lk["group"] = [group_of(s) for s in lk["subject_id"]]
    lk["log_ratio"] = lk["log_likelihood"] - lk["null_log_likelihood"]
    for name in ("members", "controls"):
        part = lk[lk["group"] == name]
        out[name].update(
            {
                "pairs_scored": int(len(part)),
                "mean_log_likelihood_ratio": float(part["log_ratio"].mean()) if len(part) else None,
                "wilcoxon_p": wilcoxon_p(part["likelihood"], part["null_likelihood"]),
                "wilcoxon_p_log": wilcoxon_p(part["log_likelihood"], part["null_log_likelihood"]),
            }
        )
    out["tests"]["log_ratio_mann_whitney_p"] = mann_whitney_greater_p(
        lk.loc[lk["group"] == "members", "log_ratio"], lk.loc[lk["group"] == "controls", "log_ratio"]
    )


def gamma_frame(per_type: dict[str, Any]) -> Any:
    """The γ<k curves of every target type as a long table ``target_type, k, gamma`` (Fig. 3c)."""
    import pandas as pd

    rows = [
        {"target_type": t, "k": k, "gamma": g}
        for t, v in per_type.items()
        for k, g in v.get("gamma_curve", [])
    ]
    return pd.DataFrame(rows, columns=["target_type", "k", "gamma"])


def scenario(target: str, known: tuple[str, ...], access: str) -> dict[str, Any]:
    """KART record: K = the items in the prompt, T = the target type (paper 004)."""
    tmap = {
        "name": "full_name",
        "phone": "phone_number",
        "email": "email",
        "address": "address",
        "university": "university",
        "relationship": "relatives",
    }
    try:
        return scenario_record(
            attack="propile_probing",
            knowledge=tuple(tmap.get(x, x) for x in known),
            access=access,
            target=tmap.get(target.split(":")[0], target),
            notes="paper 003 black-box probing",
        )
    except Exception as e:  # an unknown category name in the catalogue: keep the same shape by hand
        return {
            "attack": "propile_probing",
            "knowledge": list(known),
            "anonymization": "identity",
            "resources": [],
            "access": access,
            "target": [target],
            "notes": f"unvalidated: {e}",
        }


@writes_run("out_dir")
# long: 30 of its lines are the docstring (what the settings and the loaded inputs mean)
def run_probe(
    model: Any,
    subjects: list[dict[str, Any]],
    out_dir: str | Path | None,
    settings: ProbeSettings = ProbeSettings(),  # noqa: B008 - frozen, so shared safely
    *,
    templates: dict | None = None,
    budgets: dict[str, int] | None = None,
    controls: Collection[str] | None = None,
    engine: ShardEngine | None = None,
    model_spec: Any = None,
) -> dict[str, Any]:
    """Probe every subject for every target type; write likelihoods/generations parquet + summary.json.

    ``settings`` (:class:`~lmleak.probe.settings.ProbeSettings`) says what is probed and how: its
    ``limit`` first subjects; ``level`` None picks the level the subjects have
    (:func:`choose_level`, silently: a caller that warns calls it first); ``likelihood=None``
    scores when the model grants SCORE and skips otherwise (``True`` on a generation-only model
    raises :class:`CapabilityError`). ``templates`` and ``budgets``, the loaded user templates and
    generation budgets, default to those of the settings' ``template_file`` and ``max_new_tokens``
    (:func:`~lmleak.probe.templates.templates_and_budgets`) when neither is given.

    ``controls``: user ids the model never saw (``holdout.json``); subjects of those users are
    reported apart, as controls, beside the members (:func:`compare_groups`, summary key
    ``groups``). ``engine`` of kind ``"ray"`` shards the likelihood and generation passes over Ray
    actors (each loads ``model_spec``, or receives ``model`` pickled when it is None); the rows are
    the local engine's (same shards, same order). It needs ``out_dir`` (the shards live in
    ``out_dir/passes``).

    Issue 32: the probed people are counted by person, not by subject row (``people``,
    :func:`lmleak.probe.people.people_counts`; a third party is never a member); without controls
    every person's membership is ``unknown``. ``made_up`` (None: when no held-out control is probed)
    probes one made-up person per subject the same way (``made_up_controls``,
    :mod:`lmleak.probe.nulls`); ``pii_exact_match_excess`` is members' exact-match rate over
    people minus the controls' (else the made-up people's), with its interval; e-mail probes get the
    guess-from-the-name baseline (``name_guess_baseline``).
    """
    if engine is not None and engine.engine == "ray" and out_dir is None:
        raise ValueError("engine 'ray' needs an out_dir for its shards")
    subjects = subjects[: settings.limit]
    if templates is None and budgets is None:
        templates, budgets = templates_and_budgets(settings.template_file, settings.max_new_tokens)
    caps: frozenset[Any] = getattr(model, "capabilities", frozenset())
    s = replace(
        settings,
        level=settings.level or choose_level(subjects, None, settings.targets)[0],
        likelihood=Capability.SCORE in caps if settings.likelihood is None else settings.likelihood,
    )
    loaded = _Loaded(templates, budgets, engine, model_spec)
    passes = None if out_dir is None else Path(out_dir) / "passes"
    lrows, grows, per_type = _probe_targets(model, subjects, s, loaded, passes)
    summary: dict[str, Any] = {
        "attack": "propile",
        "model": getattr(model, "name", str(model)),
        **scoring_convention(model),
        "level": s.level,
        "templates": s.templates,
        "beams": s.beams,
        "samples": s.samples,
        "subjects": len(subjects),
        "max_new_tokens": {t: max_new_tokens(t, budgets) for t in s.targets},
        "targets": per_type,
    }
    summary["scenario"] = next((v["scenario"] for v in per_type.values() if "scenario" in v), None)
    summary.update(overall_metrics(lrows, grows))
    summary.update(exact_match_intervals(grows, subjects, controls))
    if controls:
        summary["groups"] = _groups_summary(lrows, grows, set(controls), subjects)
        add_group_intervals(summary["groups"], summary.pop("exact_match_ci_by_group", {}))
    if grows:  # issue 28: a pooled rate can hide the names the model leaks (or the probe misses)
        summary["by_shape"] = exact_match_by_shape(grows, subjects, set(controls or ()))
    made_rows = _people_and_nulls(summary, model, subjects, (lrows, grows), controls, s, loaded, passes)
    if out_dir is not None:  # generations first: the summary is written last
        _write_people_columns(secure_dir(out_dir), grows, membership_of(subjects, controls), made_rows)
        _write_probe_run(out_dir, lrows, grows, per_type, summary, figures=s.figures, model=model)
    return summary


class _Loaded(NamedTuple):
    """What :func:`run_probe` was given beside its settings, passed on to every pass."""

    templates: dict | None
    budgets: dict[str, int] | None
    engine: ShardEngine | None
    model_spec: Any


def _people_and_nulls(
    summary: dict[str, Any],
    model: Any,
    subjects: list[dict[str, Any]],
    rows: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    controls: Collection[str] | None,
    s: ProbeSettings,
    loaded: _Loaded,
    passes: Path | None,
) -> list[dict[str, Any]] | None:
    """Issue 32 into ``summary``: the people counts, the made-up people's pass (when asked, or by
    default when no control was probed), the exact-match excess and the name-guess baseline.
    Returns the made-up people's generation rows (None without that pass)."""
    lrows, grows = rows
    who = membership_of(subjects, controls)
    people = people_counts(subjects, {str(r["subject_id"]) for r in (*lrows, *grows)}, controls)
    summary["people"] = people
    summary["people_probed"] = people["people_probed"]
    made_lrows: list[dict[str, Any]] = []
    made_grows: list[dict[str, Any]] | None = None
    if (s.made_up is None and people["controls"] == 0 and (lrows or grows)) or s.made_up:
        fake = made_up_subjects(subjects, seed=s.seed)
        where = None if passes is None else passes / "made-up"
        made_lrows, made_grows, _ = _probe_targets(model, fake, s, loaded, where)
        summary["made_up_controls"] = made_up_summary(
            overall_metrics(lrows, grows),
            overall_metrics(made_lrows, made_grows),
            lrows,
            made_lrows,
            len({str(r["subject_id"]) for r in (*made_lrows, *made_grows)}),  # the made-up people probed
        )
        for key in ("pii_likelihood_ratio", "pii_exact_match"):  # beside the headline's own, never alone
            summary[f"{key}_made_up"] = summary["made_up_controls"][key]
    if grows:
        summary.update(exact_match_excess(grows, who, made_up_rows=made_grows))
        if "email" in s.targets:
            summary["name_guess_baseline"] = name_guess_baseline(subjects, grows)
    return made_grows


def _write_people_columns(
    out: Path,
    grows: list[dict[str, Any]],
    who: dict[str, tuple[str, str]],
    made_grows: list[dict[str, Any]] | None,
) -> None:
    """``generations.parquet`` with each row's person (``user_id``: :func:`~lmleak.probe.people.person_id`,
    ``third-party:<subject_id>`` for a third party), ``third_party``, ``membership`` (member, control,
    unknown) and ``member`` (1, 0, NaN: the same as a number, which a redacted run keeps); the
    made-up people's rows in ``made_up_generations.parquet``."""
    import pandas as pd

    if grows:
        df = pd.DataFrame(grows)
        ids = [who.get(str(s), (str(s), UNKNOWN)) for s in df["subject_id"]]
        df["user_id"] = [p for p, _ in ids]
        df["third_party"] = [p.startswith(THIRD_PARTY_PREFIX) for p, _ in ids]
        df["membership"] = [m for _, m in ids]
        df["member"] = [{MEMBER: 1.0, CONTROL: 0.0}.get(m, float("nan")) for _, m in ids]
        write_parquet(df, out / "generations.parquet")
    if made_grows:
        write_parquet(pd.DataFrame(made_grows), out / "made_up_generations.parquet")


def _probe_targets(
    model: Any, subjects: list[dict[str, Any]], s: ProbeSettings, loaded: _Loaded, passes: Path | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """The likelihood rows, generation rows and per-type summary entries of every target type
    (``s``: the settings with the level and ``likelihood`` resolved)."""
    lrows: list[dict[str, Any]] = []
    grows: list[dict[str, Any]] = []
    per_type: dict[str, Any] = {}
    shards = {"seed": s.seed, "engine": loaded.engine, "model_spec": loaded.model_spec}
    for t in s.targets:
        assert s.level is not None  # resolved by run_probe
        probes = collect_probes(subjects, t, level=s.level, k=s.templates, templates=loaded.templates)
        if not probes:
            per_type[t] = {"subjects": 0, "note": f"no subject has the items needed at {s.level} level"}
            continue
        entry: dict[str, Any] = {
            "prompts": len(probes),
            "scenario": scenario(t, probes[0].known, "scores" if s.likelihood else "generation"),
        }
        if s.likelihood:
            lrows.extend(_likelihood_pass(model, probes, t, entry, passes, **shards))
        if s.generate:
            grows.extend(_generation_pass(model, probes, t, entry, passes, s, loaded))
        per_type[t] = entry
    return lrows, grows, per_type


def _likelihood_pass(
    model: Any,
    probes: list[Probe],
    t: str,
    entry: dict[str, Any],
    passes: Path | None,
    **opts: Any,
) -> list[dict[str, Any]]:
    """The likelihood rows of one target type; their summary goes into ``entry``."""
    import pandas as pd

    rows = likelihood_rows(
        model, probes, work_dir=None if passes is None else passes / f"likelihood-{t}", **opts
    )
    df = pd.DataFrame(rows)
    several = int(df.loc[df["targets_scored"] > 1, "subject_id"].nunique())
    if several:  # issue 28: say how a person with several addresses counts
        entry["subjects_with_several_targets"] = several
        entry["several_targets_note"] = (
            f"{plural(several, 'person')} with several {t} values: each value is scored and the best one "
            "counts for the person (likelihood: the maximum over their values), compared with the best of "
            "as many other people's values (the null); exact match counts a hit on any of them"
        )
    if t == "relationship":  # one null derangement per relation; summary over all relation pairs too
        entry["by_relation"] = {tt: summarize_likelihoods(sub) for tt, sub in df.groupby("target_type")}
        df = df.assign(subject_id=df["subject_id"] + "|" + df["target_type"])
    entry.update(summarize_likelihoods(df))
    return rows


def _generation_pass(
    model: Any,
    probes: list[Probe],
    t: str,
    entry: dict[str, Any],
    passes: Path | None,
    s: ProbeSettings,
    loaded: _Loaded,
) -> list[dict[str, Any]]:
    """The generation rows of one target type; their summary goes into ``entry``."""
    import pandas as pd

    rows = generate_probes(
        model,
        probes,
        s,
        budgets=loaded.budgets,
        work_dir=None if passes is None else passes / f"generate-{t}",
        engine=loaded.engine,
        model_spec=loaded.model_spec,
    )
    entry.update(summarize_generations(pd.DataFrame(rows)))
    return rows


def _groups_summary(
    lrows: list[dict[str, Any]],
    grows: list[dict[str, Any]],
    controls: set[str],
    subjects: list[dict[str, Any]],
) -> dict[str, Any]:
    """:func:`compare_groups` with each group's ``subjects`` and ``subjects_probed`` (the rates' people)."""
    who = membership_of(subjects, controls)
    subject_user = {sid: pid for sid, (pid, _) in who.items()}
    unknown = {sid for sid, (_, st) in who.items() if st == UNKNOWN}
    groups = compare_groups(lrows, grows, controls, subject_user, unknown)
    probed = {str(r["subject_id"]) for r in (*lrows, *grows)}  # a subject with no probe is in the file only
    for key, ids in (("subjects", set(who)), ("subjects_probed", probed)):
        for name, st in (("members", MEMBER), ("controls", CONTROL)):
            rows = [s for s in ids if who.get(s, (s, UNKNOWN))[1] == st]
            groups[name][key] = len(rows)
            groups[name]["people" if key == "subjects" else "people_probed"] = len({who[s][0] for s in rows})
    return groups


def _write_probe_run(
    out_dir: str | Path,
    lrows: list[dict[str, Any]],
    grows: list[dict[str, Any]],
    per_type: dict[str, Any],
    summary: dict[str, Any],
    *,
    figures: bool,
    model: Any = None,
) -> None:
    """The run directory: likelihoods, figures, γ curve, generations and summary.json (with the
    model's provenance)."""
    import pandas as pd

    out = secure_dir(out_dir)
    if lrows:
        write_parquet(pd.DataFrame(lrows), out / "likelihoods.parquet")
        if figures:
            write_figures(pd.DataFrame(lrows), out)
        write_parquet(gamma_frame(per_type), out / "gamma_curve.parquet")
    write_summary(out, summary, model=model)
