"""The one span type shared by every detector, policy, evaluator and redactor.

Like Presidio's ``RecognizerResult`` (entity, start, end, score), detection and transformation
share a single type, so a redactor never needs to know which detector produced a span.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

MASK = "<MASK>"
"""The single mask token of CRT: dedup and redaction both write it (paper 002, A.5 rule 4)."""


@dataclass(frozen=True, slots=True, order=True)
class PiiSpan:
    """A half-open character span ``text[start:end]`` detected as PII of type ``entity``.

    Entities use lmleak's names (PERSON, LOCATION, ADDRESS, PHONE, EMAIL, SSN, CREDIT_CARD,
    URL, IP, DATE, ORDER_ID, TRACKING_ID, DIGITS, CAPITALISED, ...); ``score`` is the detector's
    confidence in [0, 1] (1.0 for regular expressions).

    Example:
        >>> s = PiiSpan(3, 8, "PHONE")
        >>> "at 555-0101"[s.start:s.end], len(s)
        ('555-0', 5)
    """

    start: int
    end: int
    entity: str
    score: float = 1.0

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.end:
            raise ValueError(f"invalid span [{self.start}, {self.end})")

    def __len__(self) -> int:
        return self.end - self.start

    def overlap(self, start: int, end: int) -> int:
        """Number of characters shared with ``[start, end)``."""
        return max(0, min(self.end, end) - max(self.start, start))

    def shifted(self, offset: int) -> PiiSpan:
        """The same span moved by ``offset`` characters (sentence -> document coordinates)."""
        return PiiSpan(self.start + offset, self.end + offset, self.entity, self.score)


@runtime_checkable
class Detector(Protocol):
    """Anything that finds PII spans in a text."""

    def detect(self, text: str) -> list[PiiSpan]: ...


def detect_many(detector: Detector, texts: Sequence[str]) -> list[list[PiiSpan]]:
    """Detect in many texts, through the detector's batch path when it has one.

    Example:
        >>> from lmleak.pii.regex import RegexDetector
        >>> [[s.entity for s in r] for r in detect_many(RegexDetector(), ["no pii", "ORD-12345678"])]
        [[], ['ORDER_ID']]
    """
    batch = getattr(detector, "detect_many", None)
    if batch is not None:
        return batch(list(texts))
    return [detector.detect(t) for t in texts]


def merge_spans(spans: Iterable[PiiSpan]) -> list[tuple[int, int]]:
    """The union of the spans as sorted, disjoint ``(start, end)`` intervals.

    Overlapping or touching spans merge, so redaction writes one mask per contiguous region.

    Example:
        >>> merge_spans([PiiSpan(5, 9, "A"), PiiSpan(0, 3, "B"), PiiSpan(2, 6, "C"), PiiSpan(12, 13, "D")])
        [(0, 9), (12, 13)]
    """
    out: list[list[int]] = []
    for s in sorted(spans, key=lambda s: (s.start, s.end)):
        if out and s.start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], s.end)
        else:
            out.append([s.start, s.end])
    return [(a, b) for a, b in out]


def resolve_overlaps(spans: Iterable[PiiSpan]) -> list[PiiSpan]:
    """Drop spans contained in a longer (or equal, higher-scoring) span; keep partial overlaps.

    Used by composition so one region detected by two detectors counts once per entity region.

    Example:
        >>> resolve_overlaps([PiiSpan(0, 10, "ADDRESS"), PiiSpan(0, 4, "DIGITS"), PiiSpan(8, 12, "LOCATION")])
        [PiiSpan(start=0, end=10, entity='ADDRESS', score=1.0), PiiSpan(start=8, end=12, entity='LOCATION', score=1.0)]
    """
    ranked = sorted(set(spans), key=lambda s: (-(s.end - s.start), -s.score, s.start, s.entity))
    kept: list[PiiSpan] = []
    for s in ranked:
        if any(k.start <= s.start and s.end <= k.end for k in kept):
            continue
        kept.append(s)
    return sorted(kept, key=lambda s: (s.start, s.end, s.entity))
