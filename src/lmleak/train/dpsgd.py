"""One DP-SGD release per step, whatever the privacy unit: clip, sum, noise, normalise, account.

:class:`PrivateStep` is the part of DP-SGD (Abadi et al. 2016) that the guarantee rests on, shared by
the fine-tuner (:mod:`lmleak.train.finetuner`) and the small models' user-level path
(:mod:`lmleak.train.dp`):

1. per-sample gradients of the step's sequences by a clipper (:mod:`lmleak.train.clipping`), reduced
   to one gradient per unit — per sequence, or per user (the mean over the user's sequences) — and
   each unit's gradient clipped to C; their sum written into the trainable weights' ``.grad``;
2. N(0, σ²C²) added to every coordinate, the result divided by the expected number of units per
   step (a step that sampled nobody adds noise only);
3. one step of the accountant (Opacus' ``prv`` or ``rdp``) at noise σ and sample rate q.

It also keeps what the health checks read (:mod:`lmleak.train.health`): per step the units, how
many were clipped, and the norms of the clipped sum and of the noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch


def clip_into_grad(
    clipper: Any,
    losses_of: Callable[[torch.nn.Module], torch.Tensor],
    max_grad_norm: float,
    groups: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``losses_of(module)`` (per-sample losses (B,), already masked) under the clipper and write
    Σ_units clip_C(G_unit) into every trainable ``.grad``; ``groups`` (B,) groups the sequences by
    user. Returns (the detached losses, the units' gradient norms)."""
    with clipper.capture():
        losses = losses_of(clipper.forward_module)
        losses.sum().backward()
    norms = clipper.clipped_sum(max_grad_norm, groups)
    return losses.detach(), norms


class PrivateStep:
    """Clipping, noise, normalisation and accounting for one model (module docstring).

    Args:
        clipper: from :func:`lmleak.train.clipping.make_clipper` (``capture``, ``clipped_sum``, ``params``).
        max_grad_norm: C. noise_multiplier: σ. sample_rate: q (of the unit). expected_size: the divisor.
        accountant: ``prv`` or ``rdp``.
    """

    def __init__(
        self,
        clipper: Any,
        *,
        max_grad_norm: float,
        noise_multiplier: float,
        sample_rate: float,
        expected_size: float,
        accountant: str,
    ) -> None:
        from opacus.accountants import create_accountant

        self.clipper = clipper
        self.params: list[torch.nn.Parameter] = list(clipper.params)
        self.max_grad_norm = float(max_grad_norm)
        self.noise_multiplier = float(noise_multiplier)
        self.sample_rate = float(sample_rate)
        self.expected_size = expected_size
        self.accountant = create_accountant(accountant)
        self.noise_draws = 0
        self.dim = int(sum(p.numel() for p in self.params))
        self.log: list[dict[str, float]] = []  # one entry per step, for the health checks
        self._pending: dict[str, float] = {"units": 0.0, "clipped": 0.0}

    def clip(
        self, losses_of: Callable[[torch.nn.Module], torch.Tensor], groups: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Run ``losses_of(module)`` (per-sample losses, (B,)) and write Σ_units clip_C(G_unit) into
        ``.grad``; ``groups`` (B,) groups the sequences by user. Returns the detached losses."""
        losses, norms = clip_into_grad(self.clipper, losses_of, self.max_grad_norm, groups)
        self._pending = {
            "units": float(len(norms)),
            "clipped": float((norms > self.max_grad_norm).sum()),
        }
        return losses

    def noise(self) -> None:
        """``grad <- (grad + N(0, σ²C²)) / expected units per step`` for every trainable weight (an
        absent gradient counts as 0: a step that sampled nobody is pure noise)."""
        std = self.noise_multiplier * self.max_grad_norm
        self.noise_draws += 1
        signal_sq: Any = 0.0
        for p in self.params:
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            signal_sq = signal_sq + g.detach().float().pow(2).sum()
            if std > 0:
                g = g + torch.normal(0.0, std, size=p.shape, device=p.device, dtype=p.dtype)
            p.grad = g / self.expected_size
        self.log.append(
            {
                **self._pending,
                "signal_norm": math.sqrt(float(signal_sq)),
                "noise_norm": std * math.sqrt(self.dim),  # E‖N(0, σ²C² I_d)‖ ≈ σC√d
            }
        )
        self._pending = {"units": 0.0, "clipped": 0.0}

    def account(self) -> None:
        self.accountant.step(noise_multiplier=self.noise_multiplier, sample_rate=self.sample_rate)

    def accounted_steps(self) -> int:
        """Steps the accountant has composed."""
        return int(sum(n for _, _, n in self.accountant.history))

    def epsilon(self, delta: float) -> float:
        """The accountant's ε at ``delta`` (0 before any step)."""
        if not self.accounted_steps():
            return 0.0
        with np.errstate(divide="ignore"):  # PRV's log(1 - q) at q = 1 (accounting.epsilon_opacus)
            return float(self.accountant.get_epsilon(delta=delta))
