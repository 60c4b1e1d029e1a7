"""The corpus index: counts of a token sequence in the training data D, and how many users hold it.

Paper 001 §4 defines two features over D for every leaked sequence ``w``: *total count in D*
(``sum_i sum_j count of w in D_i^j``) and *user count in D* (``sum_i 1(exists j: w ⊆ D_i^j)``).
The paper computes them by string matching; this module answers both from a suffix array over
the tokenised corpus, so a query costs ``O(|w| log N)`` instead of a scan of the whole corpus.

Layout and invariants:
    - ``text`` is every document's token ids concatenated, each document followed by one
      separator token (the largest value of the text dtype) that no query may contain, so a match never crosses a
      document boundary.
    - ``sa`` is the suffix array of ``text`` (pydivsufsort, int32 or int64 positions).
    - ``doc_starts[d]`` is where document ``d`` begins in ``text`` (sorted); ``doc_users[d]`` the
      integer code of its owner in ``users``; ``sa_users[i]`` the owner of suffix ``sa[i]``, so the
      users of a query are the distinct values of one contiguous slice (a bincount for long ones).
    - Counting is over token ids, i.e. over the model's tokenisation of D: a sequence counts where
      its tokens occur consecutively, exactly the unit the tab attack leaks.

pydivsufsort's own ``sa_search`` takes only uint8 text, so :meth:`CorpusIndex.ranges` runs its
own binary search, vectorised over all queries at once (every query advances one bisection step
per numpy round).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from lmleak.runs import atomic_write_json, secure_dir

_CHUNK = 16_384
_FILES = ("text.npy", "sa.npy", "doc_starts.npy", "doc_users.npy", "sa_users.npy")


def _text_dtype(max_token: int) -> Any:
    return np.uint16 if max_token < np.iinfo(np.uint16).max else np.uint32


class CorpusIndex:
    """A suffix array over a tokenised corpus with document and user look-ups.

    Build with :meth:`build` (or :meth:`cached`, which saves and memory-maps the arrays under a
    cache key). Counts are exact; the slow obvious oracle lives in ``tests/ledger/test_index.py``.

    Example:
        >>> idx = CorpusIndex.build([[5, 6, 7], [6, 7, 6, 7], [9]], ["alice", "bob", "alice"])
        >>> idx.counts([[6, 7], [7, 9], [9], [5, 6, 7, 6]])
        (array([3, 0, 1, 0]), array([2, 0, 1, 0]))
    """

    def __init__(
        self,
        text: np.ndarray,
        sa: np.ndarray,
        doc_starts: np.ndarray,
        doc_users: np.ndarray,
        users: list[str],
        sa_users: np.ndarray | None = None,
    ) -> None:
        self.text = text
        self.sa = sa
        self.doc_starts = doc_starts
        self.doc_users = doc_users
        self.users = users
        if sa_users is None:
            sa_users = (
                doc_users[self.doc_of(np.asarray(sa, dtype=np.int64))] if sa.size else np.zeros(0, np.int32)
            )
        self.sa_users = sa_users
        self.num_tokens = int(text.size - doc_starts.size)  # separators excluded

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, documents: Sequence[Sequence[int] | np.ndarray], user_ids: Sequence[str]) -> CorpusIndex:
        """Index ``documents`` (token id sequences) owned by ``user_ids`` (one per document)."""
        from pydivsufsort import divsufsort

        if len(documents) != len(user_ids):
            raise ValueError("documents and user_ids differ in length")
        arrays = [np.asarray(d, dtype=np.int64).ravel() for d in documents]
        max_token = max((int(a.max()) for a in arrays if a.size), default=0)
        dtype = _text_dtype(max_token)
        sep = int(np.iinfo(dtype).max)
        lengths = np.array([a.size + 1 for a in arrays], dtype=np.int64)
        doc_starts = np.zeros(len(arrays), dtype=np.int64)
        if len(arrays):
            doc_starts[1:] = np.cumsum(lengths)[:-1]
        text = np.full(int(lengths.sum()), sep, dtype=dtype)
        for start, a in zip(doc_starts, arrays, strict=True):
            text[start : start + a.size] = a
        users = list(dict.fromkeys(user_ids))
        code = {u: i for i, u in enumerate(users)}
        doc_users = np.array([code[u] for u in user_ids], dtype=np.int32)
        sa = divsufsort(text) if text.size else np.zeros(0, dtype=np.int32)
        return cls(text, np.asarray(sa), doc_starts, doc_users, users)

    @staticmethod
    def cache_key(
        documents: Sequence[Sequence[int] | np.ndarray], user_ids: Sequence[str], salt: str = ""
    ) -> str:
        """A content hash of the tokenised corpus (tokens, owners, order) for :meth:`cached`.

        Example:
            >>> CorpusIndex.cache_key([[1, 2]], ["u"]) == CorpusIndex.cache_key([[1, 2]], ["u"])
            True
            >>> CorpusIndex.cache_key([[1, 2]], ["u"]) == CorpusIndex.cache_key([[1, 2]], ["v"])
            False
        """
        h = hashlib.sha256(salt.encode())
        for doc, user in zip(documents, user_ids, strict=True):
            h.update(user.encode() + b"\x00")
            h.update(np.asarray(doc, dtype=np.int64).tobytes() + b"\x01")
        return h.hexdigest()[:24]

    def save(self, directory: str | Path) -> Path:
        """Write the arrays as ``.npy`` files (owner-only) so :meth:`load` can memory-map them."""

        d = secure_dir(directory)
        arrays = (self.text, self.sa, self.doc_starts, self.doc_users, self.sa_users)
        for name, arr in zip(_FILES, arrays, strict=True):
            tmp = d / f".{name}.tmp"
            with open(tmp, "wb") as f:
                np.save(f, arr)
            tmp.chmod(0o600)
            tmp.replace(d / name)
        atomic_write_json(d / "index.json", {"users": self.users, "num_tokens": self.num_tokens})
        return d

    @classmethod
    def load(cls, directory: str | Path, *, mmap: bool = True) -> CorpusIndex:
        """Load an index written by :meth:`save` (memory-mapped by default: nothing is copied)."""
        d = Path(directory)
        mode: Literal["r"] | None = "r" if mmap else None
        arrs = [np.load(d / name, mmap_mode=mode) for name in _FILES]
        meta = json.loads((d / "index.json").read_text(encoding="utf-8"))
        return cls(arrs[0], arrs[1], arrs[2], arrs[3], list(meta["users"]), arrs[4])

    @classmethod
    def cached(
        cls,
        documents: Sequence[Sequence[int] | np.ndarray],
        user_ids: Sequence[str],
        cache_dir: str | Path | None,
        *,
        salt: str = "",
    ) -> CorpusIndex:
        """Load the index of this tokenised corpus from ``cache_dir/<key>`` or build and save it."""
        if cache_dir is None:
            return cls.build(documents, user_ids)
        key = cls.cache_key(documents, user_ids, salt)
        d = Path(cache_dir) / f"index-{key}"
        if (d / "index.json").exists():
            return cls.load(d)
        idx = cls.build(documents, user_ids)
        idx.save(d)
        return idx

    # ------------------------------------------------------------------ queries
    def _compare(self, pos: np.ndarray, queries: np.ndarray, qlen: np.ndarray) -> np.ndarray:
        """Sign of (suffix at ``pos`` truncated to the query length) minus the query, per row.

        -1: suffix sorts before the query; 0: the suffix starts with the query; +1: after.
        Positions past the end of ``text`` read as -1 (shorter sorts first).
        """
        width = queries.shape[1]
        offs = pos[:, None] + np.arange(width)[None, :]
        inside = offs < self.text.size
        sym = np.where(inside, self.text[np.minimum(offs, self.text.size - 1)].astype(np.int64), -1)
        active = np.arange(width)[None, :] < qlen[:, None]
        diff = (sym != queries) & active
        first = np.argmax(diff, axis=1)
        has = diff[np.arange(len(pos)), first]
        rows = np.arange(len(pos))
        sign = np.sign(sym[rows, first] - queries[rows, first])
        return np.where(has, sign, 0)

    def ranges(self, queries: Sequence[Sequence[int] | np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Half-open suffix-array ranges ``[lo, hi)`` of the suffixes starting with each query.

        An empty query matches nothing (range of size 0).
        """
        q = len(queries)
        if q == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        qlen = np.array([len(x) for x in queries], dtype=np.int64)
        width = max(int(qlen.max()), 1)
        qs = np.full((q, width), -2, dtype=np.int64)
        for i, x in enumerate(queries):
            qs[i, : len(x)] = np.asarray(x, dtype=np.int64)
        n = self.sa.size

        def bisect(strict: bool) -> np.ndarray:
            # lower bound: first suffix with cmp >= 0; upper bound: first suffix with cmp > 0
            lo = np.zeros(q, dtype=np.int64)
            hi = np.full(q, n, dtype=np.int64)
            while True:
                live = lo < hi
                if not live.any():
                    return lo
                idx = np.nonzero(live)[0]
                mid = (lo[idx] + hi[idx]) // 2
                c = self._compare(self.sa[mid].astype(np.int64), qs[idx], qlen[idx])
                go_right = c <= 0 if strict else c < 0
                lo[idx] = np.where(go_right, mid + 1, lo[idx])
                hi[idx] = np.where(go_right, hi[idx], mid)

        lo, hi = bisect(False), bisect(True)
        # an empty query, or one holding the separator or an id the text cannot hold, matches nothing
        sep = int(np.iinfo(self.text.dtype).max) if self.text.dtype.kind == "u" else None
        active = np.arange(width)[None, :] < qlen[:, None]
        outside = (qs < 0) | (qs >= sep) if sep is not None else qs < 0
        bad = (qlen == 0) | (outside & active).any(axis=1)
        hi[bad] = lo[bad]
        return lo, hi

    def positions(self, query: Sequence[int]) -> np.ndarray:
        """Sorted start positions (in ``text``) of every occurrence of ``query``."""
        lo, hi = self.ranges([query])
        return np.sort(np.asarray(self.sa[int(lo[0]) : int(hi[0])], dtype=np.int64))

    def doc_of(self, positions: np.ndarray) -> np.ndarray:
        """Document number holding each text position."""
        return np.searchsorted(self.doc_starts, positions, side="right") - 1

    def counts(self, queries: Sequence[Sequence[int] | np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(total count in D, user count in D) for each query (paper 001 §4)."""
        lo, hi = self.ranges(queries)
        total = (hi - lo).astype(np.int64)
        users = (total > 0).astype(np.int64)
        seen = np.zeros(len(self.users), dtype=bool)
        done: dict[tuple[int, int], int] = {}  # repeated queries share one SA range
        for i in np.nonzero(total > 1)[0]:
            a, b = int(lo[i]), int(hi[i])
            if (a, b) not in done:
                done[(a, b)] = self._distinct_users(a, b, seen)
            users[i] = done[(a, b)]
        return total, users

    def _distinct_users(self, lo: int, hi: int, seen: np.ndarray) -> int:
        """Distinct owners of the suffixes ``sa[lo:hi]``; ``seen`` is an all-False scratch buffer.

        Owners are marked chunk by chunk, stopping once every user is seen: the suffixes of one
        query are sorted by what follows it, not by owner, so a frequent sequence usually shows
        every user within a few times ``U log U`` entries.
        """
        for c in range(lo, hi, _CHUNK):
            seen[self.sa_users[c : min(c + _CHUNK, hi)]] = True
            if hi - lo > _CHUNK and seen.all():
                break
        n = int(np.count_nonzero(seen))
        if hi - lo < seen.size:  # cheaper than clearing a buffer of millions of users
            seen[self.sa_users[lo:hi]] = False
        else:
            seen[:] = False
        return n
