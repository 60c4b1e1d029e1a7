"""The leakage report's text-uniqueness count (``users_with_text``, issue 32): its cost as the corpus
grows, the Aho–Corasick pass against the obvious scan per text, side by side in one run.

Each size is a ``synth mail`` corpus; the texts are substrings of its documents, one per 2,000
characters, so their number grows with the corpus as leaks do, kept as the report's are: a leaked
sequence the count is asked about is unique to one user as token ids, so as text it stands in one
user's documents or a few (the candidates standing in more than 3 users' are dropped; with them, a
template line found in every document, the matches alone grow with texts × corpus for both methods). A scan per text costs texts × corpus (quadratic in the corpus); the automaton costs corpus
+ texts + matches (linear). Prints per size the seconds of each, their ratio, and then
``owners_scan_growth`` and ``owners_automaton_growth``: the exponent of seconds against corpus size
between the two sizes (1 linear, 2 quadratic), and ``owners_automaton_vs_scan`` at the larger size.
Correctness in the same run: both give the same counts, else exit 1.

Usage: ``python benchmarks/bench_owners.py [--scales 0.25,2.0] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from functools import partial
from pathlib import Path


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    from lmleak.data.synth.mail import synthesize
    from lmleak.report.owners import users_with_text, users_with_text_by_scan

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scales", default="0.25,2.0")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    print(f"load_average: {os.getloadavg()[0]:.2f}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for scale in [float(s) for s in args.scales.split(",")]:
            path = synthesize(Path(tmp) / f"s{scale}", scale=scale, seed=1)["corpus"]
            docs = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
            texts, users = [d["text"] for d in docs], [d["user_id"] for d in docs]
            chars = sum(map(len, texts))
            rng = random.Random(0)
            long_docs = [t for t in texts if len(t) > 40]
            candidates = []
            for _ in range(3 * max(1, chars // 2000)):
                t = rng.choice(long_docs)
                i = rng.randrange(len(t) - 30)
                candidates.append(t[i : i + rng.randint(12, 30)])
            rare = users_with_text_by_scan(candidates, texts, users)
            needles = [n for n in candidates if rare[n] <= 3][: max(1, chars // 2000)]
            fast = users_with_text(needles, texts, users)
            slow = users_with_text_by_scan(needles, texts, users)
            if fast != slow:
                print("MISMATCH: the automaton and the scan disagree")
                sys.exit(1)
            t_fast = _best(partial(users_with_text, needles, texts, users), args.repeats)
            t_slow = _best(partial(users_with_text_by_scan, needles, texts, users), args.repeats)
            rows.append((chars, t_fast, t_slow))
            print(
                f"scale {scale:g}: {chars:,} characters, {len(docs):,} documents, {len(set(users))} users, "
                f"{len(needles):,} texts; automaton {t_fast:.3f} s, scan {t_slow:.3f} s, "
                f"scan / automaton {t_slow / t_fast:.1f}"
            )
    (c0, f0, s0), (c1, f1, s1) = rows[0], rows[-1]
    grow = math.log(c1 / c0)
    print(f"owners_scan_growth: {math.log(s1 / s0) / grow:.2f}")
    print(f"owners_automaton_growth: {math.log(f1 / f0) / grow:.2f}")
    print(f"owners_automaton_vs_scan: {s1 / f1:.1f}")


if __name__ == "__main__":
    main()
