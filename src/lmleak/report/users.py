"""Risk per person: ``users.parquet``, one row per user of an audited model (issue 27 item 5).

Paper 001 counts leaks per user; people ask "what does the model reveal about *me*?". This module
joins what the audit's stages already wrote — it runs no model — into one row per user:

- ``unique_sequences``: the user-unique sequences of S (user count in D = 1) found in the user's
  documents, at the leakage report's headline k (``occurrences.parquet`` joined to
  ``sequences.parquet`` on ``k, sequence_id``); their sum over users is the report's
  ``unique_sequences``;
- ``pii_sequences``: those that are the report's headline leaked PII (``sequences.parquet``'s
  ``pii_headline``: a person-identifying kind, at least ``min_tokens`` long, unique as text too);
  their sum is the report's ``pii_unique_sequences_total``;
- ``probe_targets`` / ``probe_hits``: the (subject, PII type) pairs of the user's probe subjects
  and those whose PII the model generated exactly (``generations.parquet``; a subject is mapped
  to its ``user_id``, else its ``subject_id`` is the user, as the probe stage does);
- ``mia_score``: the mean, over the user's texts the membership stage scored, of its headline
  attack's score (``mia_scores.parquet``; ``mia_score_method`` names it): membership of the user's
  documents as a group. ``mia_p_value`` reads it against the users the model never saw (the stage's
  non-members): ``(1 + #{held-out users j != i scoring at least s_i}) / (1 + #{those users})``;
- ``doc_ids`` / ``pii_doc_ids``: the documents holding the user's leaked unique sequences (those
  with leaked PII first, then by their number of leaks) — the documents to remove first — and
  ``action``: ``remove documents`` (a leaked PII sequence sits in them), ``retrain without user``
  (a probe reproduced the user's PII, but no leaked document holds it) or null.

A user is *at risk* with at least one leaked PII sequence or probing hit; ``risk_rank`` orders
users by leaked PII, then probing hits, unique sequences and MIA score. ``held_out`` is True for
users held out of training (``holdout.json``): their rows are the null, what the model reveals
about people it never trained on (their documents are still in the audited corpus).

A redacted audit's stage files already carry keyed ids (:mod:`lmleak.report.redaction`); the ids
this module takes from elsewhere (the corpus's users and documents, the probe subjects' users, the
held-out users) are hashed under the same key, so the rows join and no plain id is written.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lmleak.data.holdout import read_holdout
from lmleak.intervals import (
    BOOTSTRAP_METHOD,
    auc_mann_whitney,
    bootstrap_sum_interval,
    interval_record,
    unit_bootstrap_auc,
)
from lmleak.probe.subjects import read_subjects
from lmleak.report.redaction import Redactor
from lmleak.runs import open_run, read_summary, write_parquet, write_summary

#: ``users.parquet``'s columns, in order (docs/GLOSSARY.md describes each).
USER_COLUMNS = (
    "user_id", "risk_rank", "at_risk", "action", "held_out", "documents", "pii_sequences",
    "unique_sequences", "pii_types", "probe_targets", "probe_hits", "mia_score", "mia_documents",
    "mia_p_value", "pii_doc_ids", "doc_ids",
)  # fmt: skip
#: The ``action`` labels (fixed strings: a redacted run keeps them).
REMOVE_DOCUMENTS = "remove documents"
RETRAIN_WITHOUT_USER = "retrain without user"
#: Bootstrap replicates of ``users_at_risk_ci`` and ``mia_user_auc_ci``.
N_BOOT = 1000
#: What the summary says about a user's MIA score.
MIA_METHOD = "mean over the user's texts scored by the mia stage of its headline attack's score ({})"


LEAK_COLUMNS = ("user_id", "doc_id", "sequence_id", "pii", "pii_types")
PROBE_COLUMNS = ("user_id", "subject_id", "target_type", "hit")
MIA_COLUMNS = ("user_id", "mia_score", "mia_documents", "mia_member")


def _empty(columns: Sequence[str]) -> Any:
    import pandas as pd

    return pd.DataFrame(columns=list(columns))


def _ids(values: Sequence[Any], redactor: Redactor | None, kind: str) -> list[str]:
    """Plain ids as the run writes them: keyed under ``kind`` in a redacted run."""
    return [str(v) for v in values] if redactor is None else redactor.hash_all(list(values), kind=kind)


def report_leaks(report_dir: Path) -> tuple[Any, dict[str, Any]]:
    """Per (user, document, sequence) the user-unique leaked sequences at the report's headline k,
    with ``pii`` (the headline PII rule); and ``{k, min_tokens}``.

    Empty when the report found no unique sequence.
    """
    import pandas as pd

    summary = read_summary(report_dir)
    k, min_tokens = int(summary.get("k", 1)), int(summary.get("min_tokens") or 1)
    occ = pd.read_parquet(
        report_dir / "occurrences.parquet", columns=["doc_id", "user_id", "k", "sequence_id"]
    )
    seqs = pd.read_parquet(report_dir / "sequences.parquet")
    seqs = seqs[(seqs["k"] == k) & (seqs["users_in_d"] == 1)]
    types = (
        seqs["pii_types"] if "pii_types" in seqs.columns else pd.Series([None] * len(seqs), index=seqs.index)
    )
    if (
        "pii_headline" in seqs.columns
    ):  # the report's headline rule (person-identifying kinds, unique as text)
        pii = [bool(x) for x in seqs["pii_headline"]]
    else:  # a report written before the headline kinds: every kind
        pii = [
            ty is not None and len(ty) > 0 and int(n) >= min_tokens
            for ty, n in zip(types, seqs["length_tokens"], strict=True)
        ]
    flags = pd.DataFrame(
        {"sequence_id": seqs["sequence_id"].to_numpy(), "pii": pii, "pii_types": list(types)}
    )
    rows = occ[occ["k"] == k].merge(flags, on="sequence_id", how="inner")
    return rows[["user_id", "doc_id", "sequence_id", "pii", "pii_types"]], {"k": k, "min_tokens": min_tokens}


def probe_pairs(probe_dir: Path, subject_users: Mapping[str, str] | None) -> Any:
    """Per (user, subject, PII type) probed by generation, whether the PII came out exactly
    (``generations.parquet``); the subject's user from ``subject_users`` (as the run writes ids),
    else the subject id. Empty without generations."""
    import pandas as pd

    path = probe_dir / "generations.parquet"
    if not path.exists():
        return _empty(PROBE_COLUMNS)
    gen = pd.read_parquet(path, columns=["subject_id", "target_type", "exact_match"])
    pairs = gen.groupby(["subject_id", "target_type"])["exact_match"].max().astype(bool).reset_index()
    users = subject_users or {}
    pairs["user_id"] = [users.get(str(s), str(s)) for s in pairs["subject_id"]]
    return pairs.rename(columns={"exact_match": "hit"})


def mia_by_user(mia_dir: Path) -> tuple[Any, str | None]:
    """Per user of the membership stage: the mean headline score over their texts, how many were
    scored and whether they were members; and the headline attack (None when the stage's scores name
    no user: member and non-member files rather than the held-out split)."""
    import pandas as pd

    empty = _empty(MIA_COLUMNS)
    path = mia_dir / "mia_scores.parquet"
    attack = read_summary(mia_dir).get("mia_attack") or "perplexity"
    if not path.exists():
        return empty, None
    scores = pd.read_parquet(path)
    if "user_id" not in scores.columns or attack not in scores.columns:
        return empty, None
    g = scores.groupby("user_id")
    out = pd.DataFrame(
        {
            "mia_score": g[attack].mean(),
            "mia_documents": g[attack].size(),
            "mia_member": g["member"].max().astype(bool),
        }
    ).reset_index()
    return out, attack


def membership_p_values(scores: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Each user's score against the users never trained on: ``(1 + #{non-members j != i with
    s_j >= s_i}) / (1 + #{non-members j != i})`` (a permutation p-value; NaN for a NaN score).

    Example:
        >>> membership_p_values(np.array([3.0, 1.0, 2.0, 0.0]), np.array([True, True, False, False])).tolist()
        [0.3333333333333333, 0.6666666666666666, 0.5, 1.0]
    """
    s = np.asarray(scores, dtype=np.float64)
    member = np.asarray(members, dtype=bool)
    null = np.sort(s[~member & ~np.isnan(s)])
    at_least = null.size - np.searchsorted(null, s, side="left")  # #{non-members with s_j >= s_i}
    self_in_null = (~member).astype(np.int64)  # a non-member is not compared with itself
    with np.errstate(invalid="ignore"):
        out = (1 + at_least - self_in_null) / (1 + null.size - self_in_null)
    return np.where(np.isnan(s), np.nan, out)


