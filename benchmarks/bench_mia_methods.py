"""Membership-inference methods from one shared pass vs each method scoring on its own.

Prints ``shared_vs_separate`` (min time of scoring every method with the shared pass over min time
of scoring each method on its own, same texts and model, interleaved in one run; the goal is >= 3),
its median ratio, the token work of both paths (padded tokens fed to the target model, counted at
its forward call: deterministic, it explains the time ratio), and the same for three subsets:
``..._single_pass_methods`` (perplexity, zlib, min_k, min_k_pp: everything one pass over the text
gives) and ``..._without_neighbourhood``.

Sharing saves the text's own pass that every method repeats on its own: with ``k`` methods and
``E`` passes-worth of the methods' own inputs (lowercased text, ReCaLL's text after the prefix,
whose key/value cache every text shares, neighbours), the work ratio is about ``(k + E) / (1 + E)``.
The shared path also packs each text's neighbours behind it (:mod:`lmleak.attacks.packed_pass`):
a neighbour's tokens before the replaced word are the text's, so only its tail is computed — about
half a pass per neighbour instead of one. The separate path scores every neighbour whole, as the
method does on its own; ``..._neighbourhood_only`` isolates that packing gain (the neighbourhood
method alone, packed vs whole), which a neighbourhood-only run through lmleak gets too.

Correctness (exit 1 on failure): every method's scores from the two paths agree (rtol 1e-5).

Model: a random-init GPT-2 (2 layers, width 128, vocabulary 8192 so the softmax and the Min-K%++
moments cost what they do at a real vocabulary size; FLOPs do not depend on the weights), a 1-layer
reference GPT-2, an untrained tiny BERT for the neighbours. Texts: seeded synthetic support
messages, mixed case.

Usage: ``python benchmarks/bench_mia_methods.py [--texts 32] [--rounds 3] [--neighbours 8] [--threads 1]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

WORDS = (
    "order parcel refund invoice ticket package letter account device voucher street road phone "
    "delivery monday friday today tomorrow please thanks again late broken missing wrong address"
).split()
NAMES = ("Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "John")


def make_texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        body = " ".join(rng.choice(WORDS, size=int(rng.integers(30, 50))))
        out.append(
            f"Hello, this is {rng.choice(NAMES)} from {rng.integers(1, 99)} Example Road. {body.capitalize()} "
            f"Call me on 555 01{rng.integers(10, 99)}."
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--neighbours", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch
    from transformers import BertConfig, BertForMaskedLM

    from lmleak.attacks.mia_methods import METHODS, MethodOptions, score_methods
    from lmleak.models.hf_masked import HFMaskedLM, build_mlm_tokenizer
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt
    from lmleak.models.tokenizer import HFTokenizer
    from lmleak.models.torch_causal import TorchCausalLM

    torch.set_num_threads(args.threads)
    texts = make_texts(args.texts + 3, args.seed)
    texts, prefix_texts = texts[: args.texts], texts[args.texts :]
    prefix = "\n".join(prefix_texts) + "\n"  # ReCaLL's 3 non-member shots, as lmleak mia takes them
    hf_tok = build_tokenizer(texts + prefix_texts + [t.lower() for t in texts], kind="word", vocab_size=8192)
    tok = HFTokenizer(hf_tok)
    vocab = 8192
    model = TorchCausalLM(
        new_small_gpt(vocab, SmallGPTConfig(n_positions=512, n_embd=128, n_layer=2, n_head=4)),
        tok,
        name="gpt-2x128",
        max_length=512,
        batch_tokens=2048,
    )
    ref = TorchCausalLM(
        new_small_gpt(vocab, SmallGPTConfig(n_positions=512, n_embd=64, n_layer=1, n_head=2), seed=1),
        tok,
        name="ref-1x64",
        max_length=512,
        batch_tokens=2048,
    )
    mtok = build_mlm_tokenizer(texts)
    torch.manual_seed(0)
    mlm = HFMaskedLM(
        BertForMaskedLM(
            BertConfig(
                vocab_size=len(mtok),
                hidden_size=64,
                num_hidden_layers=1,
                num_attention_heads=2,
                intermediate_size=128,
                max_position_embeddings=128,
                pad_token_id=mtok.pad_token_id,
            )
        ),
        mtok,
        name="bert-1x64",
    )

    fed = [0]

    def counting(module, args, kwargs):  # noqa: ANN001, ANN202 - the work count: (padded) tokens the target reads
        fed[0] += int(kwargs["input_ids"].numel())

    model.module.register_forward_pre_hook(counting, with_kwargs=True)
    kw = dict(reference=ref, mlm=mlm, recall_prefix=prefix, num_neighbours=args.neighbours, seed=0)

    print(
        f"threads: torch={torch.get_num_threads()} OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} cpus={os.cpu_count()}"
    )
    print(f"load_average: {os.getloadavg()[0]:.2f}")
    print(f"torch: {torch.__version__} dtype: float32 device: cpu")
    n_tok = sum(len(tok.encode(t)) for t in texts)
    print(
        f"texts: {len(texts)} tokens: {n_tok} vocab: {vocab} neighbours: {args.neighbours} "
        f"recall_prefix_tokens: {len(tok.encode(prefix))} rounds: {args.rounds}"
    )

    suites = {
        "": list(METHODS),
        "_without_neighbourhood": [m for m in METHODS if m != "neighbourhood"],
        "_single_pass_methods": ["perplexity", "zlib", "min_k", "min_k_pp"],
        "_neighbourhood_only": ["neighbourhood"],  # packing alone: the text and its neighbours' tails
    }
    ok = True
    for suffix, methods in suites.items():
        runs = {}
        work = {}
        for shared in (True, False):  # warm-up, work count and the correctness check
            fed[0] = 0
            runs[shared] = score_methods(
                model, texts, MethodOptions(methods=tuple(methods), **kw), min_k=0.2, shared=shared
            )
            work[shared] = fed[0]
        for m in methods:
            if not np.allclose(runs[True][m], runs[False][m], rtol=1e-5, atol=1e-7):
                diff = float(np.max(np.abs(runs[True][m] - runs[False][m])))
                print(f"MISMATCH{suffix}: {m} max abs diff {diff:.3g}", file=sys.stderr)
                ok = False
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.rounds):
            for shared in (True, False):
                t0 = time.perf_counter()
                score_methods(
                    model, texts, MethodOptions(methods=tuple(methods), **kw), min_k=0.2, shared=shared
                )
                times[shared].append(time.perf_counter() - t0)
        ratio = min(times[False]) / min(times[True])
        med = statistics.median(s / h for s, h in zip(times[False], times[True], strict=True))
        print(f"methods{suffix}: {' '.join(methods)}")
        print(f"shared_s{suffix}: {min(times[True]):.3f}")
        print(f"separate_s{suffix}: {min(times[False]):.3f}")
        print(f"shared_vs_separate{suffix}: {ratio:.2f}")
        print(f"shared_vs_separate_median{suffix}: {med:.2f}")
        print(f"tokens_shared{suffix}: {work[True]}")
        print(f"tokens_separate{suffix}: {work[False]}")
        print(f"work_ratio{suffix}: {work[False] / work[True]:.2f}")
    print(f"scores_equal: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
