"""The ledger pass on Ray with 2 workers vs the local engine with 1 (issue 9; paper 001 §4).

Both engines run :func:`lmleak.ledger.ledger.run_ledger_pass` over the same CustomerSim corpus
(streamed from the file) with the same saved random-init small GPT, 1 torch thread per worker.
The local engine scores every shard in this process; Ray runs two model actors (each loads the
model from its spec, as on a cluster) and this process writes the shards they return. Ray's
start-up (``ray.init``) costs seconds and is timed separately: the headline excludes it, a
second ratio includes it. Actor start-up (model loading) is inside the timed pass.

Prints ``ray2_vs_local1`` (local pass time / Ray pass time, i.e. the throughput ratio; goal
>= 1.5 on 2 cores), ``ray2_vs_local1_with_init``, ``ray_init_s``, both pass times, tokens/s and
context lines.

Correctness (exit 1 on failure): the Ray ledger equals the local one (every array, document
order, ``ledger.json``).

Usage: ``python benchmarks/bench_ray.py [--users 400] [--shard-size 10]``

The default corpus (400 users, ~2,000 documents, ~470k tokens) is large enough that the actors'
start-up (importing torch and loading the model, ~3 s each) does not dominate: with 60 users the
ratio measured 0.68, with 400 users 1.58 (2 cores, load ~1).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from bench_resume import context, ledgers_equal, make_setup  # noqa: E402


def main() -> int:
    import torch

    from lmleak.ledger.ledger import ModelSpec, StreamedCorpus, run_ledger_pass
    from lmleak.models.loading import load_model
    from lmleak.shards import ShardEngine

    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=400)
    ap.add_argument("--shard-size", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="bench_ray_") as tmp:
        root = Path(tmp)
        corpus, model_dir = make_setup(root, args.users)
        context(
            users=args.users,
            shard_size=args.shard_size,
            ray_workers=args.workers,
            local_workers=1,
            model="gpt 2x128 random-init",
        )
        model = load_model(str(model_dir))
        warm = list(itertools.islice(StreamedCorpus(corpus), 4))
        run_ledger_pass(model, warm, root / "warm", shard_size=2)  # allocator, kernels, lazy imports

        t0 = time.perf_counter()
        meta = run_ledger_pass(model, StreamedCorpus(corpus), root / "local", shard_size=args.shard_size)
        local_s = time.perf_counter() - t0

        import ray

        t0 = time.perf_counter()
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        init_s = time.perf_counter() - t0
        try:
            t0 = time.perf_counter()
            run_ledger_pass(
                model,
                StreamedCorpus(corpus),
                root / "ray",
                shard_size=args.shard_size,
                engine=ShardEngine("ray", num_workers=args.workers),
                model_spec=ModelSpec(str(model_dir)),
            )
            ray_s = time.perf_counter() - t0
        finally:
            ray.shutdown()
        print(f"documents: {meta['num_docs']}")
        print(f"tokens: {meta['num_tokens']}")
        print(f"local1_pass_s: {local_s:.2f}")
        print(f"ray2_pass_s: {ray_s:.2f}")
        print(f"ray_init_s: {init_s:.2f}")
        print(f"local1_tokens_per_s: {meta['num_tokens'] / local_s:.0f}")
        print(f"ray2_tokens_per_s: {meta['num_tokens'] / ray_s:.0f}")
        print(f"load_average_1m_end: {os.getloadavg()[0]:.2f}")
        print(f"ray2_vs_local1: {local_s / ray_s:.3f}")
        print(f"ray2_vs_local1_with_init: {local_s / (ray_s + init_s):.3f}")
        bad = ledgers_equal(root / "local", root / "ray")
        print(f"identical: {not bad}")
        if bad:
            print(f"error: the Ray ledger differs from the local one in {bad}", file=sys.stderr)
            return 1
        return 0


if __name__ == "__main__":
    sys.exit(main())
