"""Peak memory of the ledger pass as the corpus grows 10x (issue 9; paper 001 §4's ledger).

The pass (:func:`lmleak.ledger.ledger.run_ledger_pass` over a
:class:`~lmleak.ledger.ledger.StreamedCorpus`) streams documents from the file, keeps at most
one shard in flight and writes it to disk, so its peak resident memory should not depend on
the corpus size. Each pass runs in a fresh subprocess (same saved small GPT, 1 torch thread)
and reports its own peak resident memory (``VmHWM``; see ``bench_resume.peak_rss_kib`` for why not
``ru_maxrss``). Corpora: a CustomerSim corpus of ``10 x users`` users and its first tenth.

Prints ``rss_growth_10x`` (peak RSS on the 10x corpus / on the base corpus; goal <= 1.5), both
peaks in MiB, documents and tokens of each corpus, and context lines.

Correctness (exit 1 on failure): each pass covers every document of its corpus (``ledger.json``
counts match the file) and the base ledger equals the first documents of the 10x ledger
(a shard boundary-aligned prefix, so the same model gives the same ranks).

Usage: ``python benchmarks/bench_memory.py [--users 20] [--shard-size 20]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from bench_resume import context, make_setup, peak_rss_kib  # noqa: E402  (benchmarks/ is on sys.path when run as a script)


def child(model_dir: str, corpus: str, run_dir: str, shard_size: int) -> None:
    import torch

    torch.set_num_threads(1)
    from lmleak.ledger.ledger import StreamedCorpus, run_ledger_pass
    from lmleak.models.loading import load_model

    model = load_model(model_dir)
    t0 = time.perf_counter()
    meta = run_ledger_pass(model, StreamedCorpus(corpus), run_dir, shard_size=shard_size)
    peak_kib = peak_rss_kib()
    print(json.dumps({"pass_s": time.perf_counter() - t0, "peak_kib": peak_kib, **{k: meta[k] for k in ("num_docs", "num_tokens")}}))


def run_child(model_dir: Path, corpus: Path, run_dir: Path, shard_size: int) -> dict:
    res = subprocess.run(
        [sys.executable, __file__, "--child", str(model_dir), str(corpus), str(run_dir), str(shard_size)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        sys.exit(f"child failed ({res.returncode}): {res.stderr[-2000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def main() -> int:
    import numpy as np

    from lmleak.ledger.ledger import read_ledger

    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--shard-size", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp:
        root = Path(tmp)
        big, model_dir = make_setup(root, 10 * args.users, dialogs_per_user=2)  # one model (one vocabulary) for both
        lines = big.read_text(encoding="utf-8").splitlines(keepends=True)
        n_base = len(lines) // 10 // args.shard_size * args.shard_size  # whole shards: the base is a prefix of the 10x ledger
        base = root / "base.jsonl"
        base.write_text("".join(lines[:n_base]), encoding="utf-8")
        context(users_base=args.users, users_10x=10 * args.users, shard_size=args.shard_size, model="gpt 2x128 random-init")
        rb = run_child(model_dir, base, root / "run-base", args.shard_size)
        rx = run_child(model_dir, big, root / "run-10x", args.shard_size)
        print(f"documents_base: {rb['num_docs']}")
        print(f"documents_10x: {rx['num_docs']}")
        print(f"tokens_base: {rb['num_tokens']}")
        print(f"tokens_10x: {rx['num_tokens']}")
        print(f"pass_s_base: {rb['pass_s']:.2f}")
        print(f"pass_s_10x: {rx['pass_s']:.2f}")
        print(f"peak_rss_mib_base: {rb['peak_kib'] / 1024:.1f}")
        print(f"peak_rss_mib_10x: {rx['peak_kib'] / 1024:.1f}")
        print(f"rss_growth_10x: {rx['peak_kib'] / rb['peak_kib']:.3f}")
        errors = []
        if rb["num_docs"] != n_base or rx["num_docs"] != len(lines):
            errors.append(f"documents covered {rb['num_docs']}/{n_base} and {rx['num_docs']}/{len(lines)}")
        lb, lx = read_ledger(root / "run-base"), read_ledger(root / "run-10x")
        cut = int(lb.offsets[-1])
        if lb.doc_ids != lx.doc_ids[:n_base] or not np.array_equal(lb.ranks, lx.ranks[:cut]) or not np.array_equal(lb.logprobs, lx.logprobs[:cut]):
            errors.append("the base ledger is not the prefix of the 10x ledger")
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        print(f"consistent: {not errors}")
        return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        a = sys.argv[2:]
        child(a[0], a[1], a[2], int(a[3]))
        sys.exit(0)
    sys.exit(main())