# long: one column per source (report, probe, mia, corpus, holdout) joined into one table
def build_users(
    stages: Mapping[str, Path],
    *,
    documents: Mapping[str, Sequence[str]] | None = None,
    subject_users: Mapping[str, str] | None = None,
    held_out: Collection[str] | None = None,
    redactor: Redactor | None = None,
) -> tuple[Any, dict[str, Any]]:
    """``users.parquet``'s table and the summary record beside it (see the module docstring).

    Args:
        stages: stage name -> the folder of its results (``report``, ``probe``, ``mia`` are read;
            others ignored).
        documents: the corpus's users and their document ids (plain ids); every user gets a row,
            with or without a leak. None: the users the stage files name.
        subject_users: probe subject id -> its user id (plain ids; the subjects file).
        held_out: the users held out of training (plain ids; ``holdout.json``).
        redactor: a redacted run's key: the plain ids above are hashed as the stage files' are.
    """
    import pandas as pd

    leaks, report_info = report_leaks(stages["report"]) if "report" in stages else (_empty(LEAK_COLUMNS), {})
    subj = None
    if subject_users is not None:
        subj = dict(
            zip(
                _ids(list(subject_users), redactor, "user_id"),  # a probe's subject_id is keyed as a user id
                _ids(list(subject_users.values()), redactor, "user_id"),
                strict=True,
            )
        )
    probes = probe_pairs(stages["probe"], subj) if "probe" in stages else _empty(PROBE_COLUMNS)
    mia, attack = mia_by_user(stages["mia"]) if "mia" in stages else (_empty(MIA_COLUMNS), None)

    docs_of: dict[str, list[str]] = {}
    if documents is not None:
        for user, docs in documents.items():
            (key,) = _ids([user], redactor, "user_id")
            docs_of[key] = _ids(list(docs), redactor, "doc_id")
    held = set(_ids(sorted(held_out), redactor, "user_id")) if held_out is not None else None

    users = sorted(
        set(docs_of)
        | set(map(str, leaks["user_id"]))
        | set(map(str, probes["user_id"]))
        | set(map(str, mia["user_id"]))
    )
    table = pd.DataFrame({"user_id": users})
    table["held_out"] = pd.array([None if held is None else u in held for u in users], dtype="boolean")
    table["documents"] = pd.array(
        [None if documents is None else len(docs_of.get(u, ())) for u in users], dtype="Int64"
    )

    per_seq = leaks.drop_duplicates(["user_id", "sequence_id"])
    unique = per_seq.groupby("user_id").size()
    pii = per_seq[per_seq["pii"].astype(bool)].groupby("user_id").size()
    table["pii_sequences"] = _per_user(pii, users)
    table["unique_sequences"] = _per_user(unique, users)
    types: dict[str, set[str]] = {}
    for u, flag, ty in zip(per_seq["user_id"], per_seq["pii"], per_seq["pii_types"], strict=True):
        if flag:
            types.setdefault(str(u), set()).update(str(t) for t in ty)
    table["pii_types"] = [sorted(types.get(u, ())) for u in users]

    targets = probes.groupby("user_id").size()
    hits = probes[probes["hit"].astype(bool)].groupby("user_id").size()
    table["probe_targets"] = _per_user(targets, users)
    table["probe_hits"] = _per_user(hits, users)

    m = mia.assign(user_id=mia["user_id"].astype(str)).set_index("user_id").reindex(users)
    table["mia_score"] = m["mia_score"].astype(np.float64).to_numpy()
    table["mia_documents"] = m["mia_documents"].fillna(0).astype(np.int64).to_numpy()
    mia_member = m["mia_member"].fillna(False).astype(bool).to_numpy()
    table["mia_p_value"] = membership_p_values(table["mia_score"].to_numpy(), mia_member)

    table["pii_doc_ids"], table["doc_ids"] = _documents_to_remove(leaks, users)
    table["at_risk"] = (table["pii_sequences"] > 0) | (table["probe_hits"] > 0)
    table["action"] = pd.Series(
        [
            REMOVE_DOCUMENTS if n_pii > 0 else RETRAIN_WITHOUT_USER if n_hits > 0 else None
            for n_pii, n_hits in zip(table["pii_sequences"], table["probe_hits"], strict=True)
        ],
        dtype=object,  # null, not NaN, for a user with nothing to do
    )
    order = table.assign(_score=table["mia_score"].fillna(-np.inf)).sort_values(
        ["at_risk", "pii_sequences", "probe_hits", "unique_sequences", "_score", "user_id"],
        ascending=[False, False, False, False, False, True],
        kind="stable",
    )
    table = order.drop(columns="_score").reset_index(drop=True)
    table["risk_rank"] = np.arange(1, len(table) + 1, dtype=np.int64)
    table = table[list(USER_COLUMNS)]
    return table, _summary(
        table, report_info, attack, mia_member_of=dict(zip(users, mia_member, strict=True))
    )


