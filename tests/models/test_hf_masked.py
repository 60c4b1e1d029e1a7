"""models.hf_masked: the BERT tokenizer, BERT's masking rule, fill-mask and the save/load round trip."""

from __future__ import annotations

import math
import stat

import pytest
import torch

from lmleak.models.base import Capability
from lmleak.models.hf_masked import (
    SPECIALS,
    HFMaskedLM,
    MaskedLMConfig,
    build_mlm_tokenizer,
    mask_tokens,
    train_masked_lm,
)

TEXTS = [
    "Ada Smith is a 40 year old woman.",
    "Bob Jones, 52, was admitted on Monday.",
    "The patient Ada was discharged.",
]


@pytest.fixture(scope="module")
def tok():
    return build_mlm_tokenizer(TEXTS)


@pytest.fixture(scope="module")
def mlm(tok):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        pad_token_id=tok.pad_token_id,
    )
    return HFMaskedLM(BertForMaskedLM(cfg), tok, name="tiny")


def test_the_tokenizer_is_uncased_splits_punctuation_and_puts_the_specials_first(tok):
    assert tok.convert_ids_to_tokens(list(range(len(SPECIALS)))) == SPECIALS  # mask_tokens relies on it
    ids = tok("Bob JONES, 52.")["input_ids"]
    assert tok.convert_ids_to_tokens(ids) == ["[CLS]", "bob", "jones", ",", "52", ".", "[SEP]"]


def test_masking_follows_bert_80_10_10_and_never_touches_specials(tok):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(tok), (200, 50), generator=g)
    ids[:, 0], ids[:, -1] = tok.cls_token_id, tok.sep_token_id
    masked, labels = mask_tokens(ids, tok, 0.15, g)
    chosen = labels != -100
    assert not chosen[:, 0].any() and not chosen[:, -1].any()
    assert torch.equal(labels[chosen], ids[chosen])  # the label is the original token
    assert torch.equal(masked[~chosen], ids[~chosen])  # nothing else changes
    n = int(chosen.sum())
    assert abs(n / (200 * 48) - 0.15) < 0.02
    as_mask = int((masked[chosen] == tok.mask_token_id).sum())
    changed = int((masked[chosen] != ids[chosen]).sum()) - as_mask
    assert abs(as_mask / n - 0.8) < 0.04
    assert 0.06 < changed / n < 0.12  # random replacements (a few draw the same token: kept)
    assert bool((masked[chosen] >= len(SPECIALS)).logical_or(masked[chosen] == tok.mask_token_id).all())


def test_fill_mask_is_the_softmax_top_k_at_each_mask(mlm, tok):
    assert mlm.capabilities == {Capability.FILL_MASK} and mlm.max_length == 32
    text = "[MASK] smith is a [MASK] year old woman ."
    got = mlm.fill_mask(text, top_k=3)
    ids = torch.tensor([tok(text)["input_ids"]])
    probs = mlm.logits(ids)[0].softmax(-1)
    positions = [i for i, t in enumerate(ids[0].tolist()) if t == tok.mask_token_id]
    assert len(got) == len(positions) == 2
    for answer, pos in zip(got, positions, strict=True):
        order = sorted(range(len(tok)), key=lambda t: -float(probs[pos, t]))[:3]
        assert [w for w, _ in answer] == tok.convert_ids_to_tokens(order)
        assert [p for _, p in answer] == pytest.approx([float(probs[pos, t]) for t in order], rel=1e-5)


def test_padding_is_masked_out_of_attention(mlm, tok):
    ids = torch.tensor([tok("ada smith")["input_ids"]])
    padded = torch.cat([ids, torch.full((1, 3), tok.pad_token_id)], 1)
    torch.testing.assert_close(mlm.logits(padded)[:, : ids.shape[1]], mlm.logits(ids), rtol=1e-4, atol=1e-5)


def test_save_and_load_give_the_same_logits(mlm, tok, tmp_path):
    out = mlm.save(tmp_path / "m")
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    again = HFMaskedLM.load(out)
    assert again.name == "m"
    ids = torch.tensor([tok(TEXTS[0])["input_ids"]])
    torch.testing.assert_close(again.logits(ids), mlm.logits(ids))


def test_train_masked_lm_reports_what_it_trained():
    cfg = MaskedLMConfig(
        hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, max_length=16, epochs=2
    )
    model, stats = train_masked_lm(TEXTS, cfg, name="t")
    assert model.name == "t" and model.max_length == 16
    assert stats["documents"] == 3 and stats["vocab_size"] == len(model.tokenizer)
    assert math.isfinite(stats["final_loss"]) and stats["config"]["epochs"] == 2
