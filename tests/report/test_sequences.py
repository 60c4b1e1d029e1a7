"""The multiset S (paper 001): runs of hits cut at document boundaries, against a loop per document."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.report.sequences import leaked_runs, sequence_id

docs = st.lists(st.lists(st.booleans(), max_size=12), min_size=1, max_size=6)


def runs_from_ranks(ranks: np.ndarray, k: int) -> list[tuple[int, int]]:
    """Runs of ``rank <= k`` in one document as ``(start, end)`` pairs (a thin wrapper for tests).

    Example:
        >>> runs_from_ranks(np.array([1, 2, 5, 1]), 2)
        [(0, 2), (3, 4)]
    """
    ranks = np.asarray(ranks)
    _, s, e = leaked_runs(ranks <= k, np.array([0, ranks.size]))
    return list(zip(s.tolist(), e.tolist(), strict=True))


def _runs_by_loop(doc_hits: list[list[bool]]) -> list[tuple[int, int, int]]:
    out = []
    for d, hits in enumerate(doc_hits):
        start = None
        for i, h in enumerate([*hits, False]):
            if h and start is None:
                start = i
            elif not h and start is not None:
                out.append((d, start, i))
                start = None
    return out


@settings(max_examples=80, deadline=None)
@given(docs)
def test_runs_equal_a_loop_over_each_document_and_never_cross_a_boundary(doc_hits):
    hits = np.array([h for d in doc_hits for h in d], dtype=bool)
    offsets = np.cumsum([0] + [len(d) for d in doc_hits])
    doc, start, end = leaked_runs(hits, offsets)
    assert list(zip(doc.tolist(), start.tolist(), end.tolist(), strict=True)) == _runs_by_loop(doc_hits)


def test_runs_from_ranks_and_an_empty_ledger():
    assert runs_from_ranks(np.array([3, 1, 1, 4, 2]), 2) == [(1, 3), (4, 5)]
    assert [a.tolist() for a in leaked_runs(np.zeros(0, bool), np.array([0]))] == [[], [], []]


def test_sequence_ids_depend_on_the_tokens_only():
    a = sequence_id(np.array([1, 2, 3], dtype=np.int32))
    assert a == sequence_id(np.array([1, 2, 3], dtype=np.int64)) and len(a) == 16
    assert a != sequence_id(np.array([1, 2])) != sequence_id(np.array([3, 2, 1]))