def _per_user(counts: Any, users: Sequence[str]) -> np.ndarray:
    """A count per user (0 for a user without one) from a Series indexed by user id."""
    return counts.set_axis(counts.index.astype(str)).reindex(users, fill_value=0).to_numpy(dtype=np.int64)


def _documents_to_remove(leaks: Any, users: Sequence[str]) -> tuple[list[list[str]], list[list[str]]]:
    """Per user, the documents holding leaked PII sequences, and every document holding a leaked
    unique sequence, ordered by the distinct leaked PII sequences in them, then the distinct unique
    sequences (most first), then id."""
    per_doc: dict[str, dict[str, list[int]]] = {}
    distinct = leaks.drop_duplicates(["user_id", "doc_id", "sequence_id"])
    for u, d, flag in zip(distinct["user_id"], distinct["doc_id"], distinct["pii"], strict=True):
        counts = per_doc.setdefault(str(u), {}).setdefault(str(d), [0, 0])
        counts[0] += int(bool(flag))
        counts[1] += 1
    pii_docs, all_docs = [], []
    for u in users:
        docs = per_doc.get(u, {})
        ranked = sorted(docs, key=lambda d: (-docs[d][0], -docs[d][1], d))
        all_docs.append(ranked)
        pii_docs.append([d for d in ranked if docs[d][0] > 0])
    return pii_docs, all_docs


