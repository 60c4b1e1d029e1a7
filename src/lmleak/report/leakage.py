"""The training data leakage report (paper 001 §4-§6): ledger -> S -> features -> metrics.

:func:`run_report` writes into a run directory:

- ``ledger/``: the one teacher-forced pass (:mod:`lmleak.ledger.ledger`);
- ``occurrences.parquet``: one row per element of S: ``doc_id, user_id, start, end, k,
  sequence_id`` plus the occurrence's context length, perplexity and public perplexity;
- ``sequences.parquet``: the features of each distinct sequence per k (:mod:`lmleak.report.features`);
  with ``redact=True`` neither file holds text, contexts, token ids or plain ids, and the ledger
  is not kept (see :mod:`lmleak.report.redaction`);
- ``summary.json``: the §5 metrics for the first k at the top level and for every k under
  ``by_k``, the model's corpus perplexity and top-k accuracy, and the KART scenario. The leak
  counts (``unique_sequences``, ``curated_unique_sequences``, ``pii_unique_sequences_total``) carry
  a 95 % interval ``X_ci`` from a bootstrap over the corpus's users (every user, those without a
  leak too; :func:`count_intervals`), described by the summary's ``intervals`` record.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Corpus, Document
from lmleak.data.holdout import check_known_people, document_counts, read_holdout
from lmleak.errors import ConfigError
from lmleak.intervals import interval_record
from lmleak.ledger.index import CorpusIndex
from lmleak.ledger.ledger import Ledger, build_ledger
from lmleak.models.adapters import BASE, recorded_base
from lmleak.models.base import Capability, require, scoring_convention
from lmleak.pii.policies import get_policy
from lmleak.progress import stage
from lmleak.report.counts import COUNT_INTERVAL_METHOD, N_BOOT, count_intervals
from lmleak.report.features import (
    PUBLIC_CONTEXT_TOKENS,
    SpanTexts,
    redact_sequences,
    sequence_features,
)
from lmleak.report.metrics import (
    corpus_perplexity,
    metrics_for_k,
    top_k_accuracy,
)
from lmleak.report.null import null_keys
from lmleak.report.owners import add_owner_columns
from lmleak.report.public import LEAVE_OUT, FoldedPublic, load_any_model, train_leave_out
from lmleak.report.redaction import (
    LEDGER_NOTE,
    Redactor,
    is_inside,
    memory_ledger,
    private_scratch,
    redact_table,
    redactor_from,
    sigkill_at,
    unredacted_leftovers,
)
from lmleak.report.sequences import occurrences
from lmleak.report.settings import ReportSettings
from lmleak.runs import open_run, write_parquet, write_summary
from lmleak.scenarios import scenario_record
from lmleak.scenarios.describe import anonymization_of, privacy_unit_of

#: The report's settings under their name before issue 34.
ReportConfig = ReportSettings


def scenario(anonymization: str = "identity") -> dict[str, Any]:
    """The KART record of the tab attack: K = ∅, A as given, R = ∅, T = any training substring,
    top-k access (paper 004's factors for paper 001's threat model, §3)."""
    return scenario_record(
        attack="tab_attack",
        knowledge=(),
        anonymization=anonymization,
        resources=(),
        access="top_k",
        target="any training substring",
        notes="paper 001 tab attack: top-k next-token predictions on the training contexts",
    )


def build_index(ledger: Ledger, cache_dir: str | Path | None = None, *, salt: str = "") -> CorpusIndex:
    """The corpus index over the ledger's tokenisation of D (cached under ``cache_dir`` when given)."""
    return CorpusIndex.cached(ledger.documents(), ledger.user_ids, cache_dir, salt=salt)


