"""People the model's records leave out are refused, not counted as trained on (data/holdout.py).

Every analysis counts a corpus's users outside holdout.json as trained on. A corpus larger than the
training one would put people the model never saw on that side, where they leak nothing and dilute
the members' numbers towards the null. The report, membership inference and probing all refuse them
through one check; a null model, which claims the audited people on purpose, says so in train.json.
"""

from __future__ import annotations

import json

import pytest

from lmleak.attacks.mia_texts import membership_texts
from lmleak.audit.nullmodel import null_model
from lmleak.data.corpus import Corpus, Document
from lmleak.data.holdout import NULL_MODEL_KEY, TRAIN_FILE, Holdout, trained_users, write_holdout
from lmleak.errors import ConfigError, DataFileError
from lmleak.models.fake import FakeLM
from lmleak.probe.subjects import control_users
from lmleak.report.leakage import ReportConfig, run_report


def _corpus(users: list[str]) -> Corpus:
    return Corpus(
        [
            Document(
                u, f"{u}-{j}", f"From: {u} <{u}@example.org>\nplease call 201-555-01{i:02d} about item {j}"
            )
            for i, u in enumerate(users)
            for j in range(2)
        ],
        source="corpus.jsonl",
    )


def _model_dir(tmp_path, trained: list[str], held: list[str]):
    d = tmp_path / "model"
    d.mkdir()
    (d / TRAIN_FILE).write_text(json.dumps({"train_users": trained, "val_users": held}))
    write_holdout(d, Holdout(tuple(held), 0.3, 0, "corpus.jsonl"))
    return d


def test_every_analysis_refuses_a_person_neither_trained_on_nor_held_out_and_names_them(tmp_path):
    d = _model_dir(tmp_path, ["u1", "u2", "u3"], ["h1"])
    known = _corpus(["u1", "u2", "u3", "h1"])
    grown = _corpus(["u1", "u2", "u3", "h1", "x9"])  # x9: added after training
    model = FakeLM.from_texts(known.texts(), order=3)
    with pytest.raises(ConfigError, match=r"field 'corpus': 1 person of corpus\.jsonl \(x9\) is neither"):
        run_report(model, grown, tmp_path / "run", ReportConfig(k=(1,)), model_dir=d)
    assert not (tmp_path / "run" / "summary.json").exists()  # refused before any work
    with pytest.raises(ConfigError, match=r"field '--corpus': 1 person .*\(x9\)"):
        membership_texts(d, corpus=grown)
    with pytest.raises(ConfigError, match=r"field 'subjects': 1 person of the subjects \(x9\)"):
        control_users(d, [{"subject_id": "s1", "user_id": "u1"}, {"subject_id": "s2", "user_id": " X9"}])
    # the people the records know pass, spelt as the corpus or otherwise
    assert (
        run_report(model, known, tmp_path / "ok", ReportConfig(k=(1,)), model_dir=d)["null_kind"]
        == "held_out"
    )
    assert membership_texts(d, corpus=known).groups[1] == ["h1", "h1"]
    assert control_users(d, [{"subject_id": "s", "user_id": "U1"}, {"subject_id": "t"}]) == {"h1"}


def test_a_model_lmleak_did_not_train_has_nothing_to_check_and_a_damaged_record_is_refused(tmp_path):
    d = tmp_path / "hf"
    d.mkdir()
    write_holdout(d, Holdout(("h1",), 0.3))  # a hand-written holdout.json beside a model from elsewhere
    assert trained_users(d) is None
    assert membership_texts(d, corpus=_corpus(["u1", "h1", "x9"])).groups[1] == ["h1", "h1"]
    (d / TRAIN_FILE).write_text(json.dumps({"train_users": "u1"}))
    with pytest.raises(DataFileError, match="train_users"):
        trained_users(d)


def test_a_null_model_claims_the_audited_people_and_its_train_json_says_so(tmp_path):
    audited = _corpus(["u1", "u2", "u3", "h1"])
    other = _corpus(["p1", "p2", "p3"])
    from lmleak.train.config import TrainConfig

    cfg = TrainConfig(epochs=1, n_layer=1, n_embd=16, n_head=2, seq_len=32, vocab_size=120, batch_size=4)
    out = null_model(other, tmp_path / "null", ["h1"], audited_corpus="corpus.jsonl", config=cfg)
    record = json.loads((out / TRAIN_FILE).read_text())
    assert record["train_users"] == ["other-p1", "other-p2", "other-p3"]
    assert record[NULL_MODEL_KEY]["audited_corpus"] == "corpus.jsonl"
    assert trained_users(out) is None
    texts = membership_texts(out, corpus=audited)  # u1-u3 taken as trained on, on purpose
    assert sorted(set(texts.groups[0])) == ["u1", "u2", "u3"] and set(texts.groups[1]) == {"h1"}
    del record[NULL_MODEL_KEY]  # the same folder without its note is refused like any model
    (out / TRAIN_FILE).write_text(json.dumps(record))
    with pytest.raises(ConfigError, match="3 people of corpus.jsonl"):
        membership_texts(out, corpus=audited)


