"""pii.detect: the rows of ``lmleak pii detect`` equal the detector's spans located in their documents."""

from __future__ import annotations

import json

from lmleak.data.corpus import Corpus, Document
from lmleak.pii.detect import detect_in_corpus, detect_in_text
from lmleak.pii.spans import PiiSpan


class _Digits:
    """Flags every run of digits (score 0.123456, to see the rounding)."""

    name = "digits-test"

    def detect(self, text: str) -> list[PiiSpan]:
        out, i = [], 0
        while i < len(text):
            if text[i].isdigit():
                j = i
                while j < len(text) and text[j].isdigit():
                    j += 1
                out.append(PiiSpan(i, j, "DIGITS", 0.123456))
                i = j
            else:
                i += 1
        return out


def test_rows_counts_and_jsonl_equal_a_span_by_span_listing(tmp_path):
    corpus = Corpus(
        [Document("u1", "a", "call 555 0101"), Document("u2", "b", "none"), Document("u1", "c", "7")]
    )
    r = detect_in_corpus(_Digits(), corpus, name="fallback")
    assert r.policy == "digits-test" and r.documents == 3 and r.counts == {"DIGITS": 3}
    want = [
        {
            "doc_id": d.doc_id,
            "user_id": d.user_id,
            "start": s.start,
            "end": s.end,
            "entity": s.entity,
            "score": 0.1235,
            "value": d.text[s.start : s.end],
        }  # fmt: skip
        for d in corpus
        for s in _Digits().detect(d.text)
    ]
    assert r.rows() == want
    assert [row["value"] for row in want] == ["555", "0101", "7"]
    p = r.write_jsonl(tmp_path / "spans.jsonl")
    assert [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()] == want


def test_one_text_and_a_detector_without_a_name():
    class Nameless:
        def detect(self, text: str) -> list[PiiSpan]:
            return _Digits().detect(text)

    r = detect_in_text(Nameless(), "x 42", name="mine")
    assert r.policy == "mine" and r.documents == 1
    assert [(d.doc_id, d.user_id, d.start, d.end, d.value) for d in r.detections] == [
        ("text", "-", 2, 4, "42")
    ]


def test_detect_pii_on_text_and_on_a_corpus_file_equals_the_detector_and_saves_rows(tmp_path):
    import pytest

    from lmleak.errors import InputError
    from lmleak.pii.detect import detect_pii
    from lmleak.pii.policies import get_policy

    text = "order ORD-12345678, call 555-123-4567"
    r = detect_pii("regex", text=text)
    assert r == detect_in_text(get_policy("regex"), text, name="regex")
    assert r.summary() == {"policy": r.policy, "counts": r.counts, "spans": r.rows()}
    assert r.summary(spans=False)["spans"] == len(r.detections) >= 2

    corpus = Corpus([Document("u1", "d1", text), Document("u2", "d2", "no pii here")])
    path = corpus.write_jsonl(tmp_path / "c.jsonl")
    save = tmp_path / "spans.jsonl"
    rc = detect_pii("regex", corpus=path, save=save)
    assert rc == detect_in_corpus(get_policy("regex"), corpus, name="regex") and rc.documents == 2
    assert [json.loads(x) for x in save.read_text().splitlines()] == rc.rows()
    for bad in ({}, {"text": text, "corpus": path}):
        with pytest.raises(InputError, match="exactly one of --corpus and --text"):
            detect_pii("regex", **bad)