def _summary(
    table: Any, report_info: dict[str, Any], attack: str | None, *, mia_member_of: dict[str, bool]
) -> dict[str, Any]:
    """The counts the audit summary carries beside ``users.parquet`` (issue 27 item 5)."""
    at_risk = table["at_risk"].to_numpy(dtype=bool)
    ci = bootstrap_sum_interval(at_risk.astype(np.float64), n_boot=N_BOOT)
    out: dict[str, Any] = {
        "users_total": int(len(table)),
        "users_at_risk": int(at_risk.sum()),
        "users_at_risk_ci": None if ci is None else [ci[0], ci[1]],
        "users_with_leaked_pii": int((table["pii_sequences"] > 0).sum()),
        "users_with_probe_hits": int((table["probe_hits"] > 0).sum()),
        "users_with_unique_sequences": int((table["unique_sequences"] > 0).sum()),
        "at_risk_rule": "at least one leaked PII sequence (user-unique, holding PII, at least min_tokens long) or probing hit",
        **{key: report_info.get(key) for key in ("k", "min_tokens")},
        "intervals": interval_record(method=BOOTSTRAP_METHOD, unit="user", n_units=len(table), n_boot=N_BOOT),
    }
    if table["held_out"].notna().any():
        held = table["held_out"].fillna(False).to_numpy(dtype=bool)
        out["users_held_out"] = int(held.sum())
        out["users_at_risk_held_out"] = int((at_risk & held).sum())
        # a held-out person "at risk" is the null (what the model generalises), not a leak: the
        # trained-on people at risk, and how many trained-on people there are (issue 32)
        out["users_at_risk_members"] = int((at_risk & ~held).sum())
        out["users_members"] = int((~held).sum())
    out["mia_score_method"] = None if attack is None else MIA_METHOD.format(attack)
    out["mia_user_auc"], out["mia_user_auc_ci"] = _user_auc(table, mia_member_of)
    return out


