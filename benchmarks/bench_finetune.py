"""DP-LoRA step time and memory vs a plain LoRA step, on the same model and the same batches.

Prints ``dp_lora_vs_lora_step`` (min DP-LoRA step time / min LoRA step time; the two interleaved step
by step, batch r for both in round r, so machine load hits both alike; the median ratio beside it),
``dp_lora_vs_lora_memory`` (peak memory of DP-LoRA steps / plain LoRA steps: on a GPU
``torch.cuda.max_memory_allocated`` in this process; on the CPU the peak RSS, ``VmHWM``, of a fresh
subprocess running each kind of step, as ``bench_dp_step.py``), and ``lora_tokens_per_s`` /
``dp_lora_tokens_per_s``. Goals (issue 18): step <= 1.5, memory <= 1.3.

Model: SmolLM2-135M (``smollm2-135m``) when a GPU is present, with bf16 autocast; otherwise a small
randomly initialised Llama-architecture model (4 layers, width 256, vocab 8192) in float32 on the CPU
(weights do not change FLOPs). LoRA rank 8 on q_proj, v_proj; DP clipping by book-keeping
(:mod:`lmleak.train.bk`), the default.

Correctness (exit 1 on mismatch), checked in the same run: with noise 0 and a clipping bound no
gradient reaches, the DP-LoRA update direction (Σ of clipped per-sample gradients) equals the
plain gradient of the summed loss.

Usage: ``python benchmarks/bench_finetune.py [--steps 10] [--batch 8] [--seq-len 128] [--model auto|smollm2|tiny]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402


def build(which: str, device: str, mode: str, noise: float = 1.0, clip: float = 1.0):
    """(finetuner, vocab size, model label) for ``mode`` in plain | dp."""
    from lmleak.train.finetune import FinetuneConfig, Finetuner, prepare_model, resolve_precision

    torch.manual_seed(0)
    if which == "smollm2":
        from lmleak.models.loading import load_model

        lm = load_model("smollm2-135m", device=device)
        module, label = lm.module, "SmolLM2-135M (smollm2-135m)"
    else:
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(
            vocab_size=8192,
            hidden_size=256,
            intermediate_size=688,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=512,
            tie_word_embeddings=True,
        )
        module, label = LlamaForCausalLM(cfg), "small Llama (4 layers, width 256, vocab 8192, random init)"
    module.to(device).train()
    fc = FinetuneConfig(
        base="bench",
        mode="dp" if mode == "dp" else "nodp",
        lora=8,
        lr=0.0,
        noise_multiplier=noise if mode == "dp" else None,
        max_grad_norm=clip,
        health_checks=False,  # lr 0: the weights never move, on purpose (step times only)
    )
    model, info = prepare_model(module, fc)
    model.to(device)
    ft = Finetuner(model, fc, device, resolve_precision("auto", device))
    return ft, int(module.config.vocab_size), label, info


def batches(vocab: int, steps: int, batch: int, seq_len: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    return [
        (torch.randint(4, vocab, (batch, seq_len + 1), generator=g), torch.full((batch,), seq_len + 1))
        for _ in range(steps)
    ]


def step_fn(ft, mode: str, batch: int):
    if mode == "dp":
        ft.set_private_data(batch)  # sample rate 1 -> expected batch size == batch
        return ft.dp_step
    return ft.plain_step


def child(which: str, device: str, mode: str, steps: int, batch: int, seq_len: int) -> None:
    """One kind of step only, in a fresh process: its peak RSS is that kind's memory."""
    ft, vocab, _, _ = build(which, device, mode)
    fn = step_fn(ft, mode, batch)
    for ids, lengths in batches(vocab, steps, batch, seq_len):
        fn(ids, lengths)
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    print(json.dumps({"peak_kb": hwm}))