def analyse(
    ledger: Ledger,
    index: CorpusIndex,
    tokenizer: Any,
    config: ReportSettings,
    *,
    public_model: Any | None = None,
    max_top1_perplexity: float | None = None,
    held_out: Collection[str] = (),
) -> tuple[Any, Any, dict[str, Any]]:
    """S, features and metrics for every k of ``config`` from a ledger (no model call except the
    public model's scoring). Returns ``(sequences, occurrences, metrics_by_k)``.

    ``held_out``: the users the model never saw (their documents in the ledger are the null of the
    leaked-PII headline, :mod:`lmleak.report.null`)."""
    import pandas as pd

    for k in config.k:
        ledger.check_k(k)
    occ = occurrences(ledger, config.k, max_top1_perplexity=max_top1_perplexity)
    seqs, occ = sequence_features(
        ledger,
        occ,
        index,
        SpanTexts(ledger, tokenizer, public_context(config, ledger)),
        public_model=public_model,
        public_scope=config.public_scope,
        max_contexts=config.max_contexts,
        public_occurrences=config.public_occurrences,
        pii_detector=get_policy(config.pii_policy) if config.pii_policy else None,
    )
    add_owner_columns(
        seqs, ledger, tokenizer, min_tokens=config.min_tokens, headline_types=config.headline_kinds
    )
    has_public = public_model is not None
    by_k = {
        str(k): _metrics_of_k(seqs[seqs["k"] == k], k, ledger, config, held_out, has_public) for k in config.k
    }
    if not len(seqs):
        seqs = pd.DataFrame(columns=seqs.columns)
    # the p filter of §5 as a column, so a reviewer can keep only these rows
    seqs["kept_by_p"] = True if config.p is None else seqs["users_in_s"].to_numpy() < config.p
    return seqs, occ, by_k


def _metrics_of_k(
    part: Any, k: int, ledger: Ledger, config: ReportSettings, held_out: Collection[str], has_public: bool
) -> dict[str, Any]:
    """One k's metrics: §5's, the leak counts' intervals, and the leaked-PII null (:mod:`lmleak.report.null`)."""
    m = metrics_for_k(part, t=config.t, p=config.p, has_public=has_public, min_tokens=config.min_tokens)
    m["top_k_accuracy"] = top_k_accuracy(ledger.ranks, k)
    m.update(
        count_intervals(
            part, m, ledger.user_ids, t=config.t, min_tokens=config.min_tokens,
            doc_tokens=ledger.offsets[1:] - ledger.offsets[:-1],
        )
    )  # fmt: skip
    if m.get("pii_unique_sequences_total") is not None and "user_ids" in part.columns:
        curated = part["perplexity_ratio"].to_numpy(dtype=float) >= config.t if has_public else None
        m.update(
            null_keys(part, ledger.user_ids, held_out, curated=curated, headline_types=config.headline_kinds)
        )
    return m


def public_context(config: ReportSettings, ledger: Ledger) -> int:
    """Tokens of context the public model sees before each scored sequence.

    The configured value, or by default the window overlap of the ledger (every ledger token was
    scored with at least that much context, so the public model is not given less than the audited
    model had), capped at :data:`~lmleak.report.features.PUBLIC_CONTEXT_TOKENS` to keep the cost
    linear; 64 when the ledger records no overlap (a black box).

    Example:
        >>> import numpy as np
        >>> led = Ledger([], [], np.zeros(1, np.int64), *[np.zeros(0)] * 4, meta={"overlap": 64})
        >>> public_context(ReportSettings(), led), public_context(ReportSettings(public_context_tokens=32), led)
        (64, 32)
    """
    if config.public_context_tokens is not None:
        return int(config.public_context_tokens)
    overlap = (ledger.meta or {}).get("overlap")
    return int(min(PUBLIC_CONTEXT_TOKENS, overlap)) if overlap else 64


def unique_owners(seqs: Any) -> list[str]:
    """Users who own at least one unique leaked sequence (the leave-out set of §6.2)."""
    rows = seqs[seqs["users_in_d"] == 1]
    return sorted({u for us in rows["user_ids"] for u in us})


