"""Redact_π: every span a policy detects becomes the single ``<MASK>`` token.

Paper 002, section 3.2 ("Redaction") and Algorithm 1 line 2; the token is the same one dedup
writes (appendix A.5 rule 4). Overlapping or touching detections merge into one masked region,
so a redacted text holds no character of any detected span.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lmleak.data.corpus import Corpus, Document
from lmleak.pii.spans import MASK, Detector, PiiSpan, detect_many, merge_spans


def redact_text(text: str, spans: Iterable[PiiSpan], mask: str = MASK) -> str:
    """``text`` with the union of ``spans`` replaced, one ``mask`` per contiguous region.

    Example:
        >>> t = "Call 555-0101 or 555-0102."
        >>> redact_text(t, [PiiSpan(5, 13, "PHONE"), PiiSpan(17, 25, "PHONE")])
        'Call <MASK> or <MASK>.'
    """
    parts: list[str] = []
    pos = 0
    for a, b in merge_spans(spans):
        parts.append(text[pos:a])
        parts.append(mask)
        pos = b
    parts.append(text[pos:])
    return "".join(parts)


@dataclass
class RedactStats:
    """Counts of one redaction pass; ``removed`` counts detections per entity."""

    policy: str
    sentences: int = 0
    redacted_sentences: int = 0
    removed: Counter[str] = field(default_factory=Counter)
    removed_chars: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "sentences": self.sentences, "redacted_sentences": self.redacted_sentences,
                "removed": dict(sorted(self.removed.items())), "removed_total": sum(self.removed.values()),
                "removed_chars": self.removed_chars}  # fmt: skip


def redact_corpus(corpus: Corpus, policy: Detector, *, mask: str = MASK) -> tuple[Corpus, RedactStats]:
    """Apply Redact_π to every document (sentence) of ``corpus``; ids, users and order kept.

    Sentences that are exactly ``mask`` (dedup's output) are not analysed.

    Example:
        >>> from lmleak.pii.policies import get_policy
        >>> c = Corpus([Document("u", "d#s0", "Order ORD-12345678 is late."), Document("u", "d#s1", "<MASK>")])
        >>> out, st = redact_corpus(c, get_policy("regex"))
        >>> [d.text for d in out], dict(st.removed)
        (['Order <MASK> is late.', '<MASK>'], {'ORDER_ID': 1})
    """
    stats = RedactStats(getattr(policy, "name", type(policy).__name__))
    todo = [i for i, d in enumerate(corpus) if d.text != mask]
    found = detect_many(policy, [corpus[i].text for i in todo])
    spans_of = dict(zip(todo, found, strict=True))
    docs = []
    for i, d in enumerate(corpus):
        stats.sentences += 1
        spans = spans_of.get(i, [])
        if spans:
            stats.redacted_sentences += 1
            stats.removed.update(s.entity for s in spans)
            stats.removed_chars += sum(b - a for a, b in merge_spans(spans))
            docs.append(Document(d.user_id, d.doc_id, redact_text(d.text, spans, mask)))
        else:
            docs.append(d)
    return Corpus(docs, source=corpus.source), stats