def check_gradients(which: str, device: str, batch: int, seq_len: int) -> float:
    """Relative difference of Σ clip(g_i) with an unreachable bound and noise 0 vs the plain gradient."""
    from lmleak.train.plain import batch_tensors, sequence_losses

    ft, vocab, _, _ = build(which, device, "dp", noise=0.0, clip=1e9)
    with torch.no_grad():  # LoRA's B starts at 0, where A's gradient is 0: move off that point
        for n, p in ft.model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.02)
    ids, lengths = batches(vocab, 1, batch, seq_len)[0]
    ft.clipped_gradient(ids, lengths)
    dp = torch.cat([p.grad.reshape(-1).float() for p in ft.params])
    for p in ft.params:
        p.grad = None
    x, m, y = (t.to(device) for t in batch_tensors(ids, lengths))
    with ft.precision.autocast(device):
        logits = ft.model(input_ids=x, attention_mask=m).logits
    grads = torch.autograd.grad(sequence_losses(logits.float(), y).sum(), ft.params)
    plain = torch.cat([g.reshape(-1).float() for g in grads])
    return float((dp - plain).norm() / plain.norm())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--model", default="auto", choices=["auto", "smollm2", "tiny"])
    ap.add_argument("--child", default=None)
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    which = args.model if args.model != "auto" else ("smollm2" if device == "cuda" else "tiny")
    threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    torch.set_num_threads(threads)
    if args.child:
        child(which, device, args.child, max(2, args.steps // 3), args.batch, args.seq_len)
        return 0

    rel = check_gradients(which, device, args.batch, args.seq_len)
    tol = 2e-2 if device == "cuda" else 1e-4  # bf16 autocast on the GPU
    ok = rel < tol

    plain, vocab, label, info = build(which, device, "plain")
    dp, _, _, _ = build(which, device, "dp")
    f_plain, f_dp = step_fn(plain, "plain", args.batch), step_fn(dp, "dp", args.batch)
    data = batches(vocab, args.steps + 1, args.batch, args.seq_len)
    f_plain(*data[0])  # warm-up
    f_dp(*data[0])
    t_plain, t_dp = [], []
    for ids, lengths in data[1:]:
        for fn, acc in ((f_plain, t_plain), (f_dp, t_dp)):
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(ids, lengths)
            if device == "cuda":
                torch.cuda.synchronize()
            acc.append(time.perf_counter() - t0)
    ratio = min(t_dp) / min(t_plain)
    median_ratio = float(np.median(np.array(t_dp) / np.array(t_plain)))
    tokens = args.batch * args.seq_len

    if device == "cuda":
        peaks = {}
        for mode, fn in (("plain", f_plain), ("dp", f_dp)):
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            fn(*data[1])
            torch.cuda.synchronize()
            peaks[mode] = torch.cuda.max_memory_allocated()
        how = "torch.cuda.max_memory_allocated, this process"
    else:
        del plain, dp
        peaks = {}
        for mode in ("plain", "dp"):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    mode,
                    "--model",
                    which,
                    "--steps",
                    str(args.steps),
                    "--batch",
                    str(args.batch),
                    "--seq-len",
                    str(args.seq_len),
                ],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ},
            )
            peaks[mode] = json.loads(out.stdout.strip().splitlines()[-1])["peak_kb"] * 1024
        how = "peak RSS (VmHWM) of a fresh subprocess per kind of step"
    mem_ratio = peaks["dp"] / peaks["plain"]

    print(
        f"model: {label}; device {device}; LoRA r=8 on {','.join(info['targets'])}; "
        f"{info['trainable_parameters']} trainable of {info['total_parameters']} parameters"
    )
    print(
        f"threads: {threads}; load average: {os.getloadavg()[0]:.2f}; torch {torch.__version__}; "
        f"precision {plain.precision.name if device == 'cuda' else 'fp32'}; batch {args.batch} x {args.seq_len} tokens; "
        f"{args.steps} interleaved rounds"
    )
    print(
        f"correctness: DP (noise 0, unreachable clip) vs plain gradient, relative difference {rel:.2e} "
        f"({'ok' if ok else 'MISMATCH'})"
    )
    print(f"lora_step_seconds_min: {min(t_plain):.4f}")
    print(f"dp_lora_step_seconds_min: {min(t_dp):.4f}")
    print(f"dp_lora_vs_lora_step: {ratio:.3f}")
    print(f"dp_lora_vs_lora_step_median: {median_ratio:.3f}")
    print(f"lora_tokens_per_s: {tokens / min(t_plain):.1f}")
    print(f"dp_lora_tokens_per_s: {tokens / min(t_dp):.1f}")
    print(f"memory: {how}; plain {peaks['plain'] / 2**20:.1f} MiB, dp {peaks['dp'] / 2**20:.1f} MiB")
    print(f"dp_lora_vs_lora_memory: {mem_ratio:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
