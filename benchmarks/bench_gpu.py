"""The ledger pass on a CUDA GPU vs the CPU, side by side in one run (issue 9: models that need GPUs).

One saved random-init GPT (GPT-2 small's shape by default: 12 layers, 768 wide, ~90M parameters
with CustomerSim's word vocabulary) scores the same CustomerSim corpus twice with
:func:`lmleak.ledger.ledger.run_ledger_pass`: once loaded with ``device="cpu"`` (torch's default
threads, all cores) and once with ``device="cuda"``. Each device first scores a few documents
(kernels, allocator) outside the timed pass.

Prints ``ledger_cuda_vs_cpu`` (CPU pass time / GPU pass time), both pass times and tokens/s, and
the agreement of the two ledgers: ``max_abs_logprob_diff``, ``rank_agreement`` (share of tokens
whose rank is the same), the size of the rank flips and ``topK_agreement`` (share of tokens on the
same side of top-K, which is what S depends on). A rank flips where another token's score ties the
true token's to float rounding; a random-init model's predictions are nearly flat, so it has many
such ties (measured on an H100: 0.998 of ranks equal, every flip by 1, top-1/3/10 membership equal
for every token, |Δ log-prob| <= 5e-6; a trained model in ``tests/gpu`` agrees on > 0.999). Exit 1 when the ledgers disagree beyond that (token ids differ,
|Δ log-prob| >= 1e-3, rank agreement < 0.99); exit 2 without a CUDA GPU.

Usage: ``python benchmarks/bench_gpu.py [--users 200] [--layers 12] [--width 768] [--batch-tokens 16384]``
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    import numpy as np
    import torch

    from lmleak.data.loaders import iter_documents
    from lmleak.data.synth.customersim import synthesize
    from lmleak.ledger.ledger import StreamedCorpus, read_ledger, run_ledger_pass
    from lmleak.models.loading import load_model
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=200)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--batch-tokens", type=int, default=16384)
    ap.add_argument("--shard-size", type=int, default=256)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(
            "error: no CUDA GPU visible to torch; this benchmark compares one with the CPU", file=sys.stderr
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="bench_gpu_") as tmp:
        root = Path(tmp)
        paths = synthesize(
            root / "data", users=args.users, dialogs_per_user=5, seed=0, canaries=2, canary_repeats=3
        )
        tok = build_tokenizer((d.text for d in iter_documents(paths["corpus"])), kind="word", vocab_size=8000)
        shape = SmallGPTConfig(
            n_positions=256, n_embd=args.width, n_layer=args.layers, n_head=max(1, args.width // 64)
        )
        module = new_small_gpt(len(tok), shape, seed=0)
        params = sum(p.numel() for p in module.parameters())
        model_dir = save_small_model(module, tok, root / "model")
        print(f"torch_version: {torch.__version__}")
        print(f"gpu: {torch.cuda.get_device_name(0)}")
        print(f"cpu_count: {os.cpu_count()}")
        print(f"torch_threads_cpu: {torch.get_num_threads()}")
        print(
            f"model: gpt {args.layers}x{args.width} random-init, {params / 1e6:.1f}M parameters, vocab {len(tok)}"
        )
        print(f"batch_tokens: {args.batch_tokens}")
        seconds, meta = {}, {}
        for dev in ("cpu", "cuda"):
            model = load_model(str(model_dir), device=dev, batch_tokens=args.batch_tokens)
            warm = list(itertools.islice(StreamedCorpus(paths["corpus"]), 8))
            run_ledger_pass(model, warm, root / f"warm-{dev}", shard_size=4)
            if dev == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            meta[dev] = run_ledger_pass(
                model, StreamedCorpus(paths["corpus"]), root / dev, shard_size=args.shard_size
            )
            seconds[dev] = time.perf_counter() - t0
            del model
        n_tok = meta["cpu"]["num_tokens"]
        a, b = read_ledger(root / "cpu"), read_ledger(root / "cuda")
        same_ids = a.doc_ids == b.doc_ids and np.array_equal(a.token_ids, b.token_ids)
        diff = float(np.abs(a.logprobs.astype(np.float64) - b.logprobs).max())
        agree = float((a.ranks == b.ranks).mean())
        flips = np.abs(a.ranks.astype(np.int64) - b.ranks)[a.ranks != b.ranks]
        in_top = {k: float(((a.ranks <= k) == (b.ranks <= k)).mean()) for k in (1, 3, 10)}
        print(f"documents: {meta['cpu']['num_docs']}")
        print(f"tokens: {n_tok}")
        print(f"cpu_pass_s: {seconds['cpu']:.2f}")
        print(f"cuda_pass_s: {seconds['cuda']:.2f}")
        print(f"cpu_tokens_per_s: {n_tok / seconds['cpu']:.0f}")
        print(f"cuda_tokens_per_s: {n_tok / seconds['cuda']:.0f}")
        print(f"max_abs_logprob_diff: {diff:.2e}")
        print(f"rank_agreement: {agree:.6f}")
        print(f"rank_flip_max_abs: {int(flips.max()) if flips.size else 0}")
        print(f"rank_flip_median_abs: {float(np.median(flips)) if flips.size else 0:.1f}")
        for k, v in in_top.items():
            print(f"top{k}_agreement: {v:.6f}")
        print(f"ledger_cuda_vs_cpu: {seconds['cpu'] / seconds['cuda']:.2f}")
        ok = same_ids and diff < 1e-3 and agree >= 0.99
        print(f"agree: {ok}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
