"""Composition of detectors: a policy is the union of what its detectors find.

Redaction masks the union of spans anyway (:func:`lmleak.pii.spans.merge_spans`); the union here
keeps each span with its entity so removal can be counted per entity, and drops spans contained
in a longer one (an e-mail that Presidio also calls a URL counts once, as the longer detection).
"""

from __future__ import annotations

from collections.abc import Sequence

from lmleak.pii.spans import Detector, PiiSpan, detect_many, resolve_overlaps


class UnionDetector:
    """Every span any of ``detectors`` finds, nested duplicates removed.

    Example:
        >>> from lmleak.pii.regex import RegexDetector, DIGIT_PATTERNS
        >>> d = UnionDetector([RegexDetector(), RegexDetector(DIGIT_PATTERNS)], name="both")
        >>> [(s.entity, s.start, s.end) for s in d.detect("ORD-12345678 and 42")]
        [('ORDER_ID', 0, 12), ('DIGITS', 17, 19)]
    """

    def __init__(self, detectors: Sequence[Detector], *, name: str = "union") -> None:
        self.detectors = list(detectors)
        self.name = name

    def detect(self, text: str) -> list[PiiSpan]:
        return resolve_overlaps(s for d in self.detectors for s in d.detect(text))

    def detect_many(self, texts: Sequence[str]) -> list[list[PiiSpan]]:
        per = [detect_many(d, texts) for d in self.detectors]
        return [resolve_overlaps(s for spans in row for s in spans) for row in zip(*per, strict=True)]