def run_report(
    model: Any,
    corpus: Corpus,
    out_dir: str | Path,
    config: ReportSettings = ReportSettings(),
    *,
    public_model: Any | str | None = None,
    model_dir: str | Path | None = None,
    redactor: Redactor | None = None,
    held_out: Collection[str] | None = None,
    never_seen: Corpus | None = None,
) -> dict[str, Any]:
    """Run the whole report; returns the summary (also written to ``out_dir/summary.json``).

    Args:
        model: the audited model (SCORE access, or a top-k black box).
        corpus: its training data D.
        out_dir: the run directory (created owner-only).
        config: see :class:`ReportSettings`.
        public_model: a loaded model, a spec for :func:`lmleak.report.public.load_any_model`,
            ``"leave-out"`` (retrain without the owners of unique sequences, ``config.leave_out_folds``
            models: :class:`lmleak.report.public.FoldedPublic`), ``"base"`` (the base recorded by
            ``lmleak train --base`` in ``model_dir``) or None.
        model_dir: where the audited model lives: its ``train.json`` configures leave-out, its
            ``privacy.json`` gives the summary's ``privacy`` and the KART A factor
            (:func:`~lmleak.scenarios.describe.anonymization_of`; ``identity`` without one).
        redactor: with ``config.redact``, the run's key (an audit hashes every stage under one key);
            None: :func:`~lmleak.report.redaction.redactor_from` ``config.redact_key_file``.
        held_out: the users of ``corpus`` the model never saw, the null of the leaked-PII headline
            (:mod:`lmleak.report.null`); None: those of ``model_dir``'s ``holdout.json``, if any.
        never_seen: documents of people the model never saw (``lmleak audit --holdout``), run
            through the report beside ``corpus`` as held-out people; their user ids must not be
            ``corpus``'s.
    """
    corpus, held = _with_null(corpus, model_dir, held_out, never_seen)
    options: dict[str, Any] = dict(public_model=public_model, model_dir=model_dir, held_out=held)
    if not config.redact:
        with open_run(out_dir) as out:  # locked, marked incomplete until done
            return _run_report(model, corpus, out, out, config, **options)
    out = Path(out_dir)
    # every refusal comes before the run directory is created: a refused command leaves nothing
    if redactor is None:
        redactor = redactor_from(config.redact_key_file, run_dir=out)
    _refuse_redacted_into(out, config)
    # the ledger (token ids) exists only in memory; a leave-out model (trained on the corpus) only in
    # the run's private scratch, deleted however the report ends (after a SIGKILL, by the resume or the
    # next run: issue 33); the run is opened (created, locked, marked incomplete) only now, after
    # every refusal
    with open_run(out, redacted=True), private_scratch(out) as scratch:
        return _run_report(model, corpus, out, scratch, config, redactor=redactor, **options)


def never_seen_null(model_dir: str | Path | None, corpus: Corpus, never_seen: Corpus | None) -> Corpus | None:
    """The people the model never saw that a report reads its leaked-PII null from (``never_seen``,
    ``lmleak report --holdout`` and the audit's ``analyses.mia.non_members`` alone), or None when the
    model's ``holdout.json`` holds out users of ``corpus`` (they are the null) or none is given.

    Example:
        >>> from lmleak.data.corpus import Document
        >>> people = Corpus([Document("p1", "x", "hi")])
        >>> never_seen_null(None, Corpus([Document("u1", "a", "hello")]), people) is people
        True
    """
    holdout = read_holdout(model_dir) if model_dir is not None and Path(model_dir).is_dir() else None
    if holdout is not None and set(holdout.users) & set(corpus.users):
        return None
    return never_seen


