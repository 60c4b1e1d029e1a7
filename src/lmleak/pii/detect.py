"""The spans a PII policy detects in a corpus or one text, as typed rows (``lmleak pii detect``)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Corpus
from lmleak.data.loaders import load_corpus
from lmleak.errors import InputError
from lmleak.pii.policies import get_policy
from lmleak.pii.spans import Detector, detect_many
from lmleak.runs import atomic_write_text


@dataclass(frozen=True, slots=True)
class Detection:
    """One detected span, located in its document, with the text it covers."""

    doc_id: str
    user_id: str
    start: int
    end: int
    entity: str
    score: float
    value: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON row: ``doc_id, user_id, start, end, entity, score, value``."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class DetectionResult:
    """Every span one policy found in ``documents`` documents."""

    policy: str
    documents: int
    detections: tuple[Detection, ...]

    @property
    def counts(self) -> dict[str, int]:
        """Detections per entity, entities sorted by name."""
        return dict(sorted(Counter(d.entity for d in self.detections).items()))

    def rows(self) -> list[dict[str, Any]]:
        return [d.to_dict() for d in self.detections]

    def summary(self, *, spans: bool = True) -> dict[str, Any]:
        """The ``pii detect --json`` object: ``policy``, ``counts`` and ``spans`` (the rows, or with
        ``spans=False`` only their number)."""
        rows = self.rows()
        return {"policy": self.policy, "counts": self.counts, "spans": rows if spans else len(rows)}

    def write_jsonl(self, path: str | Path) -> Path:
        """One JSON row per detection, written atomically and owner-only."""
        return atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows()))


def _detect(detector: Detector, docs: Sequence[tuple[str, str, str]], name: str) -> DetectionResult:
    found = detect_many(detector, [text for _, _, text in docs])
    detections = tuple(
        Detection(doc_id, user_id, s.start, s.end, s.entity, round(s.score, 4), text[s.start : s.end])
        for (doc_id, user_id, text), spans in zip(docs, found, strict=True)
        for s in spans
    )
    return DetectionResult(getattr(detector, "name", name), len(docs), detections)


def detect_in_corpus(detector: Detector, corpus: Corpus, *, name: str = "policy") -> DetectionResult:
    """The spans ``detector`` finds in every document (``name``: the policy's name if it has none)."""
    return _detect(detector, [(d.doc_id, d.user_id, d.text) for d in corpus], name)


def detect_in_text(detector: Detector, text: str, *, name: str = "policy") -> DetectionResult:
    """The spans ``detector`` finds in one text (doc_id ``text``, user_id ``-``).

    Example:
        >>> from lmleak.pii.regex import RegexDetector
        >>> r = detect_in_text(RegexDetector(), "order ORD-12345678", name="regex")
        >>> r.counts, r.detections[0].value
        ({'ORDER_ID': 1}, 'ORD-12345678')
    """
    return _detect(detector, [("text", "-", text)], name)


def detect_pii(
    policy: str,
    *,
    corpus: str | Path | None = None,
    text: str | None = None,
    recall: float | None = None,
    seed: int = 0,
    save: str | Path | None = None,
) -> DetectionResult:
    """The spans the named policy finds in exactly one of ``corpus`` (a corpus file) or ``text``;
    with ``save``, also written as JSONL there (:meth:`DetectionResult.write_jsonl`).

    Raises:
        InputError: neither or both of ``corpus`` and ``text``.
        ConfigError: an unknown policy name (raised after the corpus is read).

    Example:
        >>> r = detect_pii("regex", text="order ORD-12345678")
        >>> r.summary(spans=False)
        {'policy': 'regex', 'counts': {'ORDER_ID': 1}, 'spans': 1}
    """
    if (corpus is None) == (text is None):
        raise InputError("give exactly one of --corpus and --text", field="corpus")
    if text is not None:
        result = detect_in_text(get_policy(policy, recall=recall, seed=seed), text, name=policy)
    else:
        assert corpus is not None  # exactly one of the two, checked above
        docs = load_corpus(corpus)  # the corpus is read before the policy is built
        result = detect_in_corpus(get_policy(policy, recall=recall, seed=seed), docs, name=policy)
    if save is not None:
        result.write_jsonl(save)
    return result
