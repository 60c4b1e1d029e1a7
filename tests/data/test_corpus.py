"""Corpus: stable ids, user grouping and selection, unique ids, JSONL round trip."""

from __future__ import annotations

import hashlib
import json

import pytest

from lmleak.data.corpus import Corpus, Document, stable_doc_id
from lmleak.errors import CorpusError


def _corpus() -> Corpus:
    docs = [("u2", "b"), ("u1", "a"), ("u2", "c"), ("u3", "d"), ("u1", "e")]
    return Corpus([Document(u, f"d{i}", t) for i, (u, t) in enumerate(docs)], source="x.jsonl")


def test_stable_ids_are_the_sha1_of_the_text_with_user_and_ordinal():
    assert stable_doc_id("u", "héllo", 3) == "u-3-" + hashlib.sha1("héllo".encode()).hexdigest()[:10]
    assert stable_doc_id("u", "a", 0) != stable_doc_id("u", "a", 1) != stable_doc_id("v", "a", 1)


def test_users_groups_and_selections_keep_first_appearance_order():
    c = _corpus()
    assert c.users == ["u2", "u1", "u3"]
    assert {u: [d.text for d in ds] for u, ds in c.by_user().items()} == {
        "u2": ["b", "c"],
        "u1": ["a", "e"],
        "u3": ["d"],
    }
    assert c.select_users(["u1", "u3"]).texts() == ["a", "d", "e"]
    assert c.without_users(["u1"]).texts() == ["b", "c", "d"]
    assert c.select_users(["u1"]).source == "x.jsonl"
    assert c.get("d3").text == "d" and c[0].user_id == "u2" and len(c) == 5


def test_duplicate_ids_are_refused_naming_the_line():
    with pytest.raises(CorpusError, match="duplicate doc_id 'x'") as e:
        Corpus([Document("u", "x", "a"), Document("v", "y", "b"), Document("w", "x", "c")], source="c.jsonl")
    assert "c.jsonl" in str(e.value)


def test_jsonl_round_trip(tmp_path):
    c = _corpus()
    p = c.write_jsonl(tmp_path / "out" / "c.jsonl")
    rows = [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()]
    assert rows == [d.to_dict() for d in c]
    assert sorted(f.name for f in p.parent.iterdir()) == ["c.jsonl"]
