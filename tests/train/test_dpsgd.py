"""One DP-SGD release by hand (PrivateStep): with noise 0 the released gradient is the clipped sum over
units divided by the expected units per step; a step that sampled nobody is noise only; the step log
the health checks read holds the units, the clipped count and the two norms."""

from __future__ import annotations

import math

import pytest
import torch

from lmleak.models.small import SmallGPTConfig, new_small_gpt
from lmleak.train.clipping import make_clipper
from lmleak.train.dpsgd import PrivateStep
from lmleak.train.plain import batch_tensors, forward_logits, sequence_losses


def _step(noise: float):
    torch.manual_seed(0)
    model = new_small_gpt(40, SmallGPTConfig(n_positions=16, n_embd=16, n_layer=1, n_head=2), seed=0).train()
    clipper, name = make_clipper(model, "bookkeeping")
    assert name == "bookkeeping"
    private = PrivateStep(
        clipper,
        max_grad_norm=0.1,
        noise_multiplier=noise,
        sample_rate=0.25,
        expected_size=2.5,
        accountant="rdp",
    )
    x, m, y = batch_tensors(torch.randint(4, 40, (4, 9)), torch.full((4,), 9))
    return model, private, (x, m, y)


def test_without_noise_the_release_is_the_clipped_user_sum_over_the_expected_users():
    model, private, (x, m, y) = _step(0.0)
    groups = torch.tensor([0, 0, 1, 1])
    private.clip(lambda mod: sequence_losses(forward_logits(mod, x, m), y), groups)
    summed = [p.grad.clone() for p in private.params]
    private.noise()
    for p, s in zip(private.params, summed, strict=True):
        torch.testing.assert_close(p.grad, s / 2.5)
    entry = private.log[-1]
    norm = math.sqrt(sum(float(s.pow(2).sum()) for s in summed))
    assert entry["units"] == 2 and entry["clipped"] == 2  # both users' gradients exceed C = 0.1
    assert entry["signal_norm"] == pytest.approx(norm) and entry["noise_norm"] == 0.0
    assert norm <= 2 * 0.1 + 1e-6  # two users, each clipped to C
    private.account()
    assert private.accounted_steps() == 1 and private.epsilon(1e-5) > 0


def test_a_step_that_sampled_nobody_is_noise_only_and_counted():
    model, private, _ = _step(1.0)
    for p in private.params:
        p.grad = None
    private.noise()
    assert private.noise_draws == 1 and private.log[-1]["units"] == 0 and private.log[-1]["signal_norm"] == 0
    std = torch.cat([p.grad.reshape(-1) for p in private.params]).std() * 2.5
    assert float(std) == pytest.approx(0.1, rel=0.1)  # N(0, σ²C²) / expected size, σC = 0.1
    assert private.log[-1]["noise_norm"] == pytest.approx(0.1 * math.sqrt(private.dim))
