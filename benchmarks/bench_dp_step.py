"""DP-SGD step time and memory vs a plain step, small GPT (book-keeping clipping, lmleak's default,
and Opacus ghost clipping side by side) and LSTM (DPLSTM hooks).

Prints ``dp_vs_plain_step`` (the GPT with the default clipping; ``ghost_dp_vs_plain_step`` with Opacus'
ghost clipping in the same run) (median DP step time / median plain step time, same batch, the two
interleaved step by step so machine load hits both alike), ``dp_memory_vs_plain`` (peak RSS, ``VmHWM``, of a
fresh subprocess doing DP steps / one doing plain steps), and the same for the LSTM
(``lstm_dp_vs_plain_step``, ``lstm_dp_memory_vs_plain``). Goals (issue 4): step <= 1.5, memory <= 1.3.

Correctness (exit 1 on mismatch), checked in the same run: with noise 0 and a clipping bound no
gradient reaches, the DP gradient equals the plain gradient (expected batch size = batch size).
Sizes: the default small GPT (2 layers, 128 wide, vocab ~4000), seq_len 128, batch 16.

Usage: ``python benchmarks/bench_dp_step.py [--steps 12] [--batch 16] [--seq-len 128]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402


def setup(
    arch: str,
    mode: str,
    batch: int,
    seq_len: int,
    noise: float = 1.0,
    clip: float = 1.0,
    fix_lstm: bool = False,
    clipping: str = "bookkeeping",
):
    from lmleak.train.config import TrainConfig
    from lmleak.train.dp import DPStrategy
    from lmleak.train.plain import Chunks, PlainStrategy
    from lmleak.train.trainer import build_module

    vocab = 4000
    torch.manual_seed(0)
    n = batch * 4  # sample rate 1/4 -> expected batch size == batch
    ids = torch.randint(4, vocab, (n, seq_len + 1))
    chunks = Chunks(ids, torch.full((n,), seq_len + 1))
    cfg = TrainConfig(
        arch=arch,
        mode="dp" if mode == "dp" else "nodp",
        noise_multiplier=noise if mode == "dp" else None,
        max_grad_norm=clip,
        batch_size=batch,
        seq_len=seq_len,
        vocab_size=vocab,
        lr=0.0,
        dp_clipping=clipping,
        health_checks=False,  # lr 0: the weights never move, on purpose (step times only)
    )

    class Tok:
        bos_token_id, eos_token_id, pad_token_id = 1, 2, 0

    module = build_module(cfg, vocab, Tok())
    if fix_lstm and arch == "lstm":
        from opacus.validators import ModuleValidator

        module = ModuleValidator.fix(module)  # same parameters, same order as the DP model's DPLSTM
    strategy = DPStrategy(cfg) if mode == "dp" else PlainStrategy(cfg)
    strategy.setup(module, chunks, {})
    step = (
        (lambda: strategy.dp_step(ids[:batch], chunks.lengths[:batch]))
        if mode == "dp"
        else (lambda: strategy.step("train", ids[:batch], chunks.lengths[:batch]))
    )
    return strategy, step


def child(arch: str, mode: str, steps: int, batch: int, seq_len: int) -> None:
    mode, _, clipping = mode.partition(":")
    _, step = setup(arch, mode, batch, seq_len, clipping=clipping or "bookkeeping")
    for _ in range(steps):
        step()
    from bench_resume import peak_rss_kib  # benchmarks/ is on sys.path when run as a script

    print(peak_rss_kib())


def peak_rss(arch: str, mode: str, steps: int, batch: int, seq_len: int) -> int:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            arch,
            mode,
            "--steps",
            str(steps),
            "--batch",
            str(batch),
            "--seq-len",
            str(seq_len),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip().splitlines()[-1])


def check_gradients(arch: str, clipping: str = "bookkeeping") -> bool:
    dp, dp_step = setup(arch, "dp", 4, 16, noise=0.0, clip=1e6, clipping=clipping)
    plain, plain_step = setup(arch, "nodp", 4, 16, fix_lstm=True)
    dp_step()
    plain_step()
    a = [p.grad for p in getattr(dp.module, "_module", dp.module).parameters() if p.requires_grad]
    b = [p.grad for p in plain.module.parameters() if p.requires_grad]
    return len(a) == len(b) and all(
        torch.allclose(x, y, atol=1e-6, rtol=1e-4) for x, y in zip(a, b, strict=True)
    )


def ratio(
    arch: str, steps: int, batch: int, seq_len: int, clipping: str = "bookkeeping"
) -> tuple[float, float, float]:
    _, dp_step = setup(arch, "dp", batch, seq_len, clipping=clipping)
    _, plain_step = setup(arch, "nodp", batch, seq_len)
    dp_step(), plain_step()  # warm-up
    t_dp, t_plain = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        plain_step()
        t1 = time.perf_counter()
        dp_step()
        t2 = time.perf_counter()
        t_plain.append(t1 - t0)
        t_dp.append(t2 - t1)
    return float(np.median(t_dp) / np.median(t_plain)), float(np.median(t_dp)), float(np.median(t_plain))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=128)
    args = ap.parse_args()
    if args.child:
        child(*args.child, args.steps, args.batch, args.seq_len)
        return 0
    import warnings

    warnings.filterwarnings("ignore")
    print(
        f"threads: {torch.get_num_threads()}  load: {os.getloadavg()[0]:.2f}  batch: {args.batch}  seq_len: {args.seq_len}"
    )
    ok = True
    for arch, prefix, clipping in (
        ("gpt", "", "bookkeeping"),
        ("gpt", "ghost_", "ghost"),
        ("lstm", "lstm_", ""),
    ):
        good = check_gradients(arch, clipping or "bookkeeping")
        ok &= good
        print(f"{prefix}gradient_check: {'ok' if good else 'MISMATCH'}")
        r, dp_s, plain_s = ratio(arch, args.steps, args.batch, args.seq_len, clipping or "bookkeeping")
        print(f"{prefix}dp_step_seconds: {dp_s:.4f}")
        print(f"{prefix}plain_step_seconds: {plain_s:.4f}")
        print(f"{prefix}dp_vs_plain_step: {r:.2f}")
        mem_plain = peak_rss(arch, "nodp", 3, args.batch, args.seq_len)
        mem_dp = peak_rss(arch, f"dp:{clipping}" if clipping else "dp", 3, args.batch, args.seq_len)
        print(f"{prefix}plain_peak_rss_mb: {mem_plain / 1024:.0f}")
        print(f"{prefix}dp_peak_rss_mb: {mem_dp / 1024:.0f}")
        print(f"{prefix}dp_memory_vs_plain: {mem_dp / mem_plain:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