def test_lmleak_audit_of_a_grown_corpus_exits_2_with_one_line_and_leaves_no_run(tmp_path):
    from typer.testing import CliRunner

    from lmleak.cli.main import app
    from lmleak.data.synth import customersim

    corpus = customersim.synthesize(tmp_path / "syn", users=6, dialogs_per_user=2, seed=1)["corpus"]
    model = tmp_path / "gpt"
    res = CliRunner().invoke(app, ["-q", "train", "--corpus", str(corpus), "--out", str(model), "--epochs", "1",
                                   "--batch-size", "8", "--vocab-size", "300", "--layers", "1", "--width", "32",
                                   "--seq-len", "64", "--holdout-users", "0.34"])  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    newcomer = {**rows[0], "user_id": "newcomer-1", "doc_id": "newcomer-1-d0"}
    grown = tmp_path / "grown.jsonl"
    grown.write_text("".join(json.dumps(r) + "\n" for r in [*rows, newcomer]))
    res = CliRunner().invoke(
        app, ["audit", "--model", str(model), "--corpus", str(grown), "--out", str(tmp_path / "run")]
    )
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if "neither trained on nor held out" in line]
    assert (
        len(lines) == 1
        and "(newcomer-1)" in lines[0]
        and "Fix: audit the corpus the model was trained on" in lines[0]
    )
    assert not (tmp_path / "run").exists()


def test_a_holdout_json_of_another_training_and_never_seen_people_who_were_trained_on_are_refused(tmp_path):
    """Both would put people the model saw into the null, where their leaks count as chance."""
    d = _model_dir(tmp_path, ["u1", "u2", "u3"], ["h1"])
    corpus = _corpus(["u1", "u2", "h1"])  # u3 trained on, but not in the audited corpus
    model = FakeLM.from_texts(corpus.texts(), order=3)
    never_seen = _corpus(["n1", "u3"])
    never_seen.source = "people.jsonl"
    people = tmp_path / "people.jsonl"
    people.write_text(
        "".join(
            json.dumps({"user_id": x.user_id, "doc_id": x.doc_id, "text": x.text}) + "\n" for x in never_seen
        )
    )
    with pytest.raises(
        ConfigError, match=r"field 'holdout': 1 person of people\.jsonl \(u3\) was trained on"
    ):
        run_report(model, corpus, tmp_path / "run", ReportConfig(k=(1,)), model_dir=d, never_seen=never_seen)
    with pytest.raises(ConfigError, match=r"field '--non-members': 1 person of .* \(u3\) was trained on"):
        membership_texts(d, corpus=corpus, non_members=people)
    write_holdout(d, Holdout(("h1", "u2"), 0.3))  # copied from a training that held u2 out
    with pytest.raises(
        DataFileError, match=r"holdout\.json: field 'held_out_users': 1 person of holdout\.json \(u2\)"
    ):
        membership_texts(d, corpus=corpus)
    with pytest.raises(DataFileError, match="different trainings"):
        control_users(d, [{"subject_id": "s", "user_id": "u1"}])


def test_a_trained_on_person_with_more_documents_than_in_training_is_refused_and_fewer_are_fine(tmp_path):
    """Mails written since training would be member texts the model never saw (train.json counts them)."""
    from lmleak.data.holdout import TRAIN_DOCUMENTS_KEY, trained_documents

    d = _model_dir(tmp_path, ["u1", "u2"], ["h1"])
    record = json.loads((d / TRAIN_FILE).read_text())
    (d / TRAIN_FILE).write_text(json.dumps({**record, TRAIN_DOCUMENTS_KEY: {"U1": 2, "u2": 2}}))
    assert trained_documents(d) == {"u1": 2, "u2": 2}
    corpus = _corpus(["u1", "u2", "h1"])  # two documents each, as trained
    later = Document(
        "u2", "u2-later", "From: u2 <u2@example.org>\nplease call 201-555-0199 about the new item"
    )
    grown = Corpus([*corpus.documents, later, Document("h1", "h1-later", "a held-out person may write more")])
    model = FakeLM.from_texts(corpus.texts(), order=3)
    with pytest.raises(
        ConfigError, match=r"1 person of grown\.jsonl \(u2\) has more documents .* u2: 3 against 2"
    ):
        run_report(
            model,
            Corpus(grown.documents, source="grown.jsonl"),
            tmp_path / "run",
            ReportConfig(k=(1,)),
            model_dir=d,
        )
    with pytest.raises(ConfigError, match=r"\(u2\) has more documents"):
        membership_texts(d, corpus=grown)
    fewer = Corpus([x for x in corpus.documents if x.doc_id != "u1-0"], source="fewer.jsonl")
    assert membership_texts(d, corpus=fewer).groups[0].count("u1") == 1  # a subset of the training documents
    (d / TRAIN_FILE).write_text(json.dumps({**record, TRAIN_DOCUMENTS_KEY: {"u1": "two"}}))
    with pytest.raises(DataFileError, match=TRAIN_DOCUMENTS_KEY):
        trained_documents(d)


def test_lmleak_train_counts_each_trained_on_persons_documents_in_train_json(tmp_path):
    from lmleak.data.holdout import TRAIN_DOCUMENTS_KEY
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model

    corpus = _corpus(["u1", "u2", "u3", "u4", "u5", "u6"])
    cfg = TrainConfig(epochs=1, n_layer=1, n_embd=16, n_head=2, seq_len=32, vocab_size=120, batch_size=4,
                      holdout_users=0.34)  # fmt: skip
    res = train_model(corpus, tmp_path / "m", cfg)
    record = json.loads((tmp_path / "m" / TRAIN_FILE).read_text())
    # the oracle: the training users' documents counted by hand
    assert record[TRAIN_DOCUMENTS_KEY] == {u: 2 for u in res.train_users}
    assert sum(record[TRAIN_DOCUMENTS_KEY].values()) == record["num_train_documents"]