def _with_null(
    corpus: Corpus,
    model_dir: str | Path | None,
    held_out: Collection[str] | None,
    never_seen: Corpus | None,
) -> tuple[Corpus, tuple[str, ...]]:
    """The corpus the report runs over (``never_seen``'s documents appended) and its held-out users:
    ``held_out``, else ``model_dir``'s ``holdout.json``, those of them in the corpus, plus every
    user of ``never_seen``."""
    if held_out is None and model_dir is not None:  # the split is the records': none they contradict
        seen_name = (never_seen.source if never_seen is not None else None) or "the people never seen"
        check_known_people(
            model_dir,
            corpus.users,
            corpus_name=corpus.source or "the corpus",
            field="corpus",
            never_seen=never_seen.users if never_seen is not None else (),
            never_seen_name=seen_name,
            never_seen_field="holdout",
            documents=document_counts(d.user_id for d in corpus),
        )
    if held_out is None and model_dir is not None:
        recorded = read_holdout(model_dir)
        held_out = () if recorded is None else recorded.users
    users = set(corpus.users)
    held = {str(u) for u in held_out or () if str(u) in users}
    if never_seen is not None and len(never_seen):
        clash = sorted(users & set(never_seen.users))
        if clash:
            raise ConfigError(
                f"the corpus of people the model never saw ({never_seen.source}) shares user ids with "
                f"the audited corpus: {', '.join(clash[:5])}",
                field="holdout",
                hint="give people the model never saw under their own user ids",
            )
        corpus = Corpus([*corpus.documents, *never_seen.documents], source=corpus.source)
        held |= set(never_seen.users)
    return corpus, tuple(sorted(held))


def _refuse_redacted_into(out: Path, config: ReportSettings) -> None:
    """Refuse a redacted report into a run holding an unredacted one, or with its index inside the run."""
    leftovers = unredacted_leftovers(out)
    if leftovers:
        raise ConfigError(
            f"{out} already holds an unredacted report ({', '.join(leftovers)})",
            field="--out",
            hint="give a new, empty run directory for a redacted report",
        )
    if config.index_cache is not None and is_inside(Path(config.index_cache), out):
        raise ConfigError(
            "a redacted run cannot keep the corpus index (token ids) inside the run",
            field="--index-cache",
            hint="put the index cache outside the run, or leave it out",
        )


def _public_model(
    public_model: Any | str | None,
    model: Any,
    corpus: Corpus,
    ledger: Ledger,
    index: Any,
    config: ReportSettings,
    work: Path,
    *,
    model_dir: str | Path | None,
    redactor: Redactor | None = None,
) -> tuple[Any, dict[str, Any] | None]:
    """The public model of the leakage epsilon (a spec, ``leave-out``, ``base``, a loaded model or
    None), loaded or trained, and what the summary records about it."""
    public_info: dict[str, Any] | None = None
    pub = public_model
    if isinstance(pub, str | Path) and str(pub) == LEAVE_OUT:
        seqs0, _, _ = analyse(ledger, index, model.tokenizer, config)
        owners = unique_owners(seqs0)
        pub, public_info = _leave_out(
            corpus,
            owners,
            work / "leave-out-model",
            redactor,
            model_dir=model_dir,
            folds=config.leave_out_folds,
        )
        if redactor is not None:
            sigkill_at("redacted-leave-out")
    elif (
        isinstance(pub, str | Path) and str(pub) == BASE
    ):  # the fine-tuned model's own base (paper 001's setting)
        spec = getattr(model, "base", None) if model_dir is None else None
        spec = spec or recorded_base(model_dir)
        public_info = {"kind": "base", "path": str(spec)}
        pub = load_any_model(spec)
    elif isinstance(pub, str | Path):
        public_info = {"kind": "model", "path": str(pub)}
        pub = load_any_model(pub)
    elif pub is not None:
        public_info = {"kind": "model", "name": getattr(pub, "name", type(pub).__name__)}
    if pub is not None:
        require(pub, Capability.SCORE, attack="the public model of the leakage epsilon")
        first = pub.models[0] if isinstance(pub, FoldedPublic) and pub.models else pub
        public_info = {
            **(public_info or {}),
            "name": getattr(pub, "name", None),
            "bos_token_id": scoring_convention(first)["bos_token_id"],
        }
    return pub, public_info


