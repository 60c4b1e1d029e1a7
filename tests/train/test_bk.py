"""Book-keeping clipping (lmleak.train.bk) against the slow obvious oracle: one backward pass per sequence."""

from __future__ import annotations

import pytest
import torch

from lmleak.models.small import SmallGPTConfig, new_small_gpt
from lmleak.train.bk import BookKeeping, UnsupportedModel
from lmleak.train.plain import batch_tensors, forward_logits, sequence_losses


def _model_and_batch(vocab: int = 50):
    torch.manual_seed(0)
    model = new_small_gpt(
        vocab, SmallGPTConfig(n_positions=32, n_embd=16, n_layer=2, n_head=2), seed=0
    ).train()
    ids = torch.randint(4, vocab, (5, 13))
    ids[:, 3] = ids[
        :, 7
    ]  # a token repeated within a sequence: the embedding's ghost norm must count the pair
    lengths = torch.tensor([13, 10, 6, 13, 2])  # padding, and a sequence with one target token
    return model, batch_tensors(ids, lengths)


def _oracle(model, x, m, y, clip):
    params = [p for p in model.parameters() if p.requires_grad]
    per_sample = []
    for i in range(len(x)):
        loss = sequence_losses(forward_logits(model, x[i : i + 1], m[i : i + 1]), y[i : i + 1])[0]
        per_sample.append(torch.autograd.grad(loss, params))
    norms = torch.stack([torch.sqrt(sum((g.double() ** 2).sum() for g in gs)) for gs in per_sample]).float()
    factors = (clip / (norms + 1e-6)).clamp(max=1.0)
    sums = [sum(f * gs[j] for f, gs in zip(factors, per_sample, strict=True)) for j in range(len(params))]
    return norms, factors, sums


@pytest.mark.parametrize("clip", [0.05, 1e6])  # clipping active / inactive
def test_norms_and_clipped_sum_equal_per_sequence_backward_passes(clip):
    model, (x, m, y) = _model_and_batch()
    norms, factors, sums = _oracle(model, x, m, y, clip)
    bk = BookKeeping(model)
    with bk.capture():
        sequence_losses(forward_logits(model, x, m), y).sum().backward()
    got = bk.clipped_sum(clip)
    torch.testing.assert_close(got, norms, atol=1e-5, rtol=1e-5)
    if clip < 1:
        assert (factors < 1).any()
    for p, want in zip((p for p in model.parameters() if p.requires_grad), sums, strict=True):
        torch.testing.assert_close(p.grad, want, atol=1e-6, rtol=1e-4)


def test_parameters_and_hooks_are_back_to_normal_outside_capture():
    model, (x, m, y) = _model_and_batch()
    bk = BookKeeping(model)
    with bk.capture():
        assert not any(p.requires_grad for p in model.parameters())
        sequence_losses(forward_logits(model, x, m), y).sum().backward()
    bk.clipped_sum(1.0)
    assert all(p.requires_grad for p in model.parameters())
    with torch.inference_mode():  # hooks idle: no tensors kept, no hook registration on inference tensors
        forward_logits(model, x, m)
    assert all(not r.inputs and not r.grads for r in bk.records)
    model.zero_grad()
    sequence_losses(
        forward_logits(model, x, m), y
    ).mean().backward()  # an ordinary step (CRT's public batches)
    assert all(p.grad is not None for p in model.parameters())


def test_models_it_cannot_clip_are_refused():
    class WithConv(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(2, 2, 1)

    with pytest.raises(UnsupportedModel, match="Conv1d"):
        BookKeeping(WithConv())

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(5, 3)
            self.out = torch.nn.Linear(3, 5, bias=False)
            self.out.weight = self.emb.weight

    with pytest.raises(UnsupportedModel, match="tied"):
        BookKeeping(Tied())


def test_same_privacy_accounting_as_opacus(tmp_path):
    """Book-keeping keeps Opacus' sampling and accounting: same σ for a target ε, same steps, same ε."""
    from lmleak.data.corpus import Corpus, Document
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model

    corpus = Corpus(
        [Document(f"u{i % 4}", f"d{i}", f"user {i % 4} says hello number {i} to the shop") for i in range(24)]
    )
    out = {}
    for clipping in ("bookkeeping", "ghost"):
        cfg = TrainConfig(
            mode="dp",
            tokenizer_from_private=True,
            target_epsilon=3.0,
            epochs=2,
            batch_size=4,
            seq_len=16,
            vocab_size=60,
            n_embd=16,
            n_head=2,
            holdout_users=0.0,
            dp_clipping=clipping,
        )
        out[clipping] = train_model(corpus, tmp_path / clipping, cfg, progress=False).privacy
    bk, ghost = out["bookkeeping"], out["ghost"]
    assert bk["clipping"] == "bookkeeping" and ghost["clipping"] == "ghost"
    for key in ("noise_multiplier", "sample_rate", "steps"):
        assert bk[key] == pytest.approx(ghost[key], rel=1e-9), key
    assert bk["epsilon"] == pytest.approx(ghost["epsilon"], rel=1e-6) and bk["epsilon"] <= 3.0 + 0.01
