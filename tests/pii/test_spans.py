"""PII span arithmetic against character-set oracles."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.pii.spans import PiiSpan, detect_many, merge_spans, resolve_overlaps

spans = st.lists(
    st.tuples(st.integers(0, 30), st.integers(1, 8), st.sampled_from(["A", "B"])).map(
        lambda t: PiiSpan(t[0], t[0] + t[1], t[2])
    ),
    max_size=12,
)


@settings(max_examples=80, deadline=None)
@given(spans)
def test_merged_intervals_cover_exactly_the_characters_of_the_spans_and_are_disjoint(ss):
    merged = merge_spans(ss)
    covered = {i for s in ss for i in range(s.start, s.end)}
    assert {i for a, b in merged for i in range(a, b)} == covered
    assert all(b1 < a2 for (_, b1), (a2, _) in zip(merged, merged[1:], strict=False))  # not even touching


@settings(max_examples=80, deadline=None)
@given(spans)
def test_resolution_drops_only_contained_spans_and_keeps_the_coverage(ss):
    kept = resolve_overlaps(ss)
    assert set(kept) <= set(ss)
    for s in set(ss) - set(kept):
        assert any(k.start <= s.start and s.end <= k.end for k in kept)
    for a in kept:  # no kept span lies inside another kept span
        assert not any(b != a and b.start <= a.start and a.end <= b.end for b in kept)
    assert merge_spans(kept) == merge_spans(ss)


def test_an_equal_region_keeps_the_higher_score():
    assert resolve_overlaps([PiiSpan(0, 4, "DIGITS", 0.4), PiiSpan(0, 4, "PHONE", 0.9)]) == [
        PiiSpan(0, 4, "PHONE", 0.9)
    ]


def test_overlap_shift_and_validation():
    s = PiiSpan(3, 8, "PHONE")
    assert (s.overlap(0, 4), s.overlap(5, 20), s.overlap(8, 9)) == (1, 3, 0)
    assert s.shifted(10) == PiiSpan(13, 18, "PHONE")
    for start, end in [(4, 4), (5, 2), (-1, 3)]:
        with pytest.raises(ValueError):
            PiiSpan(start, end, "X")


def test_detect_many_uses_the_batch_path_when_there_is_one():
    class One:
        def detect(self, text):
            return [PiiSpan(0, 1, "ONE")] if text else []

    class Batch(One):
        batches: list[list[str]] = []

        def detect_many(self, texts):
            self.batches.append(texts)
            return [self.detect(t) for t in texts]

    assert detect_many(One(), ["a", ""]) == [[PiiSpan(0, 1, "ONE")], []]
    b = Batch()
    assert detect_many(b, ("a", "b")) == [[PiiSpan(0, 1, "ONE")]] * 2
    assert b.batches == [["a", "b"]]
