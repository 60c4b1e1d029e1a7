"""lmleak.report.users: ``users.parquet`` against a hand count of hand-written stage files, against a
slow per-user loop over random stage files (and the report's own totals), redacted under the run's
key, and end to end in an audit."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from lmleak.attacks.membership import MembershipSettings, MembershipTexts, run_membership
from lmleak.intervals import auc_mann_whitney
from lmleak.models.fake import FakeLM
from lmleak.report.metrics import metrics_for_k
from lmleak.report.redaction import Redactor, redact_stage_dir
from lmleak.report.users import (
    REMOVE_DOCUMENTS,
    RETRAIN_WITHOUT_USER,
    USER_COLUMNS,
    build_users,
    mia_by_user,
    users_of_model,
)
from lmleak.runs import write_summary


def _seq(k, sid, users_in_d, pii, n, users):
    return {"k": k, "sequence_id": sid, "users_in_d": users_in_d, "pii_types": pii, "length_tokens": n,
            "user_ids": users, "count_in_s": 1, "users_in_s": len(users), "perplexity_ratio": np.nan}  # fmt: skip


def _stages(root: Path) -> dict[str, Path]:
    """Stage files written by hand: the leakage report at k = 1 (and a k = 3 row that must not
    count), probing generations, membership scores."""
    report, probe, mia = (root / s for s in ("report", "probe", "mia"))
    write_summary(report, {"stage": "report", "k": 1, "ks": [1, 3], "min_tokens": 3})
    seqs = [
        _seq(1, "s1", 1, ["EMAIL"], 6, ["alice"]),  # alice: leaked PII, in a1 (twice) and a2
        _seq(1, "s2", 1, [], 8, ["alice"]),  # alice: unique, no PII, in a2
        _seq(1, "s3", 1, ["PHONE"], 2, ["bob"]),  # bob: unique, PII too short to headline
        _seq(1, "s4", 2, ["EMAIL"], 9, ["alice", "bob"]),  # shared by two users: nobody's
        _seq(1, "s5", 1, ["PHONE"], 7, ["carol"]),  # carol (held out): leaked PII
        _seq(3, "s6", 1, ["EMAIL"], 9, ["bob"]),  # another k
    ]
    pd.DataFrame(seqs).to_parquet(report / "sequences.parquet")
    occ = [("a1", "alice", 1, "s1"), ("a1", "alice", 1, "s1"), ("a2", "alice", 1, "s1"),
           ("a2", "alice", 1, "s2"), ("b1", "bob", 1, "s3"), ("a1", "alice", 1, "s4"),
           ("b1", "bob", 1, "s4"), ("c1", "carol", 1, "s5"), ("b1", "bob", 3, "s6")]  # fmt: skip
    pd.DataFrame(occ, columns=["doc_id", "user_id", "k", "sequence_id"]).assign(start=0, end=5).to_parquet(
        report / "occurrences.parquet"
    )
    write_summary(probe, {"attack": "propile"})
    gen = [("s-bob", "phone", False), ("s-bob", "phone", True), ("s-bob", "email", False),
           ("s-dave", "email", False), ("erin", "phone", True)]  # fmt: skip
    pd.DataFrame(gen, columns=["subject_id", "target_type", "exact_match"]).assign(
        prompt="x", generated="y"
    ).to_parquet(probe / "generations.parquet")
    write_summary(mia, {"mia_attack": "perplexity"})
    scores = [("alice", 1, -2.0), ("alice", 1, -4.0), ("bob", 1, -5.0), ("carol", 0, -6.0), ("dave", 0, -1.0)]
    pd.DataFrame(scores, columns=["user_id", "member", "perplexity"]).assign(text="t", zlib=0.0).to_parquet(
        mia / "mia_scores.parquet"
    )
    return {"report": report, "probe": probe, "mia": mia}


CORPUS = {"alice": ["a1", "a2"], "bob": ["b1"], "carol": ["c1"], "dave": ["d1"]}
SUBJECTS = {"s-bob": "bob", "s-dave": "dave"}  # erin names no user: the subject is the person


def test_users_parquet_against_a_hand_count(tmp_path):
    table, summary = build_users(
        _stages(tmp_path), documents=CORPUS, subject_users=SUBJECTS, held_out=["carol"]
    )
    assert list(table.columns) == list(USER_COLUMNS)
    rows = table.set_index("user_id")
    # by hand: ranks (leaked PII, then probing hits, unique sequences, MIA score)
    assert table["user_id"].tolist() == ["alice", "carol", "bob", "erin", "dave"]
    assert table["risk_rank"].tolist() == [1, 2, 3, 4, 5]
    assert rows["pii_sequences"].to_dict() == {"alice": 1, "carol": 1, "bob": 0, "erin": 0, "dave": 0}
    assert rows["unique_sequences"].to_dict() == {"alice": 2, "carol": 1, "bob": 1, "erin": 0, "dave": 0}
    assert list(rows.at["alice", "pii_types"]) == ["EMAIL"] and list(rows.at["bob", "pii_types"]) == []
    assert rows["probe_targets"].to_dict() == {"alice": 0, "carol": 0, "bob": 2, "erin": 1, "dave": 1}
    assert rows["probe_hits"].to_dict() == {"alice": 0, "carol": 0, "bob": 1, "erin": 1, "dave": 0}
    # a2 holds alice's PII sequence and her other unique one, a1 the PII one only: a2 first
    assert list(rows.at["alice", "pii_doc_ids"]) == ["a2", "a1"] == list(rows.at["alice", "doc_ids"])
    assert list(rows.at["bob", "pii_doc_ids"]) == [] and list(rows.at["bob", "doc_ids"]) == ["b1"]
    assert rows["action"].to_dict() == {"alice": REMOVE_DOCUMENTS, "carol": REMOVE_DOCUMENTS,
                                        "bob": RETRAIN_WITHOUT_USER, "erin": RETRAIN_WITHOUT_USER, "dave": None}  # fmt: skip
    assert rows["documents"].to_dict() == {"alice": 2, "carol": 1, "bob": 1, "erin": 0, "dave": 1}
    assert rows["held_out"].tolist() == [False, True, False, False, False]  # carol; erin has no documents
    # MIA: the mean of the user's scores; p-value against the other users the model never saw
    assert rows.at["alice", "mia_score"] == -3.0 and rows.at["alice", "mia_documents"] == 2
    assert np.isnan(rows.at["erin", "mia_score"]) and rows.at["erin", "mia_documents"] == 0
    p = rows["mia_p_value"].to_dict()
    assert (p["alice"], p["bob"], p["carol"], p["dave"]) == (2 / 3, 2 / 3, 1.0, 0.5)
    assert summary["mia_user_auc"] == 0.5  # alice and bob beat carol, lose to dave
    assert "perplexity" in summary["mia_score_method"]
    assert (summary["users_total"], summary["users_at_risk"]) == (5, 4)
    assert (summary["users_held_out"], summary["users_at_risk_held_out"]) == (1, 1)
    assert (summary["users_members"], summary["users_at_risk_members"]) == (4, 3)  # carol is the null
    assert (summary["users_with_leaked_pii"], summary["users_with_probe_hits"]) == (2, 2)
    lo, hi = summary["users_at_risk_ci"]
    assert 0 <= lo <= 4 <= hi <= 5 and summary["intervals"]["unit"] == "user"
    assert (summary["k"], summary["min_tokens"]) == (1, 3)


def test_without_a_stage_its_columns_are_empty_and_without_any_nothing_is_written(tmp_path):
    stages = _stages(tmp_path)
    table, summary = build_users({"report": stages["report"]})
    assert sorted(table["user_id"]) == ["alice", "bob", "carol"]  # no corpus: the users the files name
    assert table["probe_targets"].sum() == 0 and table["mia_documents"].sum() == 0
    assert (
        table["held_out"].isna().all() and table["documents"].isna().all() and "users_held_out" not in summary
    )
    assert summary["mia_user_auc"] is None and summary["mia_score_method"] is None
    assert users_of_model(tmp_path / "out", {"exposure": tmp_path / "x"}) is None
    assert not (tmp_path / "out").exists()


def _random_report(
    rng: random.Random, root: Path
) -> tuple[dict[str, Path], pd.DataFrame, dict[str, list[str]]]:
    users = [f"u{i}" for i in range(30)]
    docs = {u: [f"{u}-d{j}" for j in range(rng.randint(1, 4))] for u in users}
    seq_rows, occ = [], []
    for i in range(200):
        k = rng.choice([1, 3])
        owners = rng.sample(users, rng.choice([1, 1, 1, 2, 3]))
        pii = rng.choice([[], ["EMAIL"], ["PHONE", "EMAIL"], None])
        seq_rows.append(_seq(k, f"q{i}", len(owners), pii, rng.randint(1, 9), owners))
        for u in owners:
            for _ in range(rng.randint(1, 3)):
                occ.append({"doc_id": rng.choice(docs[u]), "user_id": u, "k": k, "sequence_id": f"q{i}"})
    seqs = pd.DataFrame(seq_rows)
    write_summary(root / "report", {"stage": "report", "k": 1, "ks": [1, 3], "min_tokens": 4})
    seqs.to_parquet(root / "report" / "sequences.parquet")
    pd.DataFrame(occ).to_parquet(root / "report" / "occurrences.parquet")
    return {"report": root / "report"}, seqs, docs


def test_users_parquet_against_a_loop_over_users_and_the_reports_own_totals(tmp_path):
    stages, seqs, docs = _random_report(random.Random(7), tmp_path)
    table, summary = build_users(stages, documents=docs)
    occ = pd.read_parquet(tmp_path / "report" / "occurrences.parquet")
    # the slow oracle: for every user, every k = 1 sequence of theirs, read row by row
    for row in table.itertuples():
        mine = {r.sequence_id for r in occ.itertuples() if r.user_id == row.user_id and r.k == 1}
        unique = [s for s in seqs.itertuples() if s.k == 1 and s.sequence_id in mine and s.users_in_d == 1]
        pii = [s for s in unique if s.pii_types is not None and len(s.pii_types) and s.length_tokens >= 4]
        assert (row.unique_sequences, row.pii_sequences) == (len(unique), len(pii)), row.user_id
        pii_ids = {s.sequence_id for s in pii}
        holding = {
            r.doc_id for r in occ.itertuples() if r.user_id == row.user_id and r.sequence_id in pii_ids
        }
        assert set(row.pii_doc_ids) == holding and row.at_risk == bool(pii)
    # the report's own metrics over the same rows give the same totals
    m = metrics_for_k(seqs[seqs["k"] == 1], t=1.0, p=None, min_tokens=4)
    assert table["unique_sequences"].sum() == m["unique_sequences"]
    assert table["pii_sequences"].sum() == m["pii_unique_sequences_total"]
    assert summary["users_total"] == len(docs) and summary["users_at_risk"] == int(table["at_risk"].sum())


def test_a_redacted_run_gives_the_same_rows_under_keyed_ids(tmp_path):
    plain = _stages(tmp_path / "plain")
    key = Redactor(b"k" * 32, "test")
    keyed = {s: tmp_path / "keyed" / s for s in plain}
    for s, d in plain.items():
        redact_stage_dir(d, keyed[s], key)
    # the probe's subject ids are hashed as user ids (redaction.HASH_KIND), so the map joins them
    a, _ = build_users(plain, documents=CORPUS, subject_users=SUBJECTS, held_out=["carol"])
    b, summary = build_users(
        keyed, documents=CORPUS, subject_users=SUBJECTS, held_out=["carol"], redactor=key
    )
    assert b["user_id"].tolist() == [key.hash(u, kind="user_id") for u in a["user_id"]]
    assert list(b.at[0, "doc_ids"]) == [key.hash(d, kind="doc_id") for d in a.at[0, "doc_ids"]]
    same = [c for c in USER_COLUMNS if c not in ("user_id", "doc_ids", "pii_doc_ids")]
    pd.testing.assert_frame_equal(a[same], b[same])
    assert summary["users_at_risk"] == 4 and summary["users_at_risk_held_out"] == 1


def test_the_membership_stage_names_each_texts_user_and_the_users_score_is_their_mean(tmp_path):
    texts = [f"user {u} wrote line {i} about {u}" for u in "abcdef" for i in range(3)]
    model = FakeLM.from_texts(texts[:9], order=3)  # users a, b, c trained on; d, e, f not
    users = [t.split()[1] for t in texts]
    texts_of = MembershipTexts(texts[:9], texts[9:], None, (users[:9], users[9:]))
    run_membership(model, texts_of, tmp_path / "mia", MembershipSettings(group_size=0, blind=False))
    scores = pd.read_parquet(tmp_path / "mia" / "mia_scores.parquet")
    assert sorted(set(scores["user_id"])) == list("abcdef")
    by_user, attack = mia_by_user(tmp_path / "mia")
    assert attack == "perplexity"
    for u in "abcdef":
        assert by_user.set_index("user_id").at[u, "mia_score"] == pytest.approx(
            scores.loc[scores["user_id"] == u, "perplexity"].mean()
        )
    table, summary = build_users({"mia": tmp_path / "mia"})
    labels = [u in "abc" for u in table["user_id"]]
    assert summary["mia_user_auc"] == auc_mann_whitney(table["mia_score"].to_numpy(), np.array(labels))
    assert summary["mia_user_auc"] > 0.5  # the n-gram model memorised its members' lines


def test_an_audit_writes_users_parquet_whose_totals_are_the_reports(tmp_path):
    from lmleak.audit.config import load_config
    from lmleak.audit.runner import run_audit
    from lmleak.data.synth.customersim import synthesize

    paths = synthesize(tmp_path / "data", users=5, dialogs_per_user=2, seed=3)
    cfg = {
        "out": "run",
        "corpus": {"path": str(paths["corpus"])},
        "models": [{"name": "memorizer", "path": f"fake:{paths['corpus']}"}],
        "analyses": {
            "report": {"k": [1], "min_tokens": 3},
            "probe": {"subjects": str(paths["subjects"]), "level": "twin", "templates": 1, "beams": 1},
        },
    }
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(cfg))
    run = run_audit(load_config(tmp_path / "audit.yaml"))
    model = json.loads((run / "summary.json").read_text())["models"]["memorizer"]
    table = pd.read_parquet(run / model["users"]["path"])
    report = json.loads((run / "models/memorizer/report/summary.json").read_text())
    assert table["unique_sequences"].sum() == report["unique_sequences"] > 0
    assert table["pii_sequences"].sum() == report["pii_unique_sequences_total"]
    gen = pd.read_parquet(run / "models/memorizer/probe/generations.parquet")
    assert table["probe_hits"].sum() > 0  # the memorizer gives some subjects' PII back
    assert table["probe_hits"].sum() == gen.groupby(["subject_id", "target_type"])["exact_match"].max().sum()
    assert model["headline"]["users_total"] == len(table) == 5
    assert model["headline"]["users_at_risk"] == int(
        ((table["pii_sequences"] > 0) | (table["probe_hits"] > 0)).sum()
    )


def test_membership_p_values_against_a_loop_over_users():
    from lmleak.report.users import membership_p_values

    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=300), 1)  # ties on purpose
    scores[rng.choice(300, 20, replace=False)] = np.nan
    member = rng.random(300) < 0.6
    got = membership_p_values(scores, member)
    for i in range(300):
        if np.isnan(scores[i]):
            assert np.isnan(got[i])
            continue
        others = [scores[j] for j in range(300) if j != i and not member[j] and not np.isnan(scores[j])]
        assert got[i] == (1 + sum(x >= scores[i] for x in others)) / (1 + len(others))


def test_a_rebuild_of_the_same_table_leaves_the_file_and_a_changed_one_rewrites_it(tmp_path):
    from lmleak.report.users import write_users

    stages = _stages(tmp_path)
    write_users(tmp_path / "out", stages, documents=CORPUS)
    stamp = (tmp_path / "out" / "users.parquet").stat().st_mtime_ns
    write_users(tmp_path / "out", stages, documents=CORPUS)
    assert (tmp_path / "out" / "users.parquet").stat().st_mtime_ns == stamp
    record = write_users(
        tmp_path / "out", stages, documents={**CORPUS, "finn": ["f1"]}, subject_users=SUBJECTS
    )
    assert (
        record["users_total"] == 6
    )  # the corpus, finn, and erin (a subject of no corpus user) and record["path"] == "users.parquet"
    assert "finn" in set(pd.read_parquet(tmp_path / "out" / "users.parquet")["user_id"])
