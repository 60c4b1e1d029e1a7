"""The leaked-PII headline against its null (issue 32): members vs held-out people, the public model's
curated count, no null; person-identifying kinds headlined (whose PII, unique as text: test_owners.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.data.holdout import Holdout, write_holdout
from lmleak.data.loaders import load_corpus
from lmleak.data.synth.mail import synthesize
from lmleak.intervals import newcombe_difference_interval
from lmleak.models.fake import FakeLM
from lmleak.render.headline import collect_headlines
from lmleak.report.leakage import ReportConfig, run_report
from lmleak.report.null import NO_NULL_FIX, headline_pii_mask, null_metrics

# --- the split and the excess on constructed tables ---------------------------------------------


def test_the_split_counts_members_and_held_out_owners_apart_by_hand():
    owners = ["a", "a", "b", "h1", "h1", "c"]
    headline = np.array([True, True, True, True, True, False])
    users = ["a", "b", "c", "d", "e", "h1", "h2", "h3"]
    m = null_metrics(owners, headline, users, {"h1", "h2", "h3", "not-in-corpus"}, n_boot=200)
    # the oracle, by hand: members a, b own 3 sequences; the held-out h1 owns 2 (never a leak)
    assert m["null_kind"] == "held_out"
    assert m["pii_unique_sequences_members"] == 3 and m["null_pii_unique_sequences"] == 2
    assert (m["pii_people_members"], m["pii_people_members_n"]) == (2, 5)
    assert (m["pii_people_null"], m["pii_people_null_n"]) == (1, 3)
    assert m["pii_people_excess"] == pytest.approx(2 / 5 - 1 / 3)
    assert m["pii_people_excess_ci"] == list(newcombe_difference_interval(2, 5, 1, 3))
    lo, hi = m["null_pii_unique_sequences_ci"]
    assert lo <= 2 <= hi and hi <= 6  # 3 held-out people, one of whom owns 2: at most 3 x 2
    assert "pii_people_excess_reason" not in m


def test_without_held_out_people_a_public_model_is_the_null_and_without_either_there_is_none():
    owners, headline = ["a", "a", "b"], np.array([True, True, True])
    curated = np.array([True, False, False])
    pub = null_metrics(owners, headline, ["a", "b", "c", "d"], set(), curated=curated, n_boot=200)
    assert pub["null_kind"] == "public_model" and pub["pii_unique_sequences_members"] == 1
    assert (
        pub["pii_people_members"] == 1
        and pub["pii_people_null"] == 0
        and "0 by construction" in pub["null_note"]
    )
    assert (
        pub["pii_people_excess"] == 0.25
        and pub["pii_people_excess_ci"][0] < 0.25 < pub["pii_people_excess_ci"][1]
    )
    none = null_metrics(owners, headline, ["a", "b", "c", "d"], set(), n_boot=200)
    assert none["null_kind"] is None and none["pii_people_excess"] is None
    assert none["pii_people_excess_ci"] is None and none["null_pii_unique_sequences"] is None
    assert none["pii_people_excess_fix"] == NO_NULL_FIX
    for line in ("lmleak train --holdout-users", "--holdout PEOPLE.jsonl", "public_model:"):
        assert line in none["pii_people_excess_fix"]


def test_dates_and_bare_numbers_are_counted_not_headlined_and_the_kinds_are_configurable():
    types = [["EMAIL"], ["DATE"], ["DIGITS"], ["DATE", "PERSON"], ["URL"]]
    args = ([1] * 5, types, [9] * 5)
    assert headline_pii_mask(*args, min_tokens=5).tolist() == [True, False, False, True, False]
    assert headline_pii_mask(*args, min_tokens=5, headline_types=["DATE"]).tolist() == [
        False,
        True,
        False,
        True,
        False,
    ]


# --- end to end ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mail(tmp_path_factory):
    d = tmp_path_factory.mktemp("null-mail")
    corpus = load_corpus(synthesize(d / "mail", scale=0.03, seed=4)["corpus"])
    held = tuple(corpus.users[: len(corpus.users) // 3])
    return d, corpus, held


def test_a_model_trained_only_on_the_members_gives_the_null_count_per_k_in_summary_and_headline(mail):
    d, corpus, held = mail
    model_dir = d / "model"
    model_dir.mkdir()
    write_holdout(model_dir, Holdout(users=held, fraction=0.3, seed=0))
    model = FakeLM.from_texts([doc.text for doc in corpus if doc.user_id not in held], order=4)
    s = run_report(model, corpus, d / "run", ReportConfig(k=(1, 3)), model_dir=model_dir)
    saved = json.loads((d / "run" / "summary.json").read_text())
    assert saved["held_out_users"] == len(held) and saved["null_kind"] == "held_out"
    seqs = pd.read_parquet(d / "run" / "sequences.parquet")
    for k in ("1", "3"):
        m = s["by_k"][k]
        part = seqs[(seqs["k"] == int(k)) & seqs["pii_headline"]]
        owner = [us[0] for us in part["user_ids"]]
        # the oracle: the headline rows of sequences.parquet split by the held-out list, by hand
        assert m["null_pii_unique_sequences"] == sum(o in held for o in owner)
        assert m["pii_unique_sequences_members"] == sum(o not in held for o in owner)
        assert m["pii_people_null"] == len({o for o in owner if o in held}) and m["pii_people_null_n"] == len(
            held
        )
        assert m["pii_people_members_n"] == len(corpus.users) - len(held)
        assert (
            m["null_pii_unique_sequences_ci"][0]
            <= m["null_pii_unique_sequences"]
            <= m["null_pii_unique_sequences_ci"][1]
        )
        lo, hi = m["pii_people_excess_ci"]
        assert lo <= m["pii_people_excess"] <= hi
    head = collect_headlines(d / "run")["run"]
    for k in ("1", "3"):
        assert head["by_k"][k]["null_pii_unique_sequences"] == s["by_k"][k]["null_pii_unique_sequences"]
        assert head["by_k"][k]["pii_people_excess_ci"] == s["by_k"][k]["pii_people_excess_ci"]
        assert head["by_k"][k]["null_kind"] == "held_out"
    assert head["pii_people_excess"] == s["by_k"]["1"]["pii_people_excess"]


def test_held_out_ids_spelt_otherwise_in_holdout_json_give_the_same_counts_personal_ones_included(mail):
    """holdout.json written by hand with the held-out ids upper-cased, padded and zero-width-prefixed
    names the same people (lmleak.data.user_ids, issue 33): every k's keys are the same, the report's
    people counts and the whole-personal-value ones beside them alike."""
    d, corpus, held = mail
    model = FakeLM.from_texts([doc.text for doc in corpus if doc.user_id not in held], order=4)
    runs = {}
    for name, ids in (("canonical", list(held)), ("respelt", [f"\u200b{u.upper()}  " for u in held])):
        model_dir = d / f"model-{name}"
        model_dir.mkdir()
        record = {"held_out_users": ids, "fraction": 0.3, "seed": 0, "corpus": None}
        (model_dir / "holdout.json").write_text(json.dumps(record), encoding="utf-8")
        runs[name] = run_report(model, corpus, d / f"run-{name}", ReportConfig(k=(1, 3)), model_dir=model_dir)
    assert any(u.upper() != u for u in held)  # the re-spelling changes the ids as written
    for k in ("1", "3"):
        canonical, respelt = runs["canonical"]["by_k"][k], runs["respelt"]["by_k"][k]
        assert respelt["pii_people_null_n"] == len(held)
        assert canonical["pii_personal_people_members"] is not None
        for key in ("pii_people_members", "pii_people_null", "pii_people_excess_ci", "null_pii_unique_sequences",
                    "pii_personal_people_members", "pii_personal_people_null", "pii_personal_people_excess_ci"):  # fmt: skip
            assert respelt[key] == canonical[key], (k, key)


def test_a_corpus_of_people_never_seen_is_the_null_and_without_it_there_is_none(mail):
    d, corpus, held = mail
    members = Corpus([doc for doc in corpus if doc.user_id not in held])
    never_seen = Corpus([doc for doc in corpus if doc.user_id in held], source="people.jsonl")
    model = FakeLM.from_texts([doc.text for doc in members], order=4)
    s = run_report(model, members, d / "run-never-seen", ReportConfig(k=(1,)), never_seen=never_seen)
    assert s["null_kind"] == "held_out" and s["pii_people_null_n"] == len(held)
    assert s["num_users"] == len(corpus.users)  # the never-seen people's documents ran through too
    bare = run_report(model, members, d / "run-bare", ReportConfig(k=(1,)))
    assert bare["null_kind"] is None and bare["pii_people_excess"] is None
    assert bare["pii_people_excess_fix"] == NO_NULL_FIX
    from lmleak.errors import ConfigError

    with pytest.raises(ConfigError, match="shares user ids"):
        run_report(model, members, d / "run-clash", ReportConfig(k=(1,)), never_seen=members)


def test_a_public_model_without_held_out_people_is_the_null_of_the_curated_count(tmp_path):
    docs = [
        Document(f"u{i}", f"d{i}", f"From: P{i} <p{i}@example.org>\nmy number is 201-555-01{i:02d} ok")
        for i in range(6)
    ]
    corpus = Corpus(docs)
    model = FakeLM.from_texts([x.text for x in docs], order=4)
    public = FakeLM.from_texts(["my number is ok"], order=2)
    s = run_report(model, corpus, tmp_path / "run", ReportConfig(k=(1,), min_tokens=2), public_model=public)
    assert s["null_kind"] == "public_model" and s["pii_people_null"] == 0
    assert s["pii_unique_sequences_members"] <= s["pii_unique_sequences_total"]
    assert s["pii_people_members_n"] == 6 and s["null_pii_unique_sequences"] is None


@pytest.mark.slow
def test_lmleak_report_on_a_model_folder_with_holdout_json_gives_the_same_keys(tmp_path):
    from typer.testing import CliRunner

    from lmleak.cli.main import app
    from lmleak.data.holdout import read_holdout
    from lmleak.data.synth import customersim

    paths = customersim.synthesize(tmp_path / "syn", users=6, dialogs_per_user=2, seed=1)
    model = tmp_path / "gpt"
    res = CliRunner().invoke(app, ["-q", "train", "--corpus", str(paths["corpus"]), "--out", str(model),
                                   "--epochs", "1", "--batch-size", "8", "--vocab-size", "300", "--layers", "1",
                                   "--width", "32", "--seq-len", "64",
                                   "--holdout-users", "0.34"])  # fmt: skip
    assert res.exit_code == 0, res.output
    held = read_holdout(model).users
    assert held
    res = CliRunner().invoke(app, ["report", "--model", str(model), "--corpus", str(paths["corpus"]),
                                   "--out", str(tmp_path / "run"), "--k", "1", "3", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    for m in (s, s["by_k"]["1"], s["by_k"]["3"]):
        assert m["null_kind"] == "held_out" and m["pii_people_null_n"] == len(held)
        assert m["pii_people_members_n"] == 6 - len(held)
        for key in ("null_pii_unique_sequences_ci", "pii_people_excess", "pii_people_excess_ci"):
            assert m[key] is not None, key


def test_lmleak_report_takes_the_headline_kinds_and_says_there_is_no_null_and_how_to_get_one(tmp_path):
    from typer.testing import CliRunner

    from lmleak.cli.main import app
    from lmleak.data.synth import customersim

    corpus = customersim.synthesize(tmp_path / "syn", users=4, dialogs_per_user=2, seed=1)["corpus"]
    res = CliRunner().invoke(app, ["report", "--model", f"fake:{corpus}", "--corpus", str(corpus), "--k", "1",
                                   "--out", str(tmp_path / "run"), "--headline-pii-types", "date, phone"],
                             env={"COLUMNS": "300"})  # fmt: skip
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["headline_pii_types"] == ["DATE", "PHONE"] and s["null_kind"] is None
    assert "no null (k=1)" in res.output and "lmleak train --holdout-users 0.1" in res.output
    res = CliRunner().invoke(app, ["report", "--model", f"fake:{corpus}", "--corpus", str(corpus),
                                   "--out", str(tmp_path / "run2"), "--headline-pii-types", " , "])  # fmt: skip
    assert res.exit_code == 2 and "--headline-pii-types" in res.output
