"""TorchCausalLM against slow obvious oracles: one forward pass per prefix."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.models.torch_causal import TorchCausalLM, _prune
from lmleak.models.windows import windows as _windows


def per_prefix_oracle(module, full: list[int], start: int, target: int) -> tuple[int, float, float]:
    """Rank, logprob, top-1 logprob of full[target] from inputs full[start:target] (one call)."""
    with torch.no_grad():
        logits = module(input_ids=torch.tensor([full[start:target]])).logits[0, -1]
    lp = torch.log_softmax(logits.float(), -1)
    true = lp[full[target]]
    return int((lp > true).sum()) + 1, float(true), float(lp.max())


def test_token_stats_equal_per_prefix_queries_without_windows(tiny_gpt2, id_tokenizer):
    lm = TorchCausalLM(tiny_gpt2, id_tokenizer, name="t", max_length=64)
    rng = np.random.default_rng(0)
    seqs = [rng.integers(3, 64, size=n).tolist() for n in (1, 5, 17, 30)]
    stats = lm.token_stats(seqs)
    for seq, s in zip(seqs, stats, strict=True):
        full = [1, *seq]
        for i in range(len(seq)):
            rank, lp, top = per_prefix_oracle(tiny_gpt2, full, 0, i + 1)
            assert s.ranks[i] == rank
            assert s.logprobs[i] == pytest.approx(lp, abs=1e-4)
            assert s.top1_logprobs[i] == pytest.approx(top, abs=1e-4)


def test_sliding_windows_score_each_token_once_with_at_least_overlap_context(tiny_gpt2, id_tokenizer):
    lm = TorchCausalLM(tiny_gpt2, id_tokenizer, name="t", max_length=8, overlap=3)
    seq = list(range(3, 30))
    full = [1, *seq]
    s = lm.token_stats([seq])[0]
    assert len(s) == len(seq)
    for start, end, first in _windows(len(full), 8, 3):
        for t in range(first, end):
            assert t - start >= min(3, t)
            rank, lp, _ = per_prefix_oracle(tiny_gpt2, full, start, t)
            assert s.ranks[t - 1] == rank
            assert s.logprobs[t - 1] == pytest.approx(lp, abs=1e-4)


@settings(max_examples=15, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 40), min_size=1, max_size=6),
    batch_tokens=st.integers(8, 300),
)
def test_token_stats_do_not_depend_on_batching(tiny_gpt2, id_tokenizer, lengths, batch_tokens):
    rng = np.random.default_rng(sum(lengths))
    seqs = [rng.integers(3, 64, size=n).tolist() for n in lengths]
    one = TorchCausalLM(tiny_gpt2, id_tokenizer, name="a", max_length=16, batch_tokens=16)
    many = TorchCausalLM(tiny_gpt2, id_tokenizer, name="b", max_length=16, batch_tokens=batch_tokens)
    a = [one.token_stats([s])[0] for s in seqs]
    b = many.token_stats(seqs)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.ranks, y.ranks)
        np.testing.assert_allclose(x.logprobs, y.logprobs, atol=1e-5)


def test_score_ids_is_the_sum_of_continuation_logprobs(tiny_gpt2, id_tokenizer):
    lm = TorchCausalLM(tiny_gpt2, id_tokenizer, name="t", max_length=64)
    ctx, cont = [5, 6, 7], [8, 9]
    full = [1, *ctx, *cont]
    expected = sum(per_prefix_oracle(tiny_gpt2, full, 0, t)[1] for t in (4, 5))
    assert lm.score_ids([ctx], [cont])[0] == pytest.approx(expected, abs=1e-4)
    nl = lm.next_logprobs([ctx])[0]
    assert nl[8] == pytest.approx(per_prefix_oracle(tiny_gpt2, full, 0, 4)[1], abs=1e-4)


def test_greedy_generation_follows_the_argmax(tiny_gpt2, id_tokenizer):
    lm = TorchCausalLM(tiny_gpt2, id_tokenizer, name="t", max_length=64)
    out = lm.generate(["5 6"], max_new_tokens=4)[0][0]
    ids = [1, 5, 6]
    for _ in range(4):
        nxt = int(np.argmax(lm.next_logprobs([ids[1:]])[0]))
        if nxt == 2:
            break
        ids.append(nxt)
    assert out == id_tokenizer.decode(ids[3:])


def test_overlap_zero_scores_every_token_once_against_the_per_prefix_oracle(tiny_gpt2, id_tokenizer):
    lm = TorchCausalLM(tiny_gpt2, id_tokenizer, name="t", max_length=8, overlap=0)
    seq = list(range(3, 30))
    full = [1, *seq]
    s = lm.token_stats([seq])[0]
    assert len(s) == len(seq) and np.all(s.ranks >= 1)
    covered = []
    for start, end, first in _windows(len(full), 8, 0):
        for t in range(first, end):
            covered.append(t)
            rank, lp, _ = per_prefix_oracle(tiny_gpt2, full, start, t)
            assert s.ranks[t - 1] == rank
            assert s.logprobs[t - 1] == pytest.approx(lp, abs=1e-4)
    assert covered == list(range(1, len(full)))


def test_batch_decoding_equals_decoding_one_by_one():
    from lmleak.models.small import build_tokenizer
    from lmleak.models.tokenizer import HFTokenizer

    texts = [
        "Hello there, Ann Lee <ann.lee@example.org>",
        "  call (201) 555-0142\n> quoted",
        "naïve café ünïcode",
    ]
    tok = HFTokenizer(build_tokenizer(texts * 5, kind="bpe", vocab_size=300))
    ids = [tok.encode(t) for t in texts]
    rows = [r[a:b] for r in ids for a in range(0, len(r), 5) for b in (a + 3, len(r))] + [[]]
    assert tok.decode_many(rows) == [tok.decode(r) for r in rows]


def beam_oracle(lm: TorchCausalLM, ids: list[int], steps: int, beams: int) -> list[list[int]]:
    """Beam search of one prompt, one forward pass of its live beams per step (no batching)."""
    eos = lm.tokenizer.eos_id
    live: list[tuple[float, list[int]]] = [(0.0, [])]
    done: list[tuple[float, list[int]]] = []
    for _ in range(steps):
        lp = lm._step([ids + seq for _, seq in live])
        cands: list[tuple[float, list[int]]] = []
        for (score, seq), row in zip(live, lp, strict=True):
            vals, idx = torch.topk(row, beams)
            for v, t in zip(vals.tolist(), idx.tolist(), strict=True):
                cands.append((score + v, [*seq, t]))
        live, going = _prune(cands, beams, eos, done)
        if not going:
            break
    pool = sorted(done + live, key=lambda c: -c[0])
    return [seq for _, seq in pool[:beams]]


@settings(max_examples=10, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 12), min_size=1, max_size=5),
    beams=st.integers(1, 3),
    steps=st.integers(1, 6),
    batch_tokens=st.integers(16, 200),
)
def test_batched_beam_search_equals_one_prompt_at_a_time(
    tiny_gpt2, id_tokenizer, lengths, beams, steps, batch_tokens
):
    rng = np.random.default_rng(sum(lengths) + beams)
    lm = TorchCausalLM(tiny_gpt2, id_tokenizer, name="b", max_length=32, batch_tokens=batch_tokens)
    prompts = [[1, *rng.integers(3, 64, size=n).tolist()] for n in lengths]
    batched = lm._beam_many(prompts, steps, beams)
    one_by_one = [beam_oracle(lm, p, steps, beams) for p in prompts]
    assert batched == one_by_one
