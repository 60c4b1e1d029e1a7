"""The multiset S of the tab attack, derived from the ledger (paper 001 §4, Algorithm 1).

S holds every maximal run of consecutive positions of a document whose true token is among the
model's top-k predictions given the document's prefix. Algorithm 1 as printed appends a run to S
only when a miss follows it, so a run reaching the end of a document is lost; here trailing runs
are flushed (the paper's text and Table 1 count every correct-prediction run).

:func:`leaked_runs` is the vectorised implementation over the ledger's flat arrays; Algorithm 1
itself (one model query per prefix, trailing runs flushed) is the slow oracle in
``tests/ledger/test_ledger.py`` that it is compared with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lmleak.ledger.ledger import Ledger


def leaked_runs(hits: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of ``True`` in ``hits`` that do not cross document boundaries.

    Args:
        hits: bool per token position, documents concatenated.
        offsets: int, ``num_docs + 1`` document boundaries into ``hits``.

    Returns:
        ``(doc, start, end)``: document number and token offsets inside that document (end
        exclusive), in document then position order. A run ending a document is included.

    Example:
        >>> hits = np.array([1, 1, 0, 1, 1, 1, 0, 1], dtype=bool)
        >>> leaked_runs(hits, np.array([0, 4, 8]))
        (array([0, 0, 1, 1]), array([0, 3, 0, 3]), array([2, 4, 2, 4]))
    """
    hits = np.asarray(hits, dtype=bool)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = hits.size
    if n == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e.copy(), e.copy()
    boundary_start = np.zeros(n, dtype=bool)
    starts_in = offsets[:-1][offsets[:-1] < n]
    boundary_start[starts_in] = True  # first position of each (non-empty) document
    prev = np.concatenate([[False], hits[:-1]])
    nxt = np.concatenate([hits[1:], [False]])
    boundary_end = np.zeros(n, dtype=bool)
    ends_in = offsets[1:] - 1
    boundary_end[ends_in[(ends_in >= 0) & (ends_in < n)]] = True  # last position of each document
    run_start = hits & (~prev | boundary_start)
    run_end = hits & (~nxt | boundary_end)
    s = np.nonzero(run_start)[0]
    e = np.nonzero(run_end)[0] + 1
    doc = np.searchsorted(offsets, s, side="right") - 1
    return doc.astype(np.int64), (s - offsets[doc]).astype(np.int64), (e - offsets[doc]).astype(np.int64)


def ledger_hits(ledger: Ledger, k: int, *, max_top1_perplexity: float | None = None) -> np.ndarray:
    """Positions where the tab attack sees the true token: rank <= k (and, for API hardening,
    the model answers at all: top-1 perplexity ``exp(-top1_logprob)`` <= the threshold; §6.1)."""
    ledger.check_k(k)
    hits = ledger.ranks <= k
    if max_top1_perplexity is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            hits &= np.exp(-ledger.top1_logprobs.astype(np.float64)) <= max_top1_perplexity
    return hits


def sequence_id(tokens: np.ndarray) -> str:
    """A stable 16-hex-digit id of a token sequence (xxh3-64 over its int64 ids).

    The id is the same for the same tokens in every run and every k, so redacted reports can be
    joined without the text.

    Example:
        >>> sequence_id(np.array([5, 6])) == sequence_id(np.array([5, 6], dtype=np.int32))
        True
    """
    import xxhash

    return xxhash.xxh3_64_hexdigest(np.ascontiguousarray(tokens, dtype=np.int64).tobytes())


def occurrences(ledger: Ledger, ks: Sequence[int], *, max_top1_perplexity: float | None = None) -> Any:
    """The multiset S for each k, one row per element: ``doc_id, user_id, start, end, k, sequence_id``.

    Also carries ``doc`` (the ledger's document number) for joins inside the report.
    """
    import pandas as pd

    frames = []
    for k in ks:
        doc, start, end = leaked_runs(
            ledger_hits(ledger, k, max_top1_perplexity=max_top1_perplexity), ledger.offsets
        )
        base = ledger.offsets[doc]
        ids = [
            sequence_id(ledger.token_ids[b + s : b + e])
            for b, s, e in zip(base.tolist(), start.tolist(), end.tolist(), strict=True)
        ]
        frames.append(
            pd.DataFrame(
                {
                    "doc_id": pd.Series([ledger.doc_ids[d] for d in doc.tolist()], dtype=object),
                    "user_id": pd.Series([ledger.user_ids[d] for d in doc.tolist()], dtype=object),
                    "start": start,
                    "end": end,
                    "k": np.full(doc.size, int(k), dtype=np.int64),
                    "sequence_id": pd.Series(ids, dtype=object),
                    "doc": doc,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
