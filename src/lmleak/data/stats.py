"""Corpus statistics that change how a leakage report reads (``lmleak corpus check``).

Three traits of real corpora distort paper 001's counts if nobody looks first:

- **Repeated lines** (footers, disclaimers, quoted replies, digests): the tab attack then finds
  boilerplate, and a "sequence" is counted once per copy. ``duplicate_line_share`` is the share of
  non-empty lines (stripped of surrounding whitespace) whose text occurs more than once.
- **A few heavy users**: user-level counts (users in S, users in D) are driven by them.
  ``top1pct_user_share`` is the share of words written by the top 1 % of users (at least one user).
- **PII density**: ``pii_per_1k_words`` — detected PII spans per 1,000 whitespace words, by the
  detector the caller passes (the CLI uses the fast regex detector).

One streaming pass; memory grows with the number of *distinct* lines (kept as 8-byte hashes) and
users, not with the corpus text.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import xxhash

from lmleak.data.corpus import Document
from lmleak.data.loaders import load_corpus_with_report

#: Warn above these values (the real changelog corpus that motivated them: 66 % repeated lines).
DUPLICATE_WARN = 0.3
TOP_USERS_WARN = 0.25


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """What :func:`corpus_stats` measured; ``warnings`` say how each value distorts a report."""

    documents: int
    users: int
    words: int
    lines: int
    duplicate_line_share: float
    top1pct_users: int
    top1pct_user_share: float
    top1pct_document_share: float
    pii_spans: int | None
    pii_per_1k_words: float | None
    pii_per_entity: dict[str, int] = field(default_factory=dict)
    longest_document_words: int = 0
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def corpus_stats(documents: Iterable[Document], *, detector: Any | None = None) -> CorpusStats:
    """Measure repeated lines, user concentration and PII density in one pass.

    Args:
        documents: the corpus (any iterable of :class:`Document`, e.g. a streaming loader).
        detector: an object with ``detect(text) -> list[PiiSpan]``; None skips the PII density.

    Example:
        >>> docs = [Document("u1", "a", "Hi\\n-- \\nlist footer"), Document("u2", "b", "Yo\\nlist footer")]
        >>> s = corpus_stats(docs)
        >>> s.lines, s.duplicate_line_share, s.top1pct_user_share
        (5, 0.4, 0.571429)
    """
    line_counts: Counter[int] = Counter()
    words_by_user: Counter[str] = Counter()
    docs_by_user: Counter[str] = Counter()
    entities: Counter[str] = Counter()
    n_docs = n_words = longest = 0
    for doc in documents:
        n_docs += 1
        words = len(doc.text.split())
        n_words += words
        longest = max(longest, words)
        words_by_user[doc.user_id] += words
        docs_by_user[doc.user_id] += 1
        for line in doc.text.split("\n"):
            line = line.strip()
            if line:
                line_counts[xxhash.xxh3_64_intdigest(line.encode("utf-8", "surrogatepass"))] += 1
        if detector is not None:
            entities.update(s.entity for s in detector.detect(doc.text))
    n_lines = sum(line_counts.values())
    repeated = sum(c for c in line_counts.values() if c > 1)
    dup = repeated / n_lines if n_lines else 0.0
    top_n = max(1, round(0.01 * len(words_by_user))) if words_by_user else 0
    top_users = [u for u, _ in heapq.nlargest(top_n, words_by_user.items(), key=lambda kv: (kv[1], kv[0]))]
    top_words = sum(words_by_user[u] for u in top_users)
    top_docs = sum(docs_by_user[u] for u in top_users)
    user_share = top_words / n_words if n_words else 0.0
    n_pii = sum(entities.values()) if detector is not None else None
    density = 1000.0 * n_pii / n_words if n_pii is not None and n_words else (None if n_pii is None else 0.0)
    return CorpusStats(
        documents=n_docs,
        users=len(words_by_user),
        words=n_words,
        lines=n_lines,
        duplicate_line_share=round(dup, 6),
        top1pct_users=top_n,
        top1pct_user_share=round(user_share, 6),
        top1pct_document_share=round(top_docs / n_docs, 6) if n_docs else 0.0,
        pii_spans=n_pii,
        pii_per_1k_words=None if density is None else round(density, 3),
        pii_per_entity=dict(sorted(entities.items())),
        longest_document_words=longest,
        warnings=tuple(_warnings(dup, user_share, top_n, len(words_by_user), longest)),
    )


def _warnings(dup: float, user_share: float, top_n: int, users: int, longest: int) -> list[str]:
    out = []
    if dup > DUPLICATE_WARN:
        out.append(
            f"{dup:.0%} of non-empty lines are repeated (footers, quotes, signatures): the leakage report will "
            "count boilerplate as leaked sequences, once per copy. Run `lmleak dedup` first, or read the "
            "user-unique counts and the p filter rather than the raw sequence count."
        )
    if users >= 2 and user_share > TOP_USERS_WARN:
        out.append(
            f"the top 1% of users ({top_n} of {users}) wrote {user_share:.0%} of the words: user-level counts "
            "(users in S, users in D) and membership results are driven by them; report per-user results "
            "and hold users out (`lmleak train --holdout-users`) rather than documents."
        )
    if longest > 100_000:
        out.append(
            f"the longest document has {longest:,} words: a model sees it through sliding windows, and "
            "leaked sequences are scored with a bounded context; check the window sizes in the report summary."
        )
    return out


@dataclass(frozen=True, slots=True)
class CorpusCheck:
    """What ``lmleak corpus check`` found: the corpus's size per user, its :class:`CorpusStats` and the
    rows the loader skipped (line, reason)."""

    path: str
    documents: int
    users: int
    docs_per_user_min: int
    docs_per_user_max: int
    stats: CorpusStats
    skipped: tuple[tuple[int, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The ``corpus check --json`` object: sizes, users, repetition, concentration, PII, skipped rows."""
        s = self.stats
        return {
            "path": self.path,
            "documents": self.documents,
            "users": self.users,
            "docs_per_user_min": self.docs_per_user_min,
            "docs_per_user_max": self.docs_per_user_max,
            "words": s.words,
            "longest_document_words": s.longest_document_words,
            "duplicate_line_share": s.duplicate_line_share,
            "top1pct_users": s.top1pct_users,
            "top1pct_user_share": s.top1pct_user_share,
            "top1pct_document_share": s.top1pct_document_share,
            "pii_per_1k_words": s.pii_per_1k_words,
            "pii_per_entity": s.pii_per_entity,
            "warnings": list(s.warnings),
            "skipped_rows": [{"line": line, "reason": reason} for line, reason in self.skipped],
        }


def check_corpus(path: str | Path, *, detector: Any | None = None, **load_options: Any) -> CorpusCheck:
    """Load the corpus at ``path`` (``load_options``: those of :func:`~lmleak.data.loaders.load_corpus`)
    and measure it with :func:`corpus_stats` (``detector``: the PII detector for the density).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.jsonl"
        >>> _ = p.write_text('{"user_id": "u1", "text": "a b"}\\n{"user_id": "u1", "text": "c"}\\n{"user_id": "u2", "text": "d"}\\n')
        >>> r = check_corpus(p)
        >>> r.documents, r.users, r.docs_per_user_min, r.docs_per_user_max, r.stats.words
        (3, 2, 1, 2, 4)
    """
    corpus, report = load_corpus_with_report(path, **load_options)
    stats = corpus_stats(corpus, detector=detector)
    per_user = [len(v) for v in corpus.by_user().values()]
    return CorpusCheck(str(path), len(corpus), len(per_user), min(per_user), max(per_user), stats,
                       tuple((line, reason) for line, reason in report.skipped))  # fmt: skip
