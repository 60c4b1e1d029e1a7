"""The packed pass (a text and its neighbours' suffixes in one row under a tree mask) against scoring
every sequence whole, on GPT-2 and Llama modules, across row splits and edge-case neighbours."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from lmleak.attacks.mia_methods import teacher_forced_pass
from lmleak.attacks.packed_pass import common_prefix_length, packed_pass, packed_rows, packs, tree_mask
from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt
from lmleak.models.tokenizer import HFTokenizer
from lmleak.models.torch_causal import TorchCausalLM

WORDS = "order parcel refund invoice ticket package letter account device voucher street road phone".split()


def _texts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 30)))) for _ in range(n)]


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def model(request):
    tok = HFTokenizer(build_tokenizer(_texts(20), kind="word", vocab_size=200))
    if request.param == "gpt2":
        module = new_small_gpt(
            tok.vocab_size, SmallGPTConfig(n_positions=64, n_embd=32, n_layer=2, n_head=2), seed=1
        )
    else:
        torch.manual_seed(1)
        module = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=tok.vocab_size,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                max_position_embeddings=64,
            )
        ).eval()
    return TorchCausalLM(module, tok, name=request.param, max_length=64, batch_tokens=300)


def _neighbours(seqs, vocab, seed=0):
    """One-token swaps, plus the awkward ones: a copy, a longer and a shorter sequence, a changed first token."""
    rng = np.random.default_rng(seed)
    out = []
    for s in seqs:
        nb = []
        for _ in range(4):
            y = list(s)
            p = int(rng.integers(0, len(y)))
            y[p] = 3 + (y[p] - 3 + 1 + int(rng.integers(0, vocab - 4))) % (vocab - 3)
            nb.append(y)
        nb += [list(s), [*s, 3, 4], list(s[: max(1, len(s) // 2)]), [4 if s[0] != 4 else 5, *s[1:]]]
        out.append(nb)
    return out


@pytest.mark.parametrize("cap", [None, 40])
def test_packed_scores_equal_scoring_every_sequence_whole(model, cap):
    seqs = [model.tokenizer.encode(t) for t in _texts(9, seed=2)]
    nbrs = _neighbours(seqs, model.tokenizer.vocab_size)
    assert packs(model, seqs)
    got = packed_pass(model, seqs, nbrs, moments=True, cap=cap)
    whole = teacher_forced_pass(model, seqs, moments=True)
    whole_nbrs = teacher_forced_pass(model, [y for nb in nbrs for y in nb]).logprobs
    for a, b in zip(got.logprobs, whole.logprobs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for a, b in zip(got.mu, whole.mu, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for a, b in zip(got.sigma, whole.sigma, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    flat = [y for nb in got.neighbour_logprobs for y in nb]
    assert [len(y) for y in flat] == [len(y) for nb in nbrs for y in nb]
    for a, b in zip(flat, whole_nbrs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_small_cap_splits_a_text_over_rows_each_starting_with_the_text():
    rows = packed_rows([[5, 6, 7, 8]], [[[9, 6, 7, 8], [5, 9, 7, 8], [5, 6, 9, 8]]], bos=1, cap=10)
    assert [r.ids for r in rows] == [[1, 5, 6, 7, 8, 9, 6, 7, 8], [1, 5, 6, 7, 8, 9, 7, 8, 9, 8]]
    assert [r.segments for r in rows] == [[(0, 0, 5, 4)], [(1, 1, 5, 3), (2, 2, 8, 2)]]
    assert rows[1].positions == [0, 1, 2, 3, 4, 2, 3, 4, 3, 4]


def test_the_tree_mask_lets_a_suffix_see_only_the_shared_prefix_and_itself():
    (row,) = packed_rows([[5, 6, 7]], [[[5, 9, 7]]], bos=1, cap=99)
    allow = tree_mask([row], [3], width=7)[0].int().tolist()
    assert allow == [
        [1, 0, 0, 0, 0, 0, 0],  # BOS
        [1, 1, 0, 0, 0, 0, 0],  # 5
        [1, 1, 1, 0, 0, 0, 0],  # 6
        [1, 1, 1, 1, 0, 0, 0],  # 7
        [1, 1, 0, 0, 1, 0, 0],  # 9: BOS and 5 (q = 1), then itself
        [1, 1, 0, 0, 1, 1, 0],  # 7 after 9
        [0, 0, 0, 0, 0, 0, 1],  # padding sees itself only
    ]


def test_only_hugging_face_modules_with_texts_in_one_window_pack(model):
    assert not packs(object(), [[1, 2]])  # not a TorchCausalLM: no module to pack into
    assert not packs(model, [[3] * model.max_length])
    assert not packs(model, [[3]], [[[3] * model.max_length]])
    assert common_prefix_length([], [1]) == 0


def test_a_bfloat16_module_packs_to_the_same_numbers_as_its_whole_passes():
    tok = HFTokenizer(build_tokenizer(_texts(20), kind="word", vocab_size=200))
    module = new_small_gpt(
        tok.vocab_size, SmallGPTConfig(n_positions=64, n_embd=32, n_layer=2, n_head=2), seed=4
    )
    model = TorchCausalLM(module.to(torch.bfloat16), tok, name="bf16", max_length=64, batch_tokens=300)
    seqs = [tok.encode(t) for t in _texts(4, seed=5)]
    nbrs = _neighbours(seqs, tok.vocab_size, seed=1)
    got = packed_pass(model, seqs, nbrs)
    whole = teacher_forced_pass(model, [y for nb in nbrs for y in nb]).logprobs
    flat = [y for nb in got.neighbour_logprobs for y in nb]
    assert all(np.isfinite(y).all() for y in flat)
    for a, b in zip(flat, whole, strict=True):
        np.testing.assert_allclose(a, b, atol=0.1)  # bf16 rounding differs between the two batchings
