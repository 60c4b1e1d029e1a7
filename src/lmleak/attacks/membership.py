"""Membership inference on texts: individual and group attacks (paper 002 §5.1 and appendix A.4).

The attack of Carlini et al. (2021), as paper 002 uses it: score each candidate text by the
model's perplexity and call the most likely ones members. The evaluation set is balanced (A.4):
N protected secrets/sentences that were in training against N random ones of the same format
that were not, so guessing scores 50 %. The group attack (A.4) classifies groups of 20 texts —
all members or all non-members — by the sum of their perplexities; lmleak's groups are disjoint
(A.4 drew overlapping ones and counted each as an independent negative).

Scores (higher = "more likely a member"; every feature is one column):

- ``perplexity``: ``-PPL`` per token (A.4; Carlini et al. 2021).
- ``zlib``: ``-log(PPL) / zlib entropy`` (Carlini et al. 2021 §6.1: text that is easy to compress
  is likely under any model, so divide it out). zlib entropy = bytes of ``zlib.compress(text)``.
- ``min_k``: mean of the ``int(k·n)`` lowest of the ``n`` token log-probabilities (Shi et al. 2024,
  "Min-K% Prob", as their code computes it; NaN, left out and counted, below one token).
- ``reference``: ``-log(PPL_target) / log(PPL_reference)`` (Carlini et al. 2021 §6.1 "Small"/"Medium"
  calibration against a public model). Per-word perplexities, so models with different tokenizers
  compare on the same text (DESIGN.md).

A group's score is the sum of its members' individual scores; for ``perplexity`` that is minus
the sum of perplexities, the statistic of A.4.

More methods (Min-K%++, lowercase, ReCaLL, neighbourhood, WBC, RMIA), all from one shared pass, live in
:mod:`lmleak.attacks.mia_methods` (pass ``methods=``); the blind baseline that every run reports
beside them in :mod:`lmleak.attacks.blind`. Before scoring, the sets are cleaned and their texts
grouped (:mod:`lmleak.attacks.mia_sets`); after, every number gets its interval over the groups, the
headline is chosen on one half of the users and reported on the other, and a placebo goes beside it
(:mod:`lmleak.attacks.mia_stats`; issue 26, docs/membership.md "Honest numbers"). The texts come
from :mod:`lmleak.attacks.mia_texts` (two files, or a corpus split by a model's held-out users) and
the run's ``summary.json`` from :mod:`lmleak.attacks.mia_summary`; their public names are
importable from here too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lmleak.attacks.blind import blind_baseline
from lmleak.attacks.mia_methods import MethodOptions, parse_methods, score_methods
from lmleak.attacks.mia_methods import min_k_prob as min_k_prob  # re-exported: it moved there
from lmleak.attacks.mia_sets import SHINGLE_CHARS, CleanSets, clean_sets, text_clusters
from lmleak.attacks.mia_settings import MembershipSettings as MembershipSettings  # re-exported
from lmleak.attacks.mia_settings import method_options as method_options  # re-exported
from lmleak.attacks.mia_stats import (
    N_BOOT,
    disjoint_group_sums,
    group_level_metrics,
    metrics_with_intervals,
    placebo_metrics,
    split_half_headline,
)
from lmleak.attacks.mia_summary import MembershipResult as MembershipResult  # re-exported: moved there
from lmleak.attacks.mia_summary import headline_feature as headline_feature  # re-exported
from lmleak.attacks.mia_summary import membership_summary, roc_table
from lmleak.attacks.mia_texts import CANDIDATE_WORDS as CANDIDATE_WORDS  # re-exported: moved there
from lmleak.attacks.mia_texts import MembershipTexts as MembershipTexts  # re-exported
from lmleak.attacks.mia_texts import members_from_holdout as members_from_holdout  # re-exported
from lmleak.attacks.mia_texts import membership_texts
from lmleak.attacks.mia_texts import read_texts as read_texts  # re-exported
from lmleak.attacks.mia_texts import split_by_holdout as split_by_holdout  # re-exported
from lmleak.attacks.mia_texts import split_users_by_holdout as split_users_by_holdout  # re-exported
from lmleak.attacks.roc import RocCurve, plot_roc, roc_curve
from lmleak.attacks.samia import samia_cost
from lmleak.errors import DataFileError
from lmleak.ledger.ledger import ModelSpec
from lmleak.models.adapters import BASE, recorded_base
from lmleak.models.base import scoring_convention
from lmleak.models.loading import load_model
from lmleak.runs import secure_dir, write_parquet, write_summary, writes_run
from lmleak.shards import ModelWork, ShardEngine, Shipped, fingerprint_of, ray_session, run_rows
from lmleak.words import plural

FEATURES = ("perplexity", "zlib", "min_k", "reference")
SHARD_SIZE = 256  # texts per resumable shard of the scoring pass


def text_scores(
    model: Any, texts: Sequence[str], options: MethodOptions | None = None, *, min_k: float = 0.2
) -> dict[str, np.ndarray]:
    """Per-text statistics and attack scores (see the module docstring), as aligned arrays.

    Returns a dict with ``num_tokens``, ``logprob`` (nats, summed), ``log_ppl`` (per token),
    ``log_ppl_word``, ``zlib_bytes``, ``ref_log_ppl_word`` (NaN without ``options.reference``) and one
    array per method: ``options.methods`` (:mod:`lmleak.attacks.mia_methods`), by default
    :data:`FEATURES` (``reference`` only with a reference model), all from one shared pass.
    """
    opts = options or MethodOptions()
    methods = parse_methods(opts.methods, reference=opts.reference is not None, mlm=opts.mlm is not None)
    return score_methods(model, texts, dataclasses.replace(opts, methods=methods), min_k=min_k)


# long: 28 of its lines are the docstring (the arguments and the result's keys)
def evaluate_membership(
    model: Any,
    members: Sequence[str],
    non_members: Sequence[str],
    settings: MembershipSettings | None = None,
    *,
    options: MethodOptions | None = None,
    groups: tuple[Sequence[str], Sequence[str]] | None = None,
    work_dir: str | Path | None = None,
    engine: Any = None,
    model_specs: dict[str, Any] | None = None,
) -> MembershipResult:
    """Individual and group membership inference on a balanced evaluation set (paper 002 A.4).

    ``settings`` (:class:`~lmleak.attacks.mia_settings.MembershipSettings`) gives the sizes, ``min_k``,
    ``blind``, ``n_boot`` and the seed; ``options`` the loaded methods
    (:func:`~lmleak.attacks.mia_settings.method_options`; its ``reference`` the loaded reference model).
    The two sides are cleaned first (:func:`lmleak.attacks.mia_sets.clean_sets`: repeats and
    near-duplicates kept once, texts on both sides removed, every count in ``sets``). Then
    ``num_per_side`` texts are drawn (seeded) from each side; if a side has fewer, both sides are
    cut to the smaller size so chance stays 50 %. ``group_size=0`` skips the group attack (disjoint
    groups; ``num_groups`` caps their number). With ``work_dir`` the scoring runs in resumable
    shards of :data:`SHARD_SIZE` texts there (:func:`lmleak.shards.run_rows`).

    ``groups`` (the user of each member and of each non-member, aligned with them) are the units
    of every interval, the blind baseline's folds, the split-half headline and the placebo; without
    them the texts are grouped by shared PII values and near-duplication
    (:func:`lmleak.attacks.mia_sets.text_clusters`). Every AUC and reported TPR gets a 95 % cluster
    bootstrap interval of ``n_boot`` replicates (:mod:`lmleak.attacks.mia_stats`).

    ``options`` picks the methods (:class:`~lmleak.attacks.mia_methods.MethodOptions`); ``recall``
    without a prefix takes ``options.recall_shots`` non-members as its prefix and leaves them out
    of the evaluation. ``blind`` adds the text-only baseline (:mod:`lmleak.attacks.blind`) and its
    out-of-fold scores as column ``blind``. When the split is by user, each text's user is the
    scores table's ``user_id`` column (the audit's users.parquet averages a user's scores). ``engine`` (a :class:`lmleak.shards.ShardEngine`) of kind
    ``"ray"`` scores the shards on Ray actors, which load ``model_specs["model"]`` / ``["reference"]``.
    """
    import pandas as pd

    st = settings or MembershipSettings()
    num_per_side, group_size, num_groups, min_k = st.num_per_side, st.group_size, st.num_groups, st.min_k
    seed, blind, n_boot = st.seed, st.blind, st.n_boot
    options = options or MethodOptions(seed=seed)
    reference = options.reference
    clean = clean_sets(members, non_members, users=groups)
    mem = clean.members
    opts, non, non_users = _resolve_methods(
        options, clean.non_members, clean.non_member_users, reference=reference, seed=seed
    )
    methods = opts.methods or ()
    n, mem_idx, non_idx = _balanced_draw(len(mem), len(non), num_per_side, seed, clean)
    texts = [mem[i] for i in mem_idx] + [non[i] for i in non_idx]
    labels = np.r_[np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)]
    sc = (
        text_scores(model, texts, opts, min_k=min_k)
        if work_dir is None
        else _sharded_text_scores(
            model, texts, reference, min_k, work_dir, SHARD_SIZE, opts, engine, model_specs
        )
    )
    users = None
    if clean.member_users is not None and non_users is not None:
        users = [clean.member_users[i] for i in mem_idx] + [non_users[i] for i in non_idx]
    text_groups, sets = _text_groups(texts, labels, users, clean)
    bl = blind_baseline(texts, labels, groups=text_groups, seed=seed, n_boot=n_boot) if blind else None
    head = split_half_headline({f: sc[f] for f in methods}, labels, text_groups, seed=seed, n_boot=n_boot)
    table = pd.DataFrame(
        {
            "text": texts,
            "member": labels,
            "group": text_groups,
            **sc,
            **({"blind": bl.scores} if bl is not None else {}),
        }
    )
    if users is not None:  # each text's user: the audit's users.parquet averages a user's scores
        table["user_id"] = users
    rows, curves = _attack_metrics(
        sc, labels, text_groups, list(methods), group_size, num_groups=num_groups, seed=seed, n_boot=n_boot
    )
    placebo = {f: placebo_metrics(sc[f], labels, text_groups, seed=seed, n_boot=n_boot) for f in methods}
    return MembershipResult(
        table,
        pd.DataFrame(rows),
        curves,
        n,
        group_size,
        bl,
        methods,
        sets,
        text_groups,
        head,
        placebo,
        n_boot,
    )


def _text_groups(
    texts: list[str], labels: np.ndarray, users: list[str] | None, clean: CleanSets
) -> tuple[list[str], dict[str, Any]]:
    """Each scored text's group — its user, else its cluster (shared PII or near-duplicates) —
    prefixed by its side (``m:`` / ``n:``), and the ``sets`` record of the summary."""
    sets: dict[str, Any] = {k: v.to_dict() for k, v in clean.counts.items()}
    if users is not None:
        raw: list[Any] = users
        grouping = {"grouping": "user", "grouping_note": "each text's user (the split is by user)"}
    else:
        cl = text_clusters(texts, labels=labels.tolist())
        raw = cl.ids.tolist()
        grouping = {
            "grouping": "pii-or-near-duplicate",
            "grouping_note": (
                f"users unknown: texts sharing an identifying PII value or near-duplicates are one group; "
                f"{cl.linked_by_pii} of {len(texts)} texts share a PII value with another, the largest "
                f"group holds {cl.largest}"
                + (
                    f"; {cl.ignored_values} PII values on both sides link nothing"
                    if cl.ignored_values
                    else ""
                )
                + (
                    "; no two texts are linked, so each text is its own group"
                    if cl.num_clusters == len(texts)
                    else ""
                )
            ),
        }
    keys = [f"{'m' if y else 'n'}:{g}" for y, g in zip(labels.tolist(), raw, strict=True)]
    for name, side in (("members", 1), ("non_members", 0)):
        sets[name]["used"] = int((labels == side).sum())
        sets[name]["groups"] = len({k for k, y in zip(keys, labels.tolist(), strict=True) if y == side})
    sets.update(
        grouping,
        near_duplicate_jaccard=clean.threshold,
        near_duplicate_shingles=f"character {SHINGLE_CHARS}-grams of the lowercased, whitespace-normalised text",
    )
    return keys, sets


def _resolve_methods(
    opts: MethodOptions,
    non_members: Sequence[str],
    non_groups: Sequence[str] | None,
    *,
    reference: Any,
    seed: int,
) -> tuple[MethodOptions, Sequence[str], Sequence[str] | None]:
    """The options with their methods resolved; without a ReCaLL prefix, ``recall_shots``
    non-members become it and leave the non-members (and their groups)."""
    methods = parse_methods(opts.methods, reference=reference is not None, mlm=opts.mlm is not None)
    if "recall" in methods and not opts.recall_prefix:
        keep, prefix = _recall_prefix(non_members, opts.recall_shots, seed)
        non_members = [non_members[i] for i in keep]
        non_groups = None if non_groups is None else [non_groups[i] for i in keep]
        opts = dataclasses.replace(opts, recall_prefix=prefix)
    if "rmia" in methods and opts.population is None:  # RMIA's population z: held-out non-members
        keep, population = _held_out(non_members, opts.rmia_population, seed + 11, "RMIA's population")
        non_members = [non_members[i] for i in keep]
        non_groups = None if non_groups is None else [non_groups[i] for i in keep]
        opts = dataclasses.replace(opts, population=tuple(population))
    return dataclasses.replace(opts, methods=methods), non_members, non_groups


def _balanced_draw(
    num_members: int, num_non: int, num_per_side: int, seed: int, clean: CleanSets | None = None
) -> tuple[int, list[Any], list[Any]]:
    """Per side size ``n`` and the sorted indices of the ``n`` members and non-members drawn (seeded)."""
    n = min(num_per_side, num_members, num_non)
    if n < 2:
        detail = (
            ""
            if clean is None
            else " after cleaning ("
            + "; ".join(
                f"{side}: {c.rows} given, {c.distinct} distinct, {c.near_duplicates} near-duplicates, "
                f"{c.removed_overlap} on both sides"
                for side, c in clean.counts.items()
            )
            + ")"
        )
        raise DataFileError(
            f"need at least 2 members and 2 non-members{detail}, got {num_members} and {num_non}",
            hint="give more distinct texts in --members / --non-members",
        )
    rng = np.random.default_rng(seed)
    mem_idx = sorted(rng.choice(num_members, size=n, replace=False))
    non_idx = sorted(rng.choice(num_non, size=n, replace=False))
    return n, mem_idx, non_idx


def _attack_metrics(
    sc: dict[str, np.ndarray],
    labels: np.ndarray,
    groups: list[str],
    features: list[str],
    group_size: int,
    *,
    num_groups: int | None,
    seed: int,
    n_boot: int = N_BOOT,
) -> tuple[list[dict[str, Any]], dict[str, RocCurve]]:
    """Metric rows (with intervals over ``groups``) and ROC curves of each feature, individually and
    (``group_size`` > 0) on disjoint groups of texts. Non-finite scores are left out of their
    feature's row (``num_excluded``)."""
    rows: list[dict[str, Any]] = []
    curves: dict[str, RocCurve] = {}
    for f in features:
        m = metrics_with_intervals(sc[f], labels, groups, n_boot=n_boot, seed=seed)
        rows.append({"level": "individual", "feature": f, **m})
        ok = np.isfinite(sc[f])
        if m["auc"] is not None:
            curves[f"individual/{f}"] = roc_curve(sc[f][ok], labels[ok])
    if group_size:
        for f in features:
            g = group_level_metrics(
                sc[f], labels, groups, group_size, limit=num_groups, seed=seed, n_boot=n_boot
            )
            if g is None:
                continue
            rows.append({"level": f"group{group_size}", "feature": f, **g})
            gs, gy = disjoint_group_sums(
                sc[f], labels, group_size, np.random.default_rng(seed + 1), limit=num_groups
            )
            curves[f"group{group_size}/{f}"] = roc_curve(gs, gy)
    return rows, curves


