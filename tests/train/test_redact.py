"""Redact_π (paper 002 section 3.2, A.5 rule 4): no character of a detected span survives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.data.corpus import Corpus, Document
from lmleak.pii.policies import get_policy
from lmleak.pii.regex import RegexDetector
from lmleak.pii.spans import MASK, PiiSpan
from lmleak.train.redact import redact_corpus, redact_text

PII = st.sampled_from(
    [
        "(201) 555-0142",
        "jane.doe7@example.org",
        "ORD-12345678",
        "1ZA2B3C4D5E6F7G8H9",
        "123-45-6789",
        "192.168.1.20",
        "4111 1111 1111 1111",
        "12/31/2020",
    ]
)
FILLER = st.text(alphabet="abc xyz,.!", max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(FILLER, PII), max_size=5), FILLER)
def test_redacted_text_never_contains_a_detected_span(pairs, tail):
    text = "".join(f"{f} {p} " for f, p in pairs) + tail
    det = RegexDetector()
    spans = det.detect(text)
    red = redact_text(text, spans)
    for s in spans:
        assert text[s.start : s.end] not in red.replace(MASK, "\x00")
    assert det.detect(red.replace(MASK, " ")) == []  # nothing detectable is left
    assert red.count(MASK) <= len(spans)


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="ab ", max_size=30),
    st.lists(st.tuples(st.integers(0, 29), st.integers(1, 6)), max_size=6),
)
def test_redaction_matches_char_level_oracle(text, raw):
    spans = [
        PiiSpan(a, min(a + n, len(text))) if False else PiiSpan(a, a + n, "X")
        for a, n in raw
        if a + n <= len(text)
    ]
    red = redact_text(text, spans)
    masked = [any(s.start <= i < s.end for s in spans) for i in range(len(text))]
    # oracle: walk the characters, emitting one MASK per maximal run of masked-or-adjacent spans
    expect, i = [], 0
    regions = sorted((s.start, s.end) for s in spans)
    merged = []
    for a, b in regions:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    for a, b in merged:
        expect.append(text[i:a])
        expect.append(MASK)
        i = b
    expect.append(text[i:])
    assert red == "".join(expect)
    kept = "".join(c for c, m in zip(text, masked, strict=False) if not m)
    assert red.replace(MASK, "") == kept


def test_redact_corpus_counts_per_entity_and_skips_masks():
    c = Corpus(
        [
            Document("u", "d#s0", "Call (201) 555-0142 or ORD-12345678."),
            Document("u", "d#s1", MASK),
            Document("u", "d#s2", "Nothing here."),
        ]
    )
    out, st_ = redact_corpus(c, get_policy("regex"))
    assert [d.text for d in out] == ["Call <MASK> or <MASK>.", MASK, "Nothing here."]
    assert st_.to_dict()["removed"] == {"ORDER_ID": 1, "PHONE": 1}
    assert st_.redacted_sentences == 1
