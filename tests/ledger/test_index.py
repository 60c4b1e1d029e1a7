"""The corpus index against brute-force counting (paper 001 §4: total and user count in D)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.ledger.index import CorpusIndex


def _python_count(docs: list[list[int]], users: list[str], q: list[int]) -> tuple[int, int]:
    """The obvious oracle: count sliding-window matches document by document."""
    total, owners = 0, set()
    m = len(q)
    for doc, user in zip(docs, users, strict=True):
        hits = sum(1 for i in range(len(doc) - m + 1) if doc[i : i + m] == q) if m else 0
        total += hits
        if hits:
            owners.add(user)
    return total, len(owners)


docs_strategy = st.lists(st.lists(st.integers(0, 5), min_size=0, max_size=25), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    docs=docs_strategy,
    queries=st.lists(st.lists(st.integers(0, 6), min_size=1, max_size=4), min_size=1, max_size=15),
    data=st.data(),
)
def test_index_counts_equal_brute_force_counts(docs, queries, data):
    users = [f"u{data.draw(st.integers(0, 3))}" for _ in docs]
    # also query substrings that certainly occur
    for d in docs:
        if len(d) >= 2:
            queries.append(d[1 : min(len(d), 5)])
    idx = CorpusIndex.build(docs, users)
    total, nusers = idx.counts(queries)
    for q, t, u in zip(queries, total, nusers, strict=True):
        assert (int(t), int(u)) == _python_count(docs, users, q)


def test_counts_agree_with_str_count_on_words():
    texts = {
        "u1": ["thank you very much", "very much so"],
        "u2": ["very much indeed very much"],
        "u3": ["much very"],
    }
    vocab: dict[str, int] = {}
    docs, users = [], []
    for u, ts in texts.items():
        for t in ts:
            docs.append([vocab.setdefault(w, len(vocab)) for w in t.split()])
            users.append(u)
    idx = CorpusIndex.build(docs, users)
    q = [vocab["very"], vocab["much"]]
    total, nusers = idx.counts([q])
    flat = [t for ts in texts.values() for t in ts]
    assert int(total[0]) == sum(f" {t} ".count(" very much ") for t in flat)
    assert int(total[0]) == 4
    assert int(nusers[0]) == 2


def test_matches_never_cross_document_boundaries():
    idx = CorpusIndex.build([[1, 2], [3, 4]], ["a", "b"])
    assert idx.counts([[2, 3]])[0].tolist() == [0]
    assert idx.counts([[1, 2]])[0].tolist() == [1]


def test_large_token_ids_use_uint32_text():
    idx = CorpusIndex.build([[70000, 5, 70000, 5]], ["a"])
    assert idx.text.dtype == np.uint32
    assert idx.counts([[70000, 5]])[0].tolist() == [2]


def test_saved_index_loads_memory_mapped_and_counts_the_same(tmp_path):
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 20, size=rng.integers(5, 40)).tolist() for _ in range(30)]
    users = [f"u{i % 7}" for i in range(30)]
    queries = [d[2:5] for d in docs[:10]] + [[1, 2, 3]]
    first = CorpusIndex.cached(docs, users, tmp_path)
    again = CorpusIndex.cached(docs, users, tmp_path)
    assert isinstance(again.sa, np.memmap)
    for a, b in zip(first.counts(queries), again.counts(queries), strict=True):
        assert a.tolist() == b.tolist()
    assert len(list(tmp_path.iterdir())) == 1  # one cache entry per tokenised corpus
    other = CorpusIndex.cached(docs, ["x"] * 30, tmp_path)
    assert len(list(tmp_path.iterdir())) == 2
    assert other.counts([docs[0][:3]])[1].tolist() == [1]


def test_empty_query_matches_nothing():
    idx = CorpusIndex.build([[1, 2, 3]], ["a"])
    assert idx.counts([[]])[0].tolist() == [0]