def _leave_out(
    corpus: Corpus, owners: list[str], out: Path, redactor: Redactor | None, **options: Any
) -> tuple[Any, dict[str, Any]]:
    """:func:`train_leave_out`; in a redacted run on the corpus with keyed user and doc ids, so that the
    model's records in the scratch (``train.json``, ``holdout.json``) name nobody, the folds mapped
    back to the plain ids the analysis looks up."""
    if redactor is None:
        return train_leave_out(corpus, owners, out, **options)

    def key(u: str) -> str:
        return redactor.hash(u, kind="user_id")

    keyed = Corpus(
        [Document(key(d.user_id), redactor.hash(d.doc_id, kind="doc_id"), d.text) for d in corpus],
        source=corpus.source,
    )
    pub, info = train_leave_out(keyed, [key(u) for u in owners], out, **options)
    if isinstance(pub, FoldedPublic):
        plain = {key(u): u for u in corpus.users}
        pub.fold_of = {plain[k]: f for k, f in pub.fold_of.items()}
    return pub, info


def _run_report(
    model: Any,
    corpus: Corpus,
    out: Path,
    work: Path,
    config: ReportSettings,
    *,
    public_model: Any | str | None,
    model_dir: str | Path | None,
    redactor: Redactor | None = None,
    held_out: tuple[str, ...] = (),
) -> dict[str, Any]:
    """:func:`run_report` with the ledger and leave-out model under ``work`` (``out``, or a
    temporary folder for a redacted run) and the tables and summary under ``out``."""

    if redactor is None:
        ledger = build_ledger(model, corpus, work, shard_size=config.shard_size, k=max(config.k))
    else:  # a redacted run writes no token ids anywhere, not even to its scratch
        ledger = memory_ledger(model, corpus, k=max(config.k), shard_size=config.shard_size)
        sigkill_at("redacted-ledger")
    with stage("report: corpus index"):
        index = build_index(ledger, config.index_cache)  # keyed by the token ids: one per tokenisation
    pub, public_info = _public_model(
        public_model,
        model,
        corpus,
        ledger,
        index,
        config,
        work,
        model_dir=model_dir,
        redactor=redactor,
    )
    with stage("report: leaked sequences, features" + (", public model" if pub is not None else "")):
        seqs, occ, by_k = analyse(ledger, index, model.tokenizer, config, public_model=pub, held_out=held_out)

    public_info = _write_tables(out, seqs, occ, public_info, redactor)
    if redactor is not None:
        sigkill_at("redacted-tables")
    summary = _summary(config, ledger, by_k, model, public_info, model_dir, redactor)
    summary["held_out_users"] = len(held_out)
    write_summary(out, summary, model=model, corpus=corpus)
    return summary


def _write_tables(
    out: Path, seqs: Any, occ: Any, public_info: dict[str, Any] | None, redactor: Redactor | None
) -> dict[str, Any] | None:
    """Write ``occurrences.parquet`` and ``sequences.parquet`` (redacted with a redactor); the public
    model's record, whose leave-out path a redacted run marks deleted."""
    occ_out = occ.drop(columns=["doc"])
    seq_out = seqs
    if redactor is not None:
        occ_out, seq_out = redact_table(occ_out, redactor), redact_table(redact_sequences(seqs), redactor)
        if public_info and public_info.get("kind") == LEAVE_OUT:
            public_info = {
                **public_info,
                "path": "deleted (trained on the corpus; a redacted run keeps no model)",
            }
    write_parquet(occ_out, out / "occurrences.parquet")
    write_parquet(seq_out, out / "sequences.parquet")
    return public_info


