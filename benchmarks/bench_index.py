"""Counts in D for leaked sequences: the suffix-array corpus index vs scanning the corpus.

Prints ``index_vs_scan: X`` (goal >= 200) for 10,000 leaked sequences over a 10M-token corpus
and ``index_build_mb_per_s: X`` (goal >= 5, MB of corpus text per second of index build).

The corpus is synthetic word-level text: a Zipf-distributed vocabulary of 20,000 words (so the
head words occur hundreds of thousands of times, as in real text), documents of 50-350 tokens,
2,000 users. The 10,000 queries are substrings of the corpus with the length profile of S
(geometric, mean ~3 tokens), all distinct (as the distinct sequences of S are), so every
query has at least one match.

The scan baseline is a vectorised numpy scan of the token array (first-token mask, then the
remaining tokens checked at the candidate positions, users from the matched documents) — much
faster than ``str.count`` over the text; it is capped to a fixed seeded sample of queries and
scaled linearly (sample size and factor printed). Correctness: the index's (count, users) equal
the scan's on the whole sample, else exit 1.

Usage: ``python benchmarks/bench_index.py [--tokens 10000000] [--queries 10000] [--sample 100]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def make_corpus(
    n_tokens: int, vocab: int, n_users: int, seed: int
) -> tuple[list[np.ndarray], list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    p = 1.0 / ranks**1.05
    p /= p.sum()
    flat = rng.choice(vocab, size=n_tokens, p=p).astype(np.int64) + 5  # ids 0-4: specials
    lengths = []
    total = 0
    while total < n_tokens:
        n = int(min(rng.integers(50, 350), n_tokens - total))
        lengths.append(n)
        total += n
    cuts = np.cumsum(lengths)[:-1]
    docs = np.split(flat, cuts)
    users = [f"user{int(u)}" for u in rng.integers(0, n_users, size=len(docs))]
    word_len = rng.integers(2, 10, size=vocab + 5)  # bytes per synthetic word
    return docs, users, word_len


def make_queries(docs: list[np.ndarray], n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed + 1)
    out: dict[bytes, np.ndarray] = {}  # distinct, as the distinct sequences of S are
    while len(out) < n:
        d = docs[int(rng.integers(0, len(docs)))]
        m = int(min(rng.geometric(1 / 3), 12, d.size))
        s = int(rng.integers(0, d.size - m + 1))
        q = d[s : s + m].copy()
        out.setdefault(q.tobytes(), q)
    return list(out.values())


class Scanner:
    """Counting by scanning the concatenated token array (no index)."""

    def __init__(self, docs: list[np.ndarray], users: list[str]) -> None:
        sep = -1
        parts = []
        for d in docs:
            parts.extend([d, np.array([sep])])
        self.text = np.concatenate(parts)
        lengths = np.array([d.size + 1 for d in docs])
        self.starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        codes = {u: i for i, u in enumerate(dict.fromkeys(users))}
        self.doc_users = np.array([codes[u] for u in users])

    def count(self, q: np.ndarray) -> tuple[int, int]:
        m = q.size
        n = self.text.size - m + 1
        cand = np.nonzero(self.text[:n] == q[0])[0]
        for j in range(1, m):
            cand = cand[self.text[cand + j] == q[j]]
        docs = np.searchsorted(self.starts, cand, side="right") - 1
        return int(cand.size), int(np.unique(self.doc_users[docs]).size)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=10_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from lmleak.ledger.index import CorpusIndex

    print(
        f"threads: {os.environ.get('OMP_NUM_THREADS')}  load: {os.getloadavg()[0]:.2f}  numpy: {np.__version__}"
    )
    docs, users, word_len = make_corpus(args.tokens, 20_000, 2_000, args.seed)
    text_bytes = int(sum(int((word_len[d] + 1).sum()) for d in docs))
    queries = make_queries(docs, args.queries, args.seed)
    rng = np.random.default_rng(args.seed + 2)
    sample_idx = rng.choice(len(queries), size=min(args.sample, len(queries)), replace=False)
    sample = [queries[i] for i in sample_idx]
    print(
        f"corpus: {args.tokens:,} tokens, {len(docs):,} documents, {len(set(users)):,} users, {text_bytes / 1e6:.1f} MB of text"
    )
    print(
        f"queries: {len(queries):,} (mean length {np.mean([q.size for q in queries]):.2f} tokens); scan sample: {len(sample)}, scale factor {len(queries) / len(sample):.1f}"
    )

    build_times = []
    index = None
    for _ in range(2):
        t0 = time.perf_counter()
        index = CorpusIndex.build(docs, users)
        build_times.append(time.perf_counter() - t0)
    assert index is not None
    scanner = Scanner(docs, users)

    # warm-up
    index.counts(queries[:50])
    scanner.count(sample[0])

    t_index, t_scan = [], []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        total, nusers = index.counts(queries)
        t_index.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        scanned = [scanner.count(q) for q in sample]
        t_scan.append((time.perf_counter() - t0) * len(queries) / len(sample))

    got = [(int(total[i]), int(nusers[i])) for i in sample_idx]
    if got != scanned:
        bad = sum(a != b for a, b in zip(got, scanned, strict=True))
        print(f"MISMATCH: index and scan disagree on {bad} of {len(sample)} sampled queries", file=sys.stderr)
        return 1
    if (total < 1).any():
        print("MISMATCH: a query taken from the corpus has count 0", file=sys.stderr)
        return 1

    ratios = [s / i for s, i in zip(t_scan, t_index, strict=True)]
    print(
        f"index: {min(t_index):.3f} s for {len(queries):,} queries ({1e3 * min(t_index) / len(queries):.3f} ms/query)"
    )
    print(f"scan (scaled): {min(t_scan):.1f} s ({1e3 * min(t_scan) / len(queries):.2f} ms/query)")
    print(f"index build: {min(build_times):.2f} s ({args.tokens / min(build_times) / 1e6:.2f} M tokens/s)")
    print(f"median ratio: {float(np.median(ratios)):.1f}")
    print(f"index_vs_scan: {min(t_scan) / min(t_index):.1f}")
    print(f"index_build_mb_per_s: {text_bytes / 1e6 / min(build_times):.1f}")
    print("correctness: ok (counts and users match the scan on the sample)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
