"""Corpus loaders: every format round-trips; every bad row is located precisely."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmleak.data.corpus import Corpus, Document
from lmleak.data.loaders import load_corpus, load_corpus_with_report
from lmleak.errors import CorpusError

DOCS = [
    Document("u1", "a", "hello there"),
    Document("u2", "b", "my phone is 555-0101"),
    Document("u1", "c", "bye, now"),
]


def rows():
    return [d.to_dict() for d in DOCS]


def as_tuples(corpus):
    return [(d.user_id, d.doc_id, d.text) for d in corpus]


def test_every_format_loads_the_same_corpus(tmp_path):
    Corpus(DOCS).write_jsonl(tmp_path / "c.jsonl")
    pd.DataFrame(rows()).to_csv(tmp_path / "c.csv", index=False)
    pd.DataFrame(rows()).to_parquet(tmp_path / "c.parquet")
    for d in DOCS:
        (tmp_path / "folder" / d.user_id).mkdir(parents=True, exist_ok=True)
        (tmp_path / "folder" / d.user_id / f"{d.doc_id}.txt").write_text(d.text)
    expected = as_tuples(DOCS)
    for name in ("c.jsonl", "c.csv", "c.parquet"):
        assert as_tuples(load_corpus(tmp_path / name)) == expected
    folder = load_corpus(tmp_path / "folder")
    assert sorted((d.user_id, d.text) for d in folder) == sorted((u, t) for u, _, t in expected)


def test_a_saved_hugging_face_dataset_loads_with_configurable_columns(tmp_path):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"who": [d.user_id for d in DOCS], "body": [d.text for d in DOCS]})
    ds.save_to_disk(str(tmp_path / "ds"))
    corpus = load_corpus(tmp_path / "ds", text_field="body", user_field="who")
    assert [d.text for d in corpus] == [d.text for d in DOCS]
    with pytest.raises(CorpusError, match="columns"):
        load_corpus(tmp_path / "ds")


def test_missing_doc_ids_are_derived_stably(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text("".join(json.dumps({"user_id": d.user_id, "text": d.text}) + "\n" for d in DOCS))
    ids = [d.doc_id for d in load_corpus(p)]
    assert ids == [d.doc_id for d in load_corpus(p)] and len(set(ids)) == 3


@pytest.mark.parametrize(
    "line, field, reason",
    [
        ('{"user_id": "u", "doc_id": "x"}', "text", "missing"),
        ('{"user_id": "u", "doc_id": "x", "text": "  "}', "text", "empty"),
        ('{"user_id": 3, "doc_id": "x", "text": "t"}', "user_id", "expected a string"),
        ('{"user_id": "u", "doc_id": "a", "text": "t"}', "doc_id", "duplicate"),
        ('{"user_id": "u", "text": ', None, "invalid JSON"),
        ("[1, 2]", None, "expected an object"),
    ],
)
def test_bad_rows_name_the_file_line_and_field(tmp_path, line, field, reason):
    p = tmp_path / "c.jsonl"
    p.write_text('{"user_id": "u", "doc_id": "a", "text": "ok"}\n' + line + "\n")
    with pytest.raises(CorpusError) as e:
        load_corpus(p)
    msg = str(e.value)
    assert "c.jsonl:2:" in msg and reason in msg and "Fix:" in msg
    if field:
        assert f"field '{field}'" in msg
    corpus, report = load_corpus_with_report(p, skip_bad_rows=True)
    assert len(corpus) == 1 and len(report.skipped) == 1 and report.skipped[0][0] == 2


def test_undecodable_bytes_are_reported_with_the_line(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(b'{"user_id": "u", "text": "ok"}\n{"user_id": "u", "text": "\xff\xfe"}\n')
    with pytest.raises(CorpusError, match=r"c.jsonl:2: not UTF-8"):
        load_corpus(p)


def test_a_missing_file_and_an_unknown_extension_are_clear_errors(tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        load_corpus(tmp_path / "nope.jsonl")
    (tmp_path / "c.xml").write_text("<x/>")
    with pytest.raises(CorpusError, match="format"):
        load_corpus(tmp_path / "c.xml")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.one_of(st.text(max_size=40), st.binary(max_size=40).map(lambda b: b.decode("latin-1"))), max_size=6
    )
)
def test_random_lines_give_a_corpus_or_a_corpus_error_never_anything_else(tmp_path, lines):
    p = tmp_path / "fuzz.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
    try:
        corpus = load_corpus(p)
    except CorpusError as e:
        assert "fuzz.jsonl" in str(e)
    else:
        assert all(d.text.strip() for d in corpus)