#: The headline values of the first k that the summary repeats at its top level.
_HEAD_KEYS = (
    "num_sequences",
    "num_occurrences",
    "unique_sequences",
    "curated_unique_sequences",
    "leakage_epsilon",
    "log_leakage_epsilon",
    "leakage_epsilon_infinite",
    "log_ratio_p50",
    "log_ratio_p95",
    "pii_unique_sequences",
    "pii_unique_sequences_total",
    "pii_unique_short_sequences",
    "unique_sequences_ci",
    "curated_unique_sequences_ci",
    "pii_unique_sequences_total_ci",
    "pii_users",
    "pii_users_by_type",
)
#: The leaked-PII headline against its null (:mod:`lmleak.report.null`), repeated at the top level
#: when the first k has them (no PII policy: absent).
_NULL_KEYS = (
    "pii_unique_sequences_all_types",
    "pii_unique_sequences_members",
    "pii_unique_sequences_members_ci",
    "null_pii_unique_sequences",
    "null_pii_unique_sequences_ci",
    "pii_people_members",
    "pii_people_members_n",
    "pii_people_null",
    "pii_people_null_n",
    "pii_people_excess",
    "pii_people_excess_ci",
    "pii_people_excess_reason",
    "pii_people_excess_fix",
    "null_kind",
    "null_note",
    "pii_owner_counts",
    "pii_people_members_by_type",
)


def _summary(
    config: ReportSettings,
    ledger: Ledger,
    by_k: dict[str, Any],
    model: Any,
    public_info: dict[str, Any] | None,
    model_dir: str | Path | None,
    redactor: Redactor | None,
) -> dict[str, Any]:
    """The report's ``summary.json``: the first k's headline, every k's metrics, the run's setting."""
    head = by_k[str(config.k[0])]
    return {
        "stage": "report",
        "k": int(config.k[0]),
        "ks": [int(k) for k in config.k],
        **{key: head[key] for key in _HEAD_KEYS},
        **{key: head[key] for key in _NULL_KEYS if key in head},
        "headline_pii_types": list(config.headline_kinds),
        "min_tokens": config.min_tokens,
        "pii_policy": config.pii_policy,
        "public_context_tokens": public_context(config, ledger),
        "public_occurrences": config.public_occurrences,
        "t": config.t,
        "p": config.p,
        "p_filtered_sequences": head["p_filtered_sequences"],
        "perplexity": corpus_perplexity(ledger.logprobs),
        "top_k_accuracy": head["top_k_accuracy"],
        "by_k": by_k,
        "model": getattr(model, "name", None),
        **scoring_convention(model),
        "public_model": public_info,
        "num_documents": ledger.num_docs,
        "num_tokens": ledger.num_tokens,
        "num_users": len(set(ledger.user_ids)),
        "intervals": interval_record(
            method=COUNT_INTERVAL_METHOD,
            unit="user",
            n_units=len(set(ledger.user_ids)),
            n_boot=N_BOOT,
            at_boundary=head.get("intervals_at_boundary") or {},
        ),
        "ledger": ledger.meta
        if redactor is None
        else {**(ledger.meta or {}), "kept": False, "note": LEDGER_NOTE},
        "redacted": config.redact,
        **({"redaction": redactor.describe()} if redactor is not None else {}),
        "config": repr(config),
        "privacy": privacy_record(model_dir),
        "scenario": scenario(anonymization_of(model_dir)),
    }


def privacy_record(model_dir: str | Path | None) -> dict[str, Any] | None:
    """The guarantee the model was trained under, from its ``privacy.json`` (None without one): the
    mode, DP ε and δ, and the privacy unit (``user`` / ``sequence``), named as in an audit's summary.

    Example:
        >>> privacy_record(None) is None
        True
    """
    p = None if model_dir is None else Path(model_dir) / "privacy.json"
    if p is None or not p.is_file():
        return None
    priv = json.loads(p.read_text())
    return {
        "mode": priv.get("mode"),
        "dp_epsilon": priv.get("epsilon"),
        "dp_delta": priv.get("delta"),
        "privacy_unit": privacy_unit_of(priv),
        **{k: priv[k] for k in ("max_sequences_per_user", "sampler") if k in priv},
    }
