"""Beam search with a key/value cache equals the full-recompute search it replaces (issue 19 item 6).

The oracle is :meth:`TorchCausalLM._beam_many` (every step re-runs the whole prefix, right-padded),
itself checked against one prompt at a time in tests/models/test_torch_causal.py.
"""

from __future__ import annotations

import random

import pytest
import torch

from lmleak.models.torch_causal import TorchCausalLM


def _prompts(seed, n, vocab=64):
    rng = random.Random(seed)
    return [[1, *(rng.randrange(3, vocab) for _ in range(rng.randrange(1, 12)))] for _ in range(n)]


@pytest.mark.parametrize("beams,steps", [(1, 6), (3, 8), (4, 5)])
def test_cached_beam_search_equals_recompute(tiny_gpt2, id_tokenizer, beams, steps):
    lm = TorchCausalLM(tiny_gpt2, id_tokenizer, name="tiny", max_length=64)
    prompts = _prompts(beams, 9)
    with torch.inference_mode():
        assert lm._cacheable(prompts, steps)
        assert lm._beam_many_cached(prompts, steps, beams) == lm._beam_many(prompts, steps, beams)


def test_cached_beam_search_with_eos(id_tokenizer):
    """A model that favours EOS: beams finish early and the stopping rule applies."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(1)
    module = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=64, n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=1, eos_token_id=2
        )
    ).eval()
    lm = TorchCausalLM(module, id_tokenizer, name="eos", max_length=64)
    prompts = _prompts(7, 12)
    with torch.no_grad():
        # EOS scores just below the token the model generates most: often among the beams' candidates
        firsts = [b[0] for beams_ in lm._beam_many(prompts, 1, 1) for b in beams_ if b]
        common = max(set(firsts), key=firsts.count)
        module.lm_head.weight[2] = module.lm_head.weight[common] * 0.97
    with torch.inference_mode():
        want = lm._beam_many(prompts, 10, 3)
        assert any(len(b) < 10 for beams_ in want for b in beams_)  # some beams ended at EOS
        assert lm._beam_many_cached(prompts, 10, 3) == want


def test_generate_falls_back_when_the_window_would_slide(tiny_gpt2, id_tokenizer):
    lm = TorchCausalLM(tiny_gpt2, id_tokenizer, name="tiny", max_length=12)
    long_prompt = " ".join(str(t) for t in range(3, 13))
    assert not lm._cacheable([[1, *range(3, 13)]], 6)
    calls = []
    orig = lm._beam_many
    lm._beam_many = lambda *a: calls.append(a) or orig(*a)
    lm.generate([long_prompt], max_new_tokens=6, num_beams=2)
    assert calls  # the sliding-window search, not the cache