def _user_auc(table: Any, member_of: dict[str, bool]) -> tuple[float | None, list[float] | None]:
    """The AUC of the users' MIA scores, members against the users never trained on (0.5: chance),
    with a bootstrap over users in each class; None without both classes."""
    scored = table[table["mia_documents"] > 0]
    if not len(scored):
        return None, None
    labels = np.array([member_of[u] for u in scored["user_id"]], dtype=bool)
    if labels.all() or not labels.any():
        return None, None
    scores = scored["mia_score"].to_numpy(dtype=np.float64)
    ci = unit_bootstrap_auc(scores, labels.astype(int), n_boot=N_BOOT)  # each user is one unit
    return auc_mann_whitney(scores, labels), None if ci is None else [ci[0], ci[1]]


def write_users(out_dir: str | Path, stages: Mapping[str, Path], **sources: Any) -> dict[str, Any]:
    """:func:`build_users` into ``out_dir/users.parquet``; returns the summary record, with ``path``
    the file's name. A file already holding the same table is left as it is (a rerun of a complete
    audit rewrites nothing)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table, summary = build_users(stages, **sources)
    path = Path(out_dir) / "users.parquet"
    new = pa.Table.from_pandas(table, preserve_index=False)
    if not (path.exists() and pq.read_table(path).equals(new)):
        write_parquet(new, path)
    return {**summary, "path": "users.parquet"}


#: The stages whose files ``users.parquet`` is built from.
USER_STAGES = ("report", "probe", "mia")


def users_of_model(
    out_dir: str | Path,
    stages: Mapping[str, Path],
    *,
    corpus: Any = None,
    model_dir: str | Path | None = None,
    subjects: str | Path | None = None,
    redactor: Redactor | None = None,
) -> dict[str, Any] | None:
    """The audit's hook: ``out_dir/users.parquet`` from the finished ``stages`` of one model, every
    user of ``corpus`` a row, the probe subjects' users read from the ``subjects`` file and the
    held-out users from the model's ``holdout.json``; returns the summary record (None, and nothing
    written, when none of the report, probe and mia stages ran)."""
    used = {s: Path(d) for s, d in stages.items() if s in USER_STAGES}
    if not used:
        return None
    documents = None
    if corpus is not None:
        documents = {u: [d.doc_id for d in docs] for u, docs in corpus.by_user().items()}
    subject_users = None
    if subjects is not None and "probe" in used:
        subject_users = {
            str(s.get("subject_id")): str(s.get("user_id", s.get("subject_id")))
            for s in read_subjects(subjects)
        }
    holdout = read_holdout(model_dir)
    return write_users(
        out_dir,
        used,
        documents=documents,
        subject_users=subject_users,
        held_out=None if holdout is None else holdout.users,
        redactor=redactor,
    )


def users_beside(
    run_dir: str | Path,
    stage: str,
    *,
    corpus: Any = None,
    model_dir: str | Path | None = None,
    subjects: str | Path | None = None,
    redactor: Redactor | None = None,
    redacted: bool = False,
) -> dict[str, Any]:
    """A single analysis's run as a one-stage audit leaves its model's folder (issue 34):
    ``run_dir/users.parquet`` from the ``stage`` that ran into ``run_dir`` (:func:`users_of_model`),
    and its record as the summary's ``users`` (the audit keeps it in the model's entry of the run
    summary). Returns the summary, rewritten under the run's lock (``redacted``: a redacted run's)."""
    with open_run(run_dir, redacted=redacted):  # the summary names users.parquet, and is newer
        summary = read_summary(run_dir)
        summary["users"] = users_of_model(
            run_dir,
            {stage: Path(run_dir)},
            corpus=corpus,
            model_dir=model_dir,
            subjects=subjects,
            redactor=redactor,
        )
        write_summary(run_dir, summary)
    return summary
