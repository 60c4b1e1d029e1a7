"""Resuming the ledger pass after ``kill -9`` (issue 9; paper 001 §4's teacher-forced ledger).

Three runs of the ledger pass, each in a fresh subprocess over the same synthetic CustomerSim
corpus (``lmleak.data.synth.customersim.synthesize``) and a small random-init GPT (FLOPs do not
depend on the weights):

1. ``full``: an uninterrupted pass;
2. ``killed``: the same pass, ``SIGKILL``-ed once the manifest lists about half the shards;
3. ``resume``: the same command again in the killed run's folder: it skips the complete shards.

Prints ``resume_vs_full`` (the rerun's pass time / the full pass time, measured inside the
children so interpreter start-up does not blur it; goal <= 0.6), ``resume_vs_full_wall`` (the
same with process start-up), the shards done before the kill, and context lines.

Correctness (exit 1 on failure): the resumed ledger (every array, the document order and
``ledger.json``) equals the uninterrupted one, and the kill really happened mid-pass.

Usage: ``python benchmarks/bench_resume.py [--users 80] [--shard-size 10]``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def make_setup(root: Path, users: int, dialogs_per_user: int = 5, seed: int = 0) -> tuple[Path, Path]:
    """A synthetic corpus and a saved random-init small GPT whose word tokenizer covers it."""
    from lmleak.data.loaders import iter_documents
    from lmleak.data.synth.customersim import synthesize
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    paths = synthesize(
        root / "data", users=users, dialogs_per_user=dialogs_per_user, seed=seed, canaries=2, canary_repeats=3
    )
    texts = (d.text for d in iter_documents(paths["corpus"]))
    tok = build_tokenizer(texts, kind="word", vocab_size=4000)
    module = new_small_gpt(
        len(tok), SmallGPTConfig(n_positions=256, n_embd=128, n_layer=2, n_head=4), seed=seed
    )
    model_dir = save_small_model(module, tok, root / "model")
    return Path(paths["corpus"]), Path(model_dir)


def child(
    model_dir: str, corpus: str, run_dir: str, shard_size: int, engine: str = "local", workers: int = 1
) -> None:
    """The pass as a user runs it: load the model, stream the corpus, write the shards."""
    import torch

    torch.set_num_threads(1)
    from lmleak.ledger.ledger import ModelSpec, StreamedCorpus, run_ledger_pass
    from lmleak.models.loading import load_model
    from lmleak.shards import ShardEngine

    model = load_model(model_dir)
    t0 = time.perf_counter()
    meta = run_ledger_pass(
        model,
        StreamedCorpus(corpus),
        run_dir,
        shard_size=shard_size,
        engine=ShardEngine(engine, num_workers=workers),
        model_spec=ModelSpec(model_dir),
    )
    print(
        json.dumps(
            {
                "pass_s": time.perf_counter() - t0,
                "num_docs": meta["num_docs"],
                "num_tokens": meta["num_tokens"],
            }
        )
    )


def child_cmd(model_dir: Path, corpus: Path, run_dir: Path, shard_size: int) -> list[str]:
    return [sys.executable, __file__, "--child", str(model_dir), str(corpus), str(run_dir), str(shard_size)]


def run_child(cmd: list[str]) -> tuple[dict, float]:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "LMLEAK_QUIET": "1"})
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        sys.exit(f"child failed ({res.returncode}): {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1]), wall


def shards_done(run_dir: Path) -> int:
    try:
        return len(json.loads((run_dir / "ledger" / "manifest.json").read_text())["shards"])
    except (OSError, ValueError, KeyError):
        return 0  # not written yet, or caught mid-rename (atomic writes make this rare)


def ledgers_equal(a: Path, b: Path) -> list[str]:
    import numpy as np

    from lmleak.ledger.ledger import read_ledger

    la, lb = read_ledger(a), read_ledger(b)
    bad = [f for f in ("doc_ids", "user_ids") if getattr(la, f) != getattr(lb, f)]
    bad += [
        f
        for f in ("offsets", "token_ids", "ranks", "logprobs", "top1_logprobs")
        if not np.array_equal(getattr(la, f), getattr(lb, f), equal_nan=True)
    ]
    return bad + (["ledger.json"] if la.meta != lb.meta else [])


def peak_rss_kib() -> int:
    """This process's own peak resident memory in KiB: ``VmHWM`` of /proc/self/status.

    Not ``getrusage(...).ru_maxrss``: on Linux a child started by fork + exec inherits the parent's
    ``ru_maxrss``, so a small child of a large parent reports the parent's peak (measured: a child
    of a 513 MiB parent reported 513 MiB; its ``VmHWM`` was 13 MiB).
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # no /proc: the inherited upper bound


def context(**sizes: object) -> None:
    import torch

    print(f"torch_version: {torch.__version__}")
    print("torch_threads_per_process: 1")
    print(f"omp_num_threads: {os.environ.get('OMP_NUM_THREADS')}")
    print(f"cpu_count: {os.cpu_count()}")
    print(f"load_average_1m: {os.getloadavg()[0]:.2f}")
    for k, v in sizes.items():
        print(f"{k}: {v}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=80)
    ap.add_argument("--shard-size", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_resume_") as tmp:
        root = Path(tmp)
        corpus, model_dir = make_setup(root, args.users)
        context(users=args.users, shard_size=args.shard_size, dtype="float32", model="gpt 2x128 random-init")
        full, full_wall = run_child(child_cmd(model_dir, corpus, root / "full", args.shard_size))
        total = -(-full["num_docs"] // args.shard_size)
        print(f"documents: {full['num_docs']}")
        print(f"tokens: {full['num_tokens']}")
        print(f"shards: {total}")

        run = root / "resumed"
        proc = subprocess.Popen(
            child_cmd(model_dir, corpus, run, args.shard_size),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "LMLEAK_QUIET": "1"},
        )
        while proc.poll() is None and shards_done(run) < total // 2:
            time.sleep(0.02)
        killed_at = shards_done(run)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        rc = proc.wait()
        print(f"shards_before_kill: {killed_at}")
        resumed, resumed_wall = run_child(child_cmd(model_dir, corpus, run, args.shard_size))

        print(f"full_pass_s: {full['pass_s']:.3f}")
        print(f"resume_pass_s: {resumed['pass_s']:.3f}")
        print(f"full_wall_s: {full_wall:.3f}")
        print(f"resume_wall_s: {resumed_wall:.3f}")
        print(f"resume_vs_full: {resumed['pass_s'] / full['pass_s']:.3f}")
        print(f"resume_vs_full_wall: {resumed_wall / full_wall:.3f}")
        print(f"shard_fraction_redone: {(total - killed_at) / total:.3f}")
        bad = ledgers_equal(root / "full", run)
        ok = True
        if rc != -signal.SIGKILL or not 0 < killed_at < total:
            print(
                f"error: the pass was not killed mid-way (rc {rc}, {killed_at}/{total} shards)",
                file=sys.stderr,
            )
            ok = False
        if bad:
            print(f"error: resumed ledger differs from the full run in {bad}", file=sys.stderr)
            ok = False
        print(f"identical: {not bad}")
        return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        a = sys.argv[2:]
        child(a[0], a[1], a[2], int(a[3]), *(a[4:5]), *(int(x) for x in a[5:6]))
        sys.exit(0)
    sys.exit(main())
