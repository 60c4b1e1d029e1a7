"""Selective DP's public part is independent of the secrets (issue 26 item 7): a batch that differs only
in a flagged secret — even in its length — gives bit-identical public gradients, in the fine-tuner and
in the small LSTM; the old construction (flagged targets masked, inputs kept) did not."""

from __future__ import annotations

import pytest
import torch

from lmleak.data.corpus import Corpus, Document
from lmleak.models.small import build_tokenizer
from lmleak.train.config import TrainConfig
from lmleak.train.plain import IGNORE, batch_tensors, encode_chunks, forward_logits, sequence_losses
from lmleak.train.sensitive import mask_token_id, public_copy, sensitive_token_mask
from lmleak.train.trainer import build_module

TEXT = "please call me back my number is {} thanks a lot for the help"


def _batch(tok, cfg, secret):
    corpus = Corpus([Document("u1", "d1", TEXT.format(secret)), Document("u2", "d2", TEXT.format("7"))])
    chunks = encode_chunks(corpus.texts(), tok, cfg.seq_len)
    return chunks, sensitive_token_mask(corpus, tok, cfg)


def test_the_public_copy_collapses_each_flagged_run_into_one_mask_token():
    cfg = TrainConfig(arch="lstm", mode="sdp", noise_multiplier=1.0, seq_len=24)
    tok = build_tokenizer([TEXT.format("12 34")], kind="word", vocab_size=60)
    (a, sa), (b, sb) = _batch(tok, cfg, "12345"), _batch(tok, cfg, "987")
    assert int(sa.sum()) != int(sb.sum())  # different secrets, different lengths
    mask = mask_token_id(tok)
    pa, la = public_copy(a.ids, a.lengths, sa, mask)
    pb, lb = public_copy(b.ids, b.lengths, sb, mask)
    assert torch.equal(pa, pb) and torch.equal(la, lb)
    assert tok.convert_ids_to_tokens(mask) == "<MASK>" and int((pa[0] == mask).sum()) == 1


def test_lstm_selective_dp_public_gradient_ignores_the_secret_exactly():
    from lmleak.train.dp import SDPStrategy

    cfg = TrainConfig(
        arch="lstm", mode="sdp", noise_multiplier=1.0, seq_len=24, vocab_size=60, privacy_unit="sequence"
    )
    tok = build_tokenizer([TEXT.format("12 34")], kind="word", vocab_size=60)
    grads, old = [], []
    for secret in ("12345", "987"):
        chunks, sens = _batch(tok, cfg, secret)
        strategy = SDPStrategy(cfg)
        torch.manual_seed(0)
        module = build_module(cfg, len(tok), tok)
        strategy.setup(module, chunks, {"sensitive": sens, "mask_id": mask_token_id(tok)})
        _, g = strategy.public_gradient(chunks.ids, chunks.lengths, sens)
        grads.append(g)
        # the construction issue 26 found: flagged *targets* masked, the secret still an input
        inner = strategy.trained_module()
        x, m, y = batch_tensors(chunks.ids, chunks.lengths)
        y = y.masked_fill(sens[:, 1 : y.shape[1] + 1], IGNORE)
        loss = sequence_losses(forward_logits(inner, x, m), y).mean()
        old.append(
            torch.autograd.grad(loss, [p for p in inner.parameters() if p.requires_grad], allow_unused=True)
        )
    for a, b in zip(*grads, strict=True):
        assert (a is None and b is None) or torch.equal(a, b)
    assert any(a is not None and b is not None and not torch.equal(a, b) for a, b in zip(*old, strict=True))


@pytest.mark.parametrize("mode", ["sdp"])
def test_fine_tune_selective_dp_public_gradient_ignores_the_secret_exactly(llama_dir, mode):
    from lmleak.models.loading import load_model
    from lmleak.train.finetuner import Finetuner
    from lmleak.train.prepare import BaseTokenizer, prepare_model, resolve_precision
    from tests.train.tiny_llama import ft_config

    cfg = ft_config(llama_dir, mode, seq_len=24)
    grads = []
    for secret in ("12345", "987"):
        lm = load_model(llama_dir)
        torch.manual_seed(0)
        model, _ = prepare_model(lm.module, cfg)
        with torch.no_grad():  # B != 0, so every adapter has a gradient
            for n, p in model.named_parameters():
                if "lora_B" in n:
                    p.normal_(0, 0.1)
        ft = Finetuner(model, cfg, "cpu", resolve_precision("fp32", "cpu"))
        tok = BaseTokenizer(lm.tokenizer)
        ft.mask_id = mask_token_id(tok)
        chunks, sens = _batch(tok, cfg, secret)
        assert sens.any()
        grads.append(ft.public_gradient(chunks.ids, chunks.lengths, sens)[1])
    assert all(g is not None for g in grads[0])
    for a, b in zip(*grads, strict=True):
        assert torch.equal(a, b)