def _recall_prefix(non_members: Sequence[str], shots: int, seed: int) -> tuple[list[int], str]:
    """ReCaLL's prefix from ``shots`` non-members (seeded), and the indices of the non-members left
    to evaluate."""
    if len(non_members) < shots + 2:
        raise DataFileError(
            f"ReCaLL takes {shots} non-members as its prefix, but there are only {len(non_members)}",
            hint="give more non-members, or a prefix file (--recall-prefix)",
        )
    pick = set(np.random.default_rng(seed + 7).choice(len(non_members), size=shots, replace=False).tolist())
    prefix = "\n".join(non_members[i] for i in sorted(pick)) + "\n"
    return [i for i in range(len(non_members)) if i not in pick], prefix


def _held_out(texts: Sequence[str], count: int, seed: int, what: str) -> tuple[list[int], list[str]]:
    """``count`` texts (seeded) taken out for ``what``, and the indices of the texts left."""
    if len(texts) < count + 2:
        raise DataFileError(
            f"{what} takes {count} non-members, but there are only {len(texts)}",
            hint="give more non-members, or a smaller count (--rmia-population)",
        )
    pick = sorted(np.random.default_rng(seed).choice(len(texts), size=count, replace=False).tolist())
    chosen = set(pick)
    return [i for i in range(len(texts)) if i not in chosen], [texts[i] for i in pick]


