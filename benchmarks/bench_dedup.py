"""Dedup throughput (paper 002, section 3.2): exact SHA-1 set vs one-pass Bloom filter.

Prints ``exact_sentences_per_s``, ``bloom_sentences_per_s``, ``bloom_vs_exact_speed``,
``bloom_memory_vs_exact`` (filter bytes / bytes Python allocates for the SHA-1 set, measured
with tracemalloc in a separate untimed pass), and the Bloom false-positive rate three ways:
``bloom_false_positive_rate_configured``, ``bloom_false_positive_rate`` (measured: first
occurrences the filter masked, over distinct sentences; exact dedup is the ground truth) and
``bloom_false_positive_rate_estimated`` ((1 − e^(−kn/m))^k for the filled filter). A one-pass
filter must be sized before the pass, so it is sized for every sentence (1M) and ends up far
below capacity; a second filter sized to the true number of distinct sentences
(``bloom_at_capacity_*``) shows the rate near its configured value. ``bloom_hash_func_*`` is
the savable variant with an rbloom ``hash_func`` callback.

Corpus: 1M synthetic sentences ("The <adj> <noun> of user <i> bought item <j>.") drawn from a
pool of distinct sentences with a Zipf-like reuse, so ~40 % are repeats, as in template-heavy
dialogue data. Both modes run on the same list, side by side, in one process.

Correctness (exit 1 on failure): exact dedup equals a plain ``set``-of-strings oracle; Bloom
masks every sentence exact masks (no false negatives); the measured false-positive rate is at
most 10x the configured one plus 5/unique (binomial slack).

Usage: ``python benchmarks/bench_dedup.py [--sentences 1000000] [--fp-rate 1e-4] [--seed 0]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ADJ = "red green blue quiet loud small large early late happy sad bright dark warm cold".split()
NOUN = "order parcel refund invoice ticket package letter account device voucher".split()


def make_sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    pool = int(n * 0.7)
    # Zipf-like reuse: small ids repeat often, large ids mostly once
    ids = np.minimum((rng.pareto(1.2, size=n) * pool / 20).astype(np.int64), pool - 1)
    ids = np.where(rng.random(n) < 0.5, rng.integers(0, pool, size=n), ids)
    return [
        f"The {ADJ[i % 15]} {NOUN[(i // 15) % 10]} of user {i // 150} bought item {i * 7919 % 100003}."
        for i in ids.tolist()
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=1_000_000)
    ap.add_argument("--fp-rate", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from lmleak.pii.spans import MASK
    from lmleak.train.dedup import DedupStats, ExactSeen, dedup_texts

    print(f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} cpus={os.cpu_count()}")
    print(f"load_average: {os.getloadavg()[0]:.2f}")
    t0 = time.perf_counter()
    texts = make_sentences(args.sentences, args.seed)
    print(f"sentences: {len(texts)}")
    print(f"generate_s: {time.perf_counter() - t0:.2f}")

    ex_stats, bl_stats = DedupStats("exact"), DedupStats("bloom")
    t0 = time.perf_counter()
    exact = list(dedup_texts(texts, mode="exact", stats=ex_stats))
    t_exact = time.perf_counter() - t0
    t0 = time.perf_counter()
    bloom = list(
        dedup_texts(texts, mode="bloom", expected_items=len(texts), fp_rate=args.fp_rate, stats=bl_stats)
    )
    t_bloom = time.perf_counter() - t0
    t0 = time.perf_counter()
    bloom_hf = list(
        dedup_texts(texts, mode="bloom", expected_items=len(texts), fp_rate=args.fp_rate, savable=True)
    )
    t_bloom_hf = time.perf_counter() - t0
    # a filter sized to exactly the distinct sentences, so the measured rate can approach the configured one
    at_cap = DedupStats("bloom")
    unique_n = len(set(texts))
    bloom_cap = list(
        dedup_texts(texts, mode="bloom", expected_items=unique_n, fp_rate=args.fp_rate, stats=at_cap)
    )

    # memory, untimed: what the exact set allocates vs the filter's bit array
    tracemalloc.start()
    seen = ExactSeen()
    for t in texts:
        seen.add(t)
    exact_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del seen
    bloom_bytes = bl_stats.bloom["size_bytes"]

    # correctness: the obvious oracle, and Bloom's one-sided error
    oracle_seen: set[str] = set()
    oracle = []
    for t in texts:
        oracle.append(MASK if t in oracle_seen else t)
        oracle_seen.add(t)
    ok = True
    if exact != oracle:
        print("error: exact dedup differs from the set-of-strings oracle", file=sys.stderr)
        ok = False
    unique = len(oracle_seen)
    rates = {}
    for name, out in (("bloom", bloom), ("bloom_hash_func", bloom_hf), ("bloom_at_capacity", bloom_cap)):
        false_neg = sum(1 for e, b in zip(exact, out, strict=True) if e == MASK and b != MASK)
        false_pos = sum(1 for e, b in zip(exact, out, strict=True) if e != MASK and b == MASK)
        rates[name] = (false_pos, false_pos / unique)
        if false_neg:
            print(f"error: {name} missed {false_neg} duplicates", file=sys.stderr)
            ok = False
        if false_pos / unique > 10 * args.fp_rate + 5 / unique:
            print(
                f"error: {name} false-positive rate {false_pos / unique:.3g} >> configured {args.fp_rate:.3g}",
                file=sys.stderr,
            )
            ok = False
    false_pos, measured = rates["bloom"]

    print(f"unique_sentences: {unique}")
    print(f"duplicate_fraction: {1 - unique / len(texts):.3f}")
    print(f"exact_s: {t_exact:.3f}")
    print(f"bloom_s: {t_bloom:.3f}")
    print(f"exact_sentences_per_s: {len(texts) / t_exact:.0f}")
    print(f"bloom_sentences_per_s: {len(texts) / t_bloom:.0f}")
    print(f"bloom_hash_func_sentences_per_s: {len(texts) / t_bloom_hf:.0f}")
    print(f"bloom_vs_exact_speed: {t_exact / t_bloom:.2f}")
    print(f"exact_memory_mb: {exact_bytes / 2**20:.1f}")
    print(f"bloom_memory_mb: {bloom_bytes / 2**20:.2f}")
    print(f"bloom_memory_vs_exact: {bloom_bytes / exact_bytes:.4f}")
    print(f"bloom_false_positive_rate_configured: {args.fp_rate:.3g}")
    print(f"bloom_false_positive_rate: {measured:.3g}")
    print(f"bloom_false_positives: {false_pos}")
    print(f"bloom_false_positive_rate_estimated: {bl_stats.bloom['estimated_fp_rate']:.3g}")
    print(f"bloom_at_capacity_false_positive_rate: {rates['bloom_at_capacity'][1]:.3g}")
    print(f"bloom_at_capacity_false_positive_rate_estimated: {at_cap.bloom['estimated_fp_rate']:.3g}")
    print(f"correct: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
