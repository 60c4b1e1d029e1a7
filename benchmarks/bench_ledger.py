"""The ledger (one teacher-forced pass per document) vs per-prefix querying and vs a bare forward pass.

Prints:
    ``ledger_vs_per_prefix: X`` — time of Algorithm 1's per-prefix querying (one query per prefix,
    the prefixes of a document batched together, i.e. the cheapest per-prefix schedule) divided by
    the ledger's time for the same documents; goal >= 100. The token-count ratio at L = 256 is
    (L + 1) / 2 = 128.5 input tokens per scored token. The per-prefix baseline is capped on a
    fixed sample of documents and scaled linearly (sample and factor printed).
    ``ledger_vs_forward: X`` — ledger throughput (tokens/s, the whole ``build_ledger`` call:
    tokenising, forward, ranks, Parquet shards) over a bare batched forward pass of the same model
    on the same batches; goal >= 0.8.

Model: a small GPT-2 (4 layers, width 256, vocab 4096, ~5M parameters, random weights: FLOPs
do not depend on values), documents of L = 256 random tokens. Correctness: the runs S (k = 1
and k = 3) of the sampled documents from the ledger equal those of per-prefix querying; the
script exits 1 otherwise.

Usage: ``python benchmarks/bench_ledger.py [--docs 32] [--sample 1] [--rounds 3] [--threads 1]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")


class _IdTokenizer:
    """Token ids written as decimal words (no tokenizer cost hides in either side)."""

    vocab_size = 4096
    bos_id, eos_id, pad_id = 1, 2, 0

    def encode(self, text: str) -> list[int]:
        return [int(w) for w in text.split()]

    def decode(self, ids) -> str:  # type: ignore[no-untyped-def]
        return " ".join(str(int(i)) for i in ids)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=32)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--sample", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()

    import numpy as np
    import torch

    from lmleak.data.corpus import Corpus, Document
    from lmleak.ledger.ledger import build_ledger
    from lmleak.models.small import SmallGPTConfig, new_small_gpt
    from lmleak.models.torch_causal import TorchCausalLM
    from lmleak.progress import set_enabled
    from lmleak.report.sequences import leaked_runs, ledger_hits

    set_enabled(False)
    threads = args.threads or 1  # the other core is busy with other work on these machines
    torch.set_num_threads(threads)
    L = args.length
    tok = _IdTokenizer()
    module = new_small_gpt(
        tok.vocab_size, SmallGPTConfig(n_positions=L + 1, n_embd=256, n_layer=4, n_head=4), seed=0
    ).eval()
    nparams = sum(p.numel() for p in module.parameters())
    model = TorchCausalLM(module, tok, name="bench-gpt", max_length=L + 1, batch_tokens=8 * (L + 1))
    rng = np.random.default_rng(0)
    docs = [rng.integers(5, tok.vocab_size, size=L) for _ in range(args.docs)]
    # a repeated phrase so S is not empty even for random weights at k = 3
    corpus = Corpus([Document(f"u{i % 8}", f"d{i}", " ".join(map(str, d))) for i, d in enumerate(docs)])
    sample = list(range(min(args.sample, args.docs)))
    factor = args.docs / len(sample)
    print(f"threads: {threads}  load: {os.getloadavg()[0]:.2f}  torch: {torch.__version__}  dtype: float32")
    print(
        f"model: GPT-2, {nparams / 1e6:.2f}M parameters; documents: {args.docs} x {L} tokens; per-prefix sample: {len(sample)} document(s), scale factor {factor:.1f}"
    )

    def run_ledger():  # type: ignore[no-untyped-def]
        with tempfile.TemporaryDirectory() as d:
            return build_ledger(model, corpus, d, shard_size=args.docs)

    rows = [[tok.bos_id, *d.tolist()] for d in docs]

    @torch.inference_mode()
    def run_forward() -> None:
        for batch in model._batches([len(r) for r in rows]):
            ids, mask = model._pad([rows[i] for i in batch])
            model._forward(ids, mask)

    def run_per_prefix() -> list[np.ndarray]:
        out = []
        for i in sample:
            ids = docs[i].tolist()
            lp = model.next_logprobs([ids[:j] for j in range(L)])  # one query per prefix
            true = lp[np.arange(L), ids]
            out.append((lp > true[:, None]).sum(1) + 1)
        return out

    run_ledger(), run_forward(), run_per_prefix()  # warm-up
    t_led, t_fwd, t_pp = [], [], []
    ledger = None
    pp_ranks: list[np.ndarray] = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        ledger = run_ledger()
        t_led.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        run_forward()
        t_fwd.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        pp_ranks = run_per_prefix()
        t_pp.append((time.perf_counter() - t0) * factor)
    assert ledger is not None

    for k in (1, 3):
        doc, s, e = leaked_runs(ledger_hits(ledger, k), ledger.offsets)
        for j, i in enumerate(sample):
            got = [(a, b) for d_, a, b in zip(doc.tolist(), s.tolist(), e.tolist(), strict=True) if d_ == i]
            _, ps, pe = leaked_runs(pp_ranks[j] <= k, np.array([0, L]))
            if got != list(zip(ps.tolist(), pe.tolist(), strict=True)):
                print(
                    f"MISMATCH: S differs between the ledger and per-prefix querying (doc {i}, k={k})",
                    file=sys.stderr,
                )
                return 1

    n_tok = args.docs * L
    pp_tokens = L * (L + 1) // 2 + L  # inputs fed by per-prefix querying per document (BOS included)
    print(
        f"ledger: {min(t_led):.3f} s ({n_tok / min(t_led):,.0f} tok/s); forward: {min(t_fwd):.3f} s ({n_tok / min(t_fwd):,.0f} tok/s)"
    )
    print(
        f"per-prefix (scaled): {min(t_pp):.1f} s; input tokens per scored token: per-prefix {pp_tokens / L:.1f}, ledger 1.0"
    )
    print(
        f"median ratios: per-prefix {np.median([p / q for p, q in zip(t_pp, t_led, strict=True)]):.1f}, forward {np.median([f / q for f, q in zip(t_fwd, t_led, strict=True)]):.2f}"
    )
    print(f"ledger_vs_per_prefix: {min(t_pp) / min(t_led):.1f}")
    print(f"ledger_vs_forward: {min(t_fwd) / min(t_led):.2f}")
    print("correctness: ok (S for k=1 and k=3 identical on the sampled documents)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