def _score_rows(
    chunk: list[str], *, model: Any, reference: Any, min_k: float, options: MethodOptions | None = None
) -> list[dict[str, Any]]:
    # the reference the worker loaded (on Ray, its own copy) is the one the options score with
    sc = text_scores(
        model, chunk, dataclasses.replace(options or MethodOptions(), reference=reference), min_k=min_k
    )
    return [{k: v[i].item() for k, v in sc.items()} for i in range(len(chunk))]


def _sharded_text_scores(
    model: Any,
    texts: list[str],
    reference: Any,
    min_k: float,
    work_dir: str | Path,
    shard_size: int,
    options: MethodOptions | None = None,
    engine: Any = None,
    model_specs: dict[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    def work(chunk: list[str]) -> list[dict[str, Any]]:
        return _score_rows(chunk, model=model, reference=reference, min_k=min_k, options=options)

    specs = model_specs or {}
    loaders = {
        "model": specs.get("model") or Shipped(model),
        "reference": None if reference is None else specs.get("reference") or Shipped(reference),
    }
    fp = fingerprint_of(
        "mia",
        getattr(model, "name", ""),
        type(model).__name__,
        None if reference is None else getattr(reference, "name", ""),
        min_k,
        texts,
        *(() if options is None else (options.record(),)),
    )
    # the workers load their own reference (``loaders``): its weights need not ride in the options
    shipped = None if options is None else dataclasses.replace(options, reference=None)
    rows = run_rows(
        texts,
        work,
        work_dir,
        fingerprint=fp,
        shard_size=shard_size,
        description="membership scores",
        engine=engine,
        factory=ModelWork(_score_rows, loaders, min_k=min_k, options=shipped),
    )
    return {
        k: np.array([r[k] for r in rows], dtype=np.int64 if k == "num_tokens" else np.float64)
        for k in rows[0]
    }


@writes_run("out_dir")
# long: a docstring naming the summary keys; the code is 30 lines
def run_membership(
    model: Any,
    texts: MembershipTexts,
    out_dir: str | Path,
    settings: MembershipSettings | None = None,
    *,
    options: MethodOptions | None = None,
    engine: Any = None,
    model_specs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Membership inference into a run directory: scores, metrics per attack, ROC curves and plot,
    ``summary.json`` (returned). ``texts``: the two sides, where they came from (``source``) and each
    text's user (``groups``; None: texts grouped by shared PII, :func:`evaluate_membership`).

    The headline (``mia_auc``, ``mia_auc_ci``, ``mia_accuracy``, ``mia_method``, alias
    ``mia_attack``) is chosen honestly (``headline_selection``): ``"split-half"`` — the method with
    the best AUC on one half of the users, reported on the other half (:mod:`lmleak.attacks.mia_stats`);
    ``"single-method"`` when one method was scored; ``"fixed"`` (the reference-calibrated attack
    with a reference, else perplexity: :func:`headline_feature`) when too few users to split.
    ``mia_best_raw_auc`` / ``mia_best_raw_method`` is the best AUC on every text, selected after
    the fact. ``mia_auc_by_attack`` (and ``..._ci_by_attack``) holds every attack's AUC;
    ``placebo_auc`` (``_ci``) the headline attack on two halves of the non-members' users;
    ``blind_auc`` (``_ci``; alias ``blind_baseline_auc``) the text-only classifier's grouped
    cross-validated AUC and ``blind_baseline_warning`` the warning when its interval lies above
    chance and the best attack's does not clear it (:mod:`lmleak.attacks.blind`); ``sets`` the
    counts of the cleaned sets and the grouping; ``intervals`` how every ``*_ci`` was computed.
    ``options`` (:func:`~lmleak.attacks.mia_settings.method_options`) the loaded methods and the
    reference model; ``mia_method_scenarios`` holds each method's KART record.
    ``engine``/``model_specs``: where the scoring shards run (see :func:`evaluate_membership`).
    """
    settings = settings or MembershipSettings()
    options = options or MethodOptions(seed=settings.seed)
    members, non_members = texts.members, texts.non_members
    check = getattr(model, "check_tokenizer_on", None)
    if callable(check):  # a local tokenizer of a model behind an API: the server's on the texts scored
        check(iter([*members[:4], *non_members[:4]]))
    run = secure_dir(out_dir)
    res = evaluate_membership(
        model,
        members,
        non_members,
        settings,
        options=options,
        groups=texts.groups,
        work_dir=run / "passes" / "mia-scores",
        engine=engine,
        model_specs=model_specs,
    )
    write_parquet(res.scores, run / "mia_scores.parquet")
    write_parquet(res.metrics, run / "mia_metrics.parquet")
    write_parquet(roc_table(res.curves), run / "roc.parquet")
    name = getattr(model, "name", type(model).__name__)
    plot_roc(res.curves, str(run / "roc.png"), title=f"Membership inference — {name}")
    reference = options.reference
    summary = membership_summary(
        name, res, reference=reference, source=texts.source, group_size=settings.group_size, options=options
    )
    if "samia" in res.methods:  # what the text-only attack cost: requests and generated tokens
        summary.update(samia_cost(res.scores, options.samia))
    summary.update(scoring_convention(model))
    if reference is not None:
        summary.update(scoring_convention(reference, prefix="reference_"))
    write_summary(run, summary, model=model)
    return summary


def membership_of_model(
    model: str,
    out_dir: str | Path,
    settings: MembershipSettings | None = None,
    *,
    texts: MembershipTexts | None = None,
    engine: ShardEngine | None = None,
    echo: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The work of ``lmleak mia``: pick the texts (:func:`membership_texts`: two files, or the corpus
    split by the model's held-out users), load the model spec ``model`` (and the settings'
    ``reference``; ``base``: the fine-tune's recorded base), check and load the methods (:func:`method_options`) and run
    :func:`run_membership`, in a Ray session when ``engine`` is Ray's.

    ``echo`` is called with where the texts came from (when split by the held-out users) and how many
    are scored. ``texts``: the two sides already chosen (a benchmark's), instead of the settings' files
    (``--corpus C --non-members F`` alone: people the model never saw, as in the audit config).
    SaMIA's cost is echoed after the run. Returns the summary written to ``summary.json``.
    """
    say = echo or (lambda message: None)
    s = settings or MembershipSettings()
    if s.reference == BASE:  # a fine-tune's recorded base, as the audit's `public_model: base`
        s = dataclasses.replace(s, reference=recorded_base(model))
    # every input file is read before the model loads: a bad one exits 2 in a second, not after the load
    if s.methods is not None:
        parse_methods(s.methods, reference=s.reference is not None, mlm=s.mlm is not None, field="--methods")
    if texts is None:  # the audit's mia stage builds them with the same function
        texts = membership_texts(
            model, members=s.members, non_members=s.non_members, corpus=s.corpus, field=s.field
        )
    lm = load_model(model)
    if texts.source is not None:
        say(texts.source)
    ref = load_model(s.reference) if s.reference else None
    options = method_options(s, reference=ref)
    n = min(len(texts.members), len(texts.non_members), s.num_per_side)
    say(
        f"scoring up to {plural(n, 'text')} per side with {lm.name} "
        "(after de-duplication: the summary's sets say how many)"
    )
    specs = {"model": ModelSpec(model), "reference": ModelSpec(s.reference) if s.reference else None}
    with ray_session(engine):
        summary = run_membership(lm, texts, out_dir, s, options=options, engine=engine, model_specs=specs)
    if "samia_cost" in summary:
        say(summary["samia_cost"])
    return summary
