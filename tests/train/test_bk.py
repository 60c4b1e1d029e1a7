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
            privacy_unit="sequence",  # Opacus' ghost clipping clips per sequence
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


def _user_oracle(model, x, m, y, groups, clip):
    """The slow obvious user-level clipping: per user, the mean of its sequences' gradients (one
    backward pass per sequence), clipped to ``clip`` as one; summed over users."""
    params = [p for p in model.parameters() if p.requires_grad]
    per_sample = []
    for i in range(len(x)):
        loss = sequence_losses(forward_logits(model, x[i : i + 1], m[i : i + 1]), y[i : i + 1])[0]
        per_sample.append(torch.autograd.grad(loss, params))
    norms, sums = [], [torch.zeros_like(p) for p in params]
    for u in sorted(set(groups.tolist())):
        rows = [i for i in range(len(x)) if int(groups[i]) == u]
        mean = [sum(per_sample[i][j] for i in rows) / len(rows) for j in range(len(params))]
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in mean)).float()
        norms.append(norm)
        factor = min(1.0, clip / (float(norm) + 1e-6))
        for s, g in zip(sums, mean, strict=True):
            s += factor * g
    return torch.stack(norms), sums


@pytest.mark.parametrize("clip", [0.05, 1e6])  # clipping active / inactive
def test_user_level_clipping_equals_a_loop_over_users(clip):
    model, (x, m, y) = _model_and_batch()
    groups = torch.tensor([1, 0, 1, 2, 1])  # user 1 wrote three of the five sequences
    norms, sums = _user_oracle(model, x, m, y, groups, clip)
    bk = BookKeeping(model)
    with bk.capture():
        sequence_losses(forward_logits(model, x, m), y).sum().backward()
    got = bk.clipped_sum(clip, groups)
    torch.testing.assert_close(got, norms, atol=1e-5, rtol=1e-5)
    for p, want in zip((p for p in model.parameters() if p.requires_grad), sums, strict=True):
        torch.testing.assert_close(p.grad, want, atol=1e-6, rtol=1e-4)
    # one user per sequence is sequence-level clipping, exactly
    with bk.capture():
        sequence_losses(forward_logits(model, x, m), y).sum().backward()
    torch.testing.assert_close(bk.clipped_sum(clip, torch.arange(5)), _oracle(model, x, m, y, clip)[0])


def test_a_user_with_fifty_sequences_moves_the_sum_no_more_than_a_user_with_one():
    torch.manual_seed(1)
    vocab, clip = 50, 0.1
    model = new_small_gpt(
        vocab, SmallGPTConfig(n_positions=16, n_embd=16, n_layer=1, n_head=2), seed=0
    ).train()
    bk = BookKeeping(model)
    ids = torch.randint(4, vocab, (51, 9))
    x, m, y = batch_tensors(ids, torch.full((51,), 9))

    def grad_norm(rows, groups):
        with bk.capture():
            sequence_losses(forward_logits(model, x[rows], m[rows]), y[rows]).sum().backward()
        norms = bk.clipped_sum(clip, groups)
        total = torch.sqrt(sum(p.grad.double().pow(2).sum() for p in bk.params))
        return float(total), norms

    prolific = torch.arange(50)
    many, norms = grad_norm(prolific, torch.zeros(50, dtype=torch.long))
    one, _ = grad_norm(torch.tensor([50]), torch.zeros(1, dtype=torch.long))
    assert float(norms[0]) > clip  # the clipping bound binds, so the comparison is not vacuous
    assert many <= clip + 1e-6 and one <= clip + 1e-6
    per_sequence, _ = grad_norm(prolific, None)  # the same 50 sequences as 50 units: up to 50 C
    assert per_sequence > 5 * clip
