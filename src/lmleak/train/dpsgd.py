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

:meth:`PrivateStep.of_run` sets one up from a run's config and private data (the sampler, q and σ
from the target ε: the same rules for a small model and a fine-tune), :meth:`PrivateStep.step` takes
one whole step, and :func:`dp_privacy_record` writes what ``privacy.json`` says about it. The
trainers differ only in how they compute a sequence's loss (``losses_of``).

It also keeps what the health checks read (:mod:`lmleak.train.health`): per step the units, how
many were clipped, and the norms of the clipped sum and of the noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from lmleak.train.accounting import noise_for_epsilon
from lmleak.train.plain import IGNORE, sequence_losses
from lmleak.train.sensitive import SDP_GUARANTEE
from lmleak.train.units import Sampler, Units, unit_record

MODE_NOTES = {
    "crt": "only DP-SGD steps on D_pri are accounted (paper 002 Algorithm 1)",
    "sdp": "selective DP (Shi et al. 2021): only updates from sensitive tokens are clipped, noised and accounted",
}


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


def noise_multiplier_for(config: Any, sample_rate: float) -> float:
    """σ of a run: ``config.noise_multiplier``, or the σ that reaches ``config.target_epsilon`` at
    ``target_delta`` after ``epochs`` epochs at ``sample_rate`` (``make_private_with_epsilon``'s rule;
    for a shuffled run the bound that holds for it, :func:`~lmleak.train.accounting.noise_for_epsilon`)."""
    if config.target_epsilon is None:
        return float(config.noise_multiplier or 0.0)
    return noise_for_epsilon(
        config.target_epsilon,
        config.target_delta,
        sample_rate,
        config.epochs,
        config.sampler,
        config.accountant,
    )


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

    @classmethod
    def of_run(
        cls, clipper: Any, config: Any, n_sequences: int, *, unit: str, units: Units | None
    ) -> tuple[Sampler, PrivateStep]:
        """(the sampler, the step) of a run over ``n_sequences`` private sequences at the privacy
        ``unit`` (``units``: who owns them): q = 1 / steps per epoch, σ from
        :func:`noise_multiplier_for`, the divisor the sampler's expected units per step. ``config`` is
        a :class:`~lmleak.train.config.TrainConfig` or ``FinetuneConfig``."""
        sampler = Sampler(
            n_sequences,
            config.batch_size,
            unit=unit,
            kind=config.sampler,
            units=units,
            max_per_user=config.max_sequences_per_user,
        )
        step = cls(
            clipper,
            max_grad_norm=config.max_grad_norm,
            noise_multiplier=noise_multiplier_for(config, sampler.sample_rate),
            sample_rate=sampler.sample_rate,
            expected_size=sampler.expected_size,
            accountant=config.accountant,
        )
        return sampler, step

    def step(
        self,
        optimizer: torch.optim.Optimizer,
        losses_of: Callable[[torch.nn.Module], torch.Tensor] | None,
        groups: torch.Tensor | None = None,
        public: list[torch.Tensor | None] | None = None,
    ) -> torch.Tensor | None:
        """One DP-SGD step: clear ``.grad``, :meth:`clip` (``losses_of`` None: nobody was sampled, the
        clipped sum is 0 and the step is noise only, still accounted), :meth:`release`. Returns the
        per-sample losses (None for a noise-only step)."""
        optimizer.zero_grad(set_to_none=True)
        losses = None if losses_of is None else self.clip(losses_of, groups)
        self.release(optimizer, public)
        return losses

    def release(
        self, optimizer: torch.optim.Optimizer, public: list[torch.Tensor | None] | None = None
    ) -> None:
        """:meth:`noise` the clipped sum, add selective DP's un-noised ``public`` gradient (one entry
        per trainable weight, a function of the unflagged tokens only), take the optimiser step and
        :meth:`account` it. ``.grad`` stays as released until the next step (tests read it)."""
        self.noise()
        for p, g in zip(self.params, public or [], strict=False):
            if g is not None:
                p.grad = g if p.grad is None else p.grad + g
        optimizer.step()
        self.account()

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


def masked_losses(
    forward: Callable[[torch.nn.Module, torch.Tensor, torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    m: torch.Tensor,
    y: torch.Tensor,
) -> Callable[[torch.nn.Module], torch.Tensor]:
    """``losses_of`` for :meth:`PrivateStep.clip`: each sequence's mean loss on targets ``y`` of
    ``forward(module, x, m)``'s logits, 0 for a sequence without a target (selective DP's rows that
    hold no sensitive token), so that it adds nothing to the clipped sum."""
    has = (y != IGNORE).any(1).float()

    def losses_of(module: torch.nn.Module) -> torch.Tensor:
        return sequence_losses(forward(module, x, m), y) * has

    return losses_of


def dp_privacy_record(
    run: Any, *, mode: str, epsilon: float, clipping: str | None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``privacy.json`` of a DP run (``dp``, ``crt``, ``sdp``), small model or fine-tune: ε and the
    (σ, q, C) it was accounted with, the step counts, the clipping, ``extra`` (a fine-tune's
    trainable weights), the unit and sampler (:func:`~lmleak.train.units.unit_record`), and the
    mode's note. ``run`` has ``config``, ``noise_multiplier``, ``sample_rate``, ``steps``,
    ``empty_steps``, ``noise_draws``, ``accounted_steps()``, ``unit``, ``unit_reason``, ``units``,
    ``sampler`` (and ``public_steps`` for crt)."""
    cfg = run.config
    accounted = run.accounted_steps()
    out: dict[str, Any] = {
        "mode": mode,
        "epsilon": epsilon,
        "delta": cfg.target_delta,
        "noise_multiplier": run.noise_multiplier,
        "max_grad_norm": cfg.max_grad_norm,
        "sample_rate": run.sample_rate,
        "steps": run.steps,
        "empty_batches": run.empty_steps,
        "noise_draws": run.noise_draws,
        "accounted_steps": accounted,
        "accountant": cfg.accountant,
        "clipping": clipping,
        **(extra or {}),
    }
    out.update(
        unit_record(
            unit=run.unit,
            reason=run.unit_reason,
            units=run.units,
            sampler=run.sampler,
            config=cfg,
            noise_multiplier=run.noise_multiplier,
            steps=accounted,
            poisson_epsilon=epsilon,
        )
    )
    if mode == "crt":
        out["public_steps"] = run.public_steps
    if mode in MODE_NOTES:
        out["note"] = MODE_NOTES[mode]
    if mode == "sdp":
        out["guarantee"] = SDP_GUARANTEE
    return out
