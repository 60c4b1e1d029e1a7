"""Per-sample clipping of the trainable weights (book-keeping, Opacus hooks) against a loop by hand."""

from __future__ import annotations

import pytest
import torch

from lmleak.train.finetuner import Finetuner
from lmleak.train.plain import batch_tensors, encode_chunks, sequence_losses
from lmleak.train.prepare import logits_of, prepare_model, resolve_precision
from tests.train.tiny_llama import base_tok, ft_config


@pytest.mark.parametrize("full", [False, True])
def test_dp_clipped_gradient_equals_a_loop_of_clipped_per_example_gradients(llama_dir, corpus, full):
    from lmleak.models.loading import load_model

    lm = load_model(llama_dir)
    cfg = ft_config(llama_dir, "dp", full=full, noise_multiplier=0.0, max_grad_norm=0.05)
    model, _ = prepare_model(lm.module, cfg)
    model.train()
    torch.manual_seed(3)
    with torch.no_grad():  # LoRA starts with B = 0, where A's gradient is 0: move off that point
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.1)
    ft = Finetuner(model, cfg, "cpu", resolve_precision("fp32", "cpu"))
    assert ft.clipping == ("opacus hooks" if full else "bookkeeping")
    chunks = encode_chunks(corpus.texts(), base_tok(lm), cfg.seq_len)
    ids, lengths = chunks.ids[:5], chunks.lengths[:5]
    ft.clipped_gradient(ids, lengths)
    got = [p.grad.clone() for p in ft.params]

    x, m, y = batch_tensors(ids, lengths)
    total = [torch.zeros_like(p) for p in ft.params]
    clipped = 0
    for i in range(len(ids)):
        loss = sequence_losses(logits_of(model, x[i : i + 1], m[i : i + 1]), y[i : i + 1]).sum()
        grads = torch.autograd.grad(loss, ft.params, allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(ft.params, grads, strict=True)]
        norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads)))
        factor = min(1.0, cfg.max_grad_norm / (norm + 1e-6))
        clipped += factor < 1.0
        for t, g in zip(total, grads, strict=True):
            t += factor * g
    assert clipped == len(ids)
    for g, want in zip(got, total, strict=True):
        assert torch.allclose(g, want, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("full", [False, True])  # book-keeping on LoRA; Opacus hooks on every weight
def test_user_level_clipped_gradient_equals_a_loop_over_users(llama_dir, corpus, full):
    from lmleak.models.loading import load_model

    lm = load_model(llama_dir)
    cfg = ft_config(llama_dir, "dp", full=full, noise_multiplier=0.0, max_grad_norm=0.05)
    model, _ = prepare_model(lm.module, cfg)
    model.train()
    torch.manual_seed(3)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.1)
    ft = Finetuner(model, cfg, "cpu", resolve_precision("fp32", "cpu"))
    chunks = encode_chunks(corpus.texts(), base_tok(lm), cfg.seq_len)
    ids, lengths = chunks.ids[:5], chunks.lengths[:5]
    groups = torch.tensor([0, 1, 0, 0, 2])
    ft.clipped_gradient(ids, lengths, groups=groups)
    got = [p.grad.clone() for p in ft.params]

    x, m, y = batch_tensors(ids, lengths)
    per_sample = []
    for i in range(len(ids)):
        loss = sequence_losses(logits_of(model, x[i : i + 1], m[i : i + 1]), y[i : i + 1]).sum()
        grads = torch.autograd.grad(loss, ft.params, allow_unused=True)
        per_sample.append(
            [torch.zeros_like(p) if g is None else g for p, g in zip(ft.params, grads, strict=True)]
        )
    total = [torch.zeros_like(p) for p in ft.params]
    for u in range(3):
        rows = [i for i in range(len(ids)) if int(groups[i]) == u]
        mean = [sum(per_sample[i][j] for i in rows) / len(rows) for j in range(len(ft.params))]
        norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in mean)))
        assert norm > cfg.max_grad_norm  # every user is clipped: the check is not vacuous
        for t, g in zip(total, mean, strict=True):
            t += cfg.max_grad_norm / (norm + 1e-6) * g
    for g, want in zip(got, total, strict=True):
        assert torch.allclose(g, want, rtol=1e-4, atol=1e-7)
