"""UnionDetector: every detector's spans, nested duplicates removed, batch path = one text at a time."""

from __future__ import annotations

from lmleak.pii.compose import UnionDetector
from lmleak.pii.spans import PiiSpan, resolve_overlaps


class _Words:
    """Flags every occurrence of one word."""

    def __init__(self, word: str, entity: str) -> None:
        self.word, self.entity = word, entity

    def detect(self, text: str) -> list[PiiSpan]:
        out, i = [], text.find(self.word)
        while i >= 0:
            out.append(PiiSpan(i, i + len(self.word), self.entity))
            i = text.find(self.word, i + 1)
        return out


def test_union_keeps_every_region_once_and_drops_nested_ones():
    d = UnionDetector([_Words("Main Street", "ADDRESS"), _Words("Main", "PERSON"), _Words("555", "PHONE")])
    text = "Main Street 555, call Main"
    assert [(s.entity, text[s.start : s.end]) for s in d.detect(text)] == [
        ("ADDRESS", "Main Street"),
        ("PHONE", "555"),
        ("PERSON", "Main"),
    ]


def test_batch_path_equals_one_text_at_a_time():
    parts = [_Words("ab", "X"), _Words("b", "Y"), _Words("bc", "Z")]
    d = UnionDetector(parts, name="u")
    texts = ["abc", "", "bcab", "xyz b"]
    assert d.detect_many(texts) == [d.detect(t) for t in texts]
    assert d.detect_many(texts) == [resolve_overlaps(s for p in parts for s in p.detect(t)) for t in texts]
    assert d.name == "u"
