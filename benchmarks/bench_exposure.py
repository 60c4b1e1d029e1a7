"""Exact canary exposure over 10^6 candidates: prefix-grouped (pruned trie) vs scoring every candidate.

Prints (issue 5):
    grouped_vs_all: X   small GPT, a canary the model has NOT memorised (worst case for pruning); goal >= 10
    pruned_vs_all: X    small GPT, a memorised canary (rank <= 10); goal >= 1000
plus the same two ratios for the small LSTM (``*_lstm``), work counts (tokens fed to the model) and
context. "All" scores a seeded sample of the 10^6 candidates with ``score_ids`` (batched teacher
forcing) and scales linearly; the sample size and factor are printed. Correctness is checked in
the same run (exit 1 on mismatch): the pruned rank equals the rank from a search pruned at a far higher threshold, the trie's
path costs equal the batch scores of sampled candidates, and the sampled fraction of more likely
candidates agrees with the exact rank.

Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_exposure.py [--sample 20000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

from lmleak.attacks.exposure import exposure
from lmleak.attacks.trie import CanaryFormat, CandidateSpace, SearchStats, count_candidates, path_cost
from lmleak.models.small import SmallGPTConfig, SmallLSTM, SmallLSTMConfig, build_tokenizer, new_small_gpt
from lmleak.models.tokenizer import HFTokenizer
from lmleak.models.torch_causal import TorchCausalLM

PREFIX = "My ID is: "
MEMORISED = "271828"
UNSEEN = "604913"


def corpus(seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, size=rng.integers(2, 9))) for _ in range(1500)]
    words += ["the", "order", "ships", "to", "my", "address", "is", "ID", "My"]
    texts = [" ".join(rng.choice(words, size=12)) for _ in range(400)]
    texts += [f"{PREFIX}{x:06d}" for x in rng.integers(0, 10**6, size=50)]
    return texts


def memorise(lm: TorchCausalLM, tok: HFTokenizer, texts: list[str], steps: int, seed: int = 0) -> float:
    """Train briefly on the canary (repeated) plus filler text, so it is memorised. Returns seconds."""
    torch.manual_seed(seed)
    module = lm.module.train()
    opt = torch.optim.Adam(module.parameters(), lr=3e-3)
    canary = [tok.bos_id, *tok.encode(PREFIX + MEMORISED), tok.eos_id]
    filler = [[tok.bos_id, *tok.encode(t)][: len(canary)] for t in texts[:64]]
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    for _ in range(steps):
        rows = [canary] * 4 + [filler[i] for i in rng.integers(0, len(filler), size=4)]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), tok.pad_id)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
        mask = (ids != tok.pad_id).long()
        logits = module(input_ids=ids, attention_mask=mask).logits[:, :-1]
        tgt = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    module.eval()
    return time.perf_counter() - t0


def score_all_sample(lm: TorchCausalLM, space: CandidateSpace, secrets: list[str]) -> np.ndarray:
    """The baseline: every candidate scored as its own sequence (batched teacher forcing)."""
    conts = space.continuations(secrets)
    return -lm.score_ids([space.context_ids] * len(conts), conts)


def bench(
    name: str, lm: TorchCausalLM, space: CandidateSpace, sample: np.ndarray, rounds: int
) -> dict[str, float]:
    fmt = space.fmt
    n = fmt.num_candidates
    cands = fmt.candidates(sample)
    costs = {s: path_cost(lm, space.context_ids, space.continuation(s)) for s in (MEMORISED, UNSEEN)}
    # warm-up (allocator, kernels, lazy imports)
    count_candidates(lm, space, [costs[MEMORISED]])
    score_all_sample(lm, space, cands[:256])
    t_mem, t_unseen, t_all = [], [], []
    st_mem, st_unseen = SearchStats(), SearchStats()
    all_costs = None
    for _ in range(rounds):
        s1, s2 = SearchStats(), SearchStats()
        t0 = time.perf_counter()
        c_mem = count_candidates(lm, space, [costs[MEMORISED]], stats=s1)[0][0]
        t_mem.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        # both thresholds in one search: the memorised canary's count then comes from a search
        # pruned at a far higher threshold, an independent check of the pruned result
        c_both = count_candidates(lm, space, [costs[MEMORISED], costs[UNSEEN]], stats=s2)[0]
        c_unseen = c_both[1]
        t_unseen.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        all_costs = score_all_sample(lm, space, cands)
        t_all.append(time.perf_counter() - t0)
        st_mem, st_unseen = s1, s2
    scale = n / len(sample)
    all_time = min(t_all) * scale
    # ---- correctness, same run
    ok = True
    if c_both[0] != c_mem:
        print(f"MISMATCH {name}: pruned count {c_mem} vs {c_both[0]} from the wider search", file=sys.stderr)
        ok = False
    check = cands[:200]
    trie_costs = np.array([path_cost(lm, space.context_ids, space.continuation(s)) for s in check])
    diff = float(np.max(np.abs(trie_costs - all_costs[:200])))
    if diff > 1e-3:
        print(f"MISMATCH {name}: trie path costs differ from batch scores by {diff}", file=sys.stderr)
        ok = False
    frac = float(np.mean(all_costs < costs[UNSEEN] - 1e-4))
    se = max(np.sqrt(frac * (1 - frac) / len(sample)), 1.0 / len(sample))
    if abs(frac - c_unseen / n) > 5 * se + 1e-6:
        print(f"MISMATCH {name}: sampled fraction {frac:.5f} vs exact {c_unseen / n:.5f}", file=sys.stderr)
        ok = False
    if c_mem + 1 > 10:
        print(f"NOTE {name}: the memorised canary ranks {c_mem + 1} (> 10)", file=sys.stderr)
        ok = False
    tokens_all = int(sum(len(space.context_ids) + 1 + len(c) for c in space.continuations(cands))) * scale
    print(
        f"# {name}: memorised rank {c_mem + 1} (exposure {exposure(c_mem + 1, n):.2f} bits), "
        f"unmemorised rank {c_unseen + 1} (exposure {exposure(c_unseen + 1, n):.2f} bits)"
    )
    print(
        f"# {name}: pruned memorised {min(t_mem) * 1e3:.1f} ms, {st_mem.nodes_scored} nodes, {st_mem.tokens_fed} tokens; "
        f"grouped unmemorised {min(t_unseen):.2f} s, {st_unseen.nodes_scored} nodes, {st_unseen.tokens_fed} tokens; "
        f"all (scaled) {all_time:.1f} s, {tokens_all:.3g} tokens"
    )
    print(
        f"# {name}: all = {len(sample)} sampled candidates x {scale:.0f}; median ratios "
        f"grouped {np.median(t_all) * scale / np.median(t_unseen):.1f}, pruned {np.median(t_all) * scale / np.median(t_mem):.0f}"
    )
    return {
        "grouped": all_time / min(t_unseen),
        "pruned": all_time / min(t_mem),
        "work_grouped": tokens_all / st_unseen.tokens_fed,
        "work_pruned": tokens_all / st_mem.tokens_fed,
        "ok": ok,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    threads = args.threads or (1 if load > 1.0 else 2)
    torch.set_num_threads(threads)
    texts = corpus()
    tok = HFTokenizer(build_tokenizer(texts, kind="word", vocab_size=2000))
    fmt = CanaryFormat(PREFIX)
    t0 = time.perf_counter()
    space = CandidateSpace.build(tok, fmt)
    build_s = time.perf_counter() - t0
    print(
        f"# torch {torch.__version__}, threads {threads}, load {load:.2f}, float32, vocab {tok.vocab_size}, "
        f"|R| = {fmt.num_candidates}, trie kind {space.kind} (built in {build_s * 1e3:.1f} ms), "
        f"context {len(space.context_ids)} tokens"
    )
    sample = np.random.default_rng(7).choice(fmt.num_candidates, size=args.sample, replace=False)
    gpt = TorchCausalLM(
        new_small_gpt(tok.vocab_size, SmallGPTConfig(), seed=0), tok, name="gpt", max_length=128
    )
    lstm_mod = SmallLSTM(SmallLSTMConfig(tok.vocab_size))
    lstm = TorchCausalLM(lstm_mod, tok, name="lstm", max_length=256)
    results = {}
    for name, lm, steps in (("gpt", gpt, 80), ("lstm", lstm, 150)):
        secs = memorise(lm, tok, texts, steps)
        print(
            f"# {name}: {sum(p.numel() for p in lm.module.parameters()) / 1e6:.2f}M parameters, "
            f"memorised {MEMORISED} in {steps} steps ({secs:.1f} s)"
        )
        results[name] = bench(name, lm, space, sample, args.rounds)
    g, ls = results["gpt"], results["lstm"]
    print(f"grouped_vs_all: {g['grouped']:.1f}")
    print(f"pruned_vs_all: {g['pruned']:.0f}")
    print(f"grouped_vs_all_lstm: {ls['grouped']:.1f}")
    print(f"pruned_vs_all_lstm: {ls['pruned']:.0f}")
    print(f"work_grouped_vs_all: {g['work_grouped']:.1f}")
    print(f"work_pruned_vs_all: {g['work_pruned']:.0f}")
    return 0 if g["ok"] and ls["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
