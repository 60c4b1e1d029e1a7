"""One fine-tuning run's optimiser, clipping, noise and accountant: :class:`Finetuner`.

A plain step is AdamW on the mean loss; a DP step is DP-SGD by hand (:class:`lmleak.train.dpsgd.PrivateStep`)
— the clipped gradient sum per unit (per sequence, or per user: the mean over the user's sequences,
clipped as one; :mod:`lmleak.train.units`), N(0, σ²C²) noise, division by the expected units per
step, one accountant step; a step that sampled nobody is a noise-only step. A selective-DP step adds
the ordinary gradient of the loss on a public copy of the batch whose flagged tokens are masked
(:func:`lmleak.train.sensitive.public_copy`). :meth:`Finetuner.state` / :meth:`Finetuner.restore`
carry everything a resumed run needs (weights, optimiser, counters, accountant history, RNG).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import torch

from lmleak.train.accounting import noise_for_epsilon
from lmleak.train.clipping import make_clipper
from lmleak.train.config import FinetuneConfig
from lmleak.train.dpsgd import PrivateStep, clip_into_grad
from lmleak.train.health import HealthMonitor, HealthSettings, watched_weights
from lmleak.train.plain import IGNORE, Chunks, batch_tensors, sequence_losses
from lmleak.train.prepare import Precision, logits_of
from lmleak.train.sensitive import SDP_GUARANTEE, public_copy
from lmleak.train.units import Batch, Sampler, Units, unit_record


class Finetuner:
    """One fine-tuning run: the model, optimiser, clipping, accountant and the step of each kind."""

    def __init__(
        self, model: torch.nn.Module, config: FinetuneConfig, device: str, precision: Precision
    ) -> None:
        self.model, self.config, self.device, self.precision = model, config, device, precision
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=config.lr, weight_decay=config.weight_decay)
        self.steps = self.public_steps = self.empty_steps = 0
        self.clipper: Any = None
        self.clipping: str | None = None
        self.private: PrivateStep | None = None
        self.health: HealthMonitor | None = None
        self.unit, self.unit_reason = "sequence", ""
        self.units: Units | None = None
        self.mask_id: int | None = None  # sdp: the token a public copy puts where a flagged span was
        if config.mode != "nodp":
            self.clipper, self.clipping = make_clipper(model, config.dp_clipping)

    def set_private_data(
        self, n: int, units: Units | None = None, unit: str = "sequence", reason: str = ""
    ) -> None:
        """The sampling rules for ``n`` private sequences at the privacy ``unit`` (``units`` says who
        owns them): q = 1 / steps per epoch, σ from the target ε for the sampler used, the accountant."""
        cfg = self.config
        self.n_private, self.unit, self.unit_reason, self.units = n, unit, reason, units
        self.sampler = Sampler(
            n,
            cfg.batch_size,
            unit=unit,
            kind=cfg.sampler,
            units=units,
            max_per_user=cfg.max_sequences_per_user,
        )
        self.steps_per_epoch = self.sampler.steps_per_epoch
        self.sample_rate = self.sampler.sample_rate
        self.expected_batch_size = self.sampler.expected_size
        if cfg.target_epsilon is not None:
            acc: Any = cfg.accountant
            self.noise_multiplier = noise_for_epsilon(
                cfg.target_epsilon, cfg.target_delta, self.sample_rate, cfg.epochs, cfg.sampler, acc
            )
        else:
            self.noise_multiplier = float(cfg.noise_multiplier or 0.0)
        self.private = PrivateStep(
            self.clipper,
            max_grad_norm=cfg.max_grad_norm,
            noise_multiplier=self.noise_multiplier,
            sample_rate=self.sample_rate,
            expected_size=self.expected_batch_size,
            accountant=cfg.accountant,
        )
        watched, what = watched_weights(self.model, lora=not cfg.full)
        self.health = HealthMonitor(
            watched,
            HealthSettings(
                enforce=cfg.health_checks,
                after_steps=cfg.health_check_steps,
                max_noise_to_signal=cfg.max_noise_to_signal,
                check_noise=cfg.mode != "sdp",
            ),
            what=what,
        )

    @property
    def accountant(self) -> Any:
        return None if self.private is None else self.private.accountant

    @property
    def noise_draws(self) -> int:
        return 0 if self.private is None else self.private.noise_draws

    # -- pieces
    def _tensors(
        self, ids: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x, m, y = batch_tensors(ids, lengths)
        return x.to(self.device), m.to(self.device), y.to(self.device)

    def _losses(
        self, module: torch.nn.Module, x: torch.Tensor, m: torch.Tensor, y: torch.Tensor
    ) -> torch.Tensor:
        with self.precision.autocast(self.device):
            logits = logits_of(module, x, m)
        return sequence_losses(logits.float(), y)

    def clipped_gradient(
        self,
        ids: torch.Tensor,
        lengths: torch.Tensor,
        targets: torch.Tensor | None = None,
        groups: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Σ_units clip(∇ loss_unit) into every trainable ``.grad`` (no noise); returns the per-sample
        losses. ``targets`` replaces the batch's own (selective DP's sensitive-token loss); ``groups``
        (B,) makes the unit the user (each user's mean gradient is clipped)."""
        x, m, y = self._tensors(ids, lengths)
        if targets is not None:
            y = targets.to(self.device)
        has = (y != IGNORE).any(1).float()

        def losses_of(module: torch.nn.Module) -> torch.Tensor:
            return self._losses(module, x, m, y) * has

        if self.private is not None:
            return self.private.clip(losses_of, groups)
        return clip_into_grad(self.clipper, losses_of, self.config.max_grad_norm, groups)[0]

    def _release(self, public: list[torch.Tensor | None] | None = None) -> None:
        """Noise (plus selective DP's ``public`` gradient, un-noised), the optimiser step and the
        accountant's step; the health check when it is due."""
        assert self.private is not None and self.health is not None
        self.private.noise()
        for p, g in zip(self.params, public or [], strict=False):
            if g is not None:
                p.grad = g if p.grad is None else p.grad + g
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.private.account()
        if self.steps == self.health.settings.after_steps:
            self.health.check("early", self.steps, self.private.log)

    # -- steps
    def plain_step(self, ids: torch.Tensor, lengths: torch.Tensor) -> float:
        x, m, y = self._tensors(ids, lengths)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self._losses(self.model, x, m, y).mean()
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    def dp_step(self, ids: torch.Tensor, lengths: torch.Tensor, groups: torch.Tensor | None = None) -> float:
        self.steps += 1
        self.optimizer.zero_grad(set_to_none=True)
        value = float("nan")
        if len(ids) == 0:
            self.empty_steps += 1  # the sum of clipped gradients is 0: a noise-only step, still accounted
        else:
            value = float(self.clipped_gradient(ids, lengths, groups=groups).mean())
        self._release()
        return value

    def public_gradient(
        self, ids: torch.Tensor, lengths: torch.Tensor, sensitive: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        """Selective DP's un-noised part: (loss, gradient) of the mean loss over a public copy of the
        batch, each run of flagged tokens collapsed into one mask token and the mask tokens not
        predicted — a function of the unflagged tokens only, never of the secrets."""
        assert self.mask_id is not None, "set Finetuner.mask_id for selective DP"
        pid, plen = public_copy(ids, lengths, sensitive, self.mask_id)
        x, m, y = self._tensors(pid, plen)
        y = y.masked_fill(y == self.mask_id, IGNORE)
        ns = self._losses(self.model, x, m, y)
        loss = (ns * (y != IGNORE).any(1).float()).sum() / len(ids)
        return loss.detach(), list(torch.autograd.grad(loss, self.params, allow_unused=True))

    def sdp_step(
        self,
        ids: torch.Tensor,
        lengths: torch.Tensor,
        sensitive: torch.Tensor,
        groups: torch.Tensor | None = None,
    ) -> float:
        self.steps += 1
        self.optimizer.zero_grad(set_to_none=True)
        if len(ids) == 0:
            self.empty_steps += 1
            self._release()
            return float("nan")
        _, _, y = batch_tensors(ids, lengths)
        sens = sensitive[:, 1 : y.shape[1] + 1] & (y != IGNORE)
        y_secret = y.masked_fill(~sens, IGNORE)
        # 1) the ordinary gradient of the loss on the public copy (outside capture: no per-sample work)
        loss_ns, g_public = self.public_gradient(ids, lengths, sensitive)
        # 2) the clipped, noised per-unit gradient of the sensitive loss
        s = self.clipped_gradient(ids, lengths, targets=y_secret, groups=groups)
        self._release(g_public)
        has_s = (y_secret != IGNORE).any(1).float()
        return float((loss_ns + (s * has_s.to(s.device)).mean()).detach())

    def private_batches(self, chunks: Chunks, extra: torch.Tensor | None = None) -> Iterator[tuple[Any, ...]]:
        """One epoch of private batches (``ids, lengths, groups[, extra rows]``) from the sampler."""
        for b in self.sampler.epoch():
            yield self._rows(chunks, b, extra)

    @staticmethod
    def _rows(chunks: Chunks, b: Batch, extra: torch.Tensor | None) -> tuple[Any, ...]:
        rows = (chunks.ids[b.idx], chunks.lengths[b.idx], b.groups)
        return rows if extra is None else (*rows, extra[b.idx])

    def poisson_batches(
        self, chunks: Chunks, extra: torch.Tensor | None = None
    ) -> Iterator[tuple[torch.Tensor, ...]]:
        """One epoch of Poisson batches of sequences (``ids, lengths[, extra rows]``), for callers
        of the sequence-level sampler."""
        for ids, lengths, _, *rest in self.private_batches(chunks, extra):
            yield (ids, lengths, *rest)

    def finish_health(self) -> dict[str, Any] | None:
        """The end-of-training health check (stops or warns as the early one); its record."""
        if self.health is None or self.private is None:
            return None
        self.health.check("final", self.steps, self.private.log)
        return self.health.record()

    def accounted_steps(self) -> int:
        return 0 if self.private is None else self.private.accounted_steps()

    def privacy(self) -> dict[str, Any]:
        cfg = self.config
        trainable = "LoRA adapters" if not cfg.full else "all weights"
        if cfg.mode == "nodp":
            return {
                "mode": "nodp",
                "epsilon": None,
                "delta": None,
                "noise_multiplier": 0.0,
                "sample_rate": None,
                "steps": self.public_steps,
                "accountant": None,
                "privacy_unit": None,
                "trainable": trainable,
                "note": "no differential privacy: epsilon is unbounded (reported as null)",
            }
        assert self.private is not None
        out: dict[str, Any] = {
            "mode": cfg.mode,
            "epsilon": self.private.epsilon(cfg.target_delta),
            "delta": cfg.target_delta,
            "noise_multiplier": self.noise_multiplier,
            "max_grad_norm": cfg.max_grad_norm,
            "sample_rate": self.sample_rate,
            "steps": self.steps,
            "empty_batches": self.empty_steps,
            "noise_draws": self.noise_draws,
            "accounted_steps": self.accounted_steps(),
            "accountant": cfg.accountant,
            "clipping": self.clipping,
            "trainable": trainable,
            "dp_scope": "the fine-tuning data; the pretrained base is public (assumed never to have seen it)",
        }
        out.update(
            unit_record(
                unit=self.unit,
                reason=self.unit_reason,
                units=self.units,
                sampler=self.sampler,
                config=cfg,
                noise_multiplier=self.noise_multiplier,
                steps=self.accounted_steps(),
                poisson_epsilon=out["epsilon"],
            )
        )
        if cfg.mode == "crt":
            out["public_steps"] = self.public_steps
            out["note"] = "only DP-SGD steps on D_pri are accounted (paper 002 Algorithm 1)"
        if cfg.mode == "sdp":
            out["note"] = (
                "selective DP (Shi et al. 2021): only updates from sensitive tokens are clipped, noised and accounted"
            )
            out["guarantee"] = SDP_GUARANTEE
        return out

    # -- checkpoints
    def state(self, epoch: int, history: list[dict[str, Any]], fingerprint: str) -> dict[str, Any]:
        names = {id(p): n for n, p in self.model.named_parameters()}
        acc = self.accountant
        state: dict[str, Any] = {
            "fingerprint": fingerprint,
            "epoch": epoch,
            "history": json.dumps(history),
            "weights": {names[id(p)]: p.detach().cpu() for p in self.params},
            "optimizer": self.optimizer.state_dict(),
            "counters": [self.steps, self.public_steps, self.empty_steps, self.noise_draws],
            "accountant": [list(h) for h in acc.history] if acc is not None else [],
            "rng": torch.get_rng_state(),
        }
        if torch.cuda.is_available():
            state["cuda_rng"] = torch.cuda.get_rng_state_all()
        return state

    def restore(self, state: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, w in state["weights"].items():
                params[name].copy_(w.to(params[name].device))
        self.optimizer.load_state_dict(state["optimizer"])
        self.steps, self.public_steps, self.empty_steps, draws = (int(v) for v in state["counters"])
        if self.private is not None:
            self.private.noise_draws = draws
            self.private.accountant.history = [
                (float(a), float(b), int(c)) for a, b, c in state["accountant"]
            ]
        torch.set_rng_state(state["rng"])
        if "cuda_rng" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        return int(state["epoch"]), json.loads(state["history"])


@torch.inference_mode()
def evaluate_chunks(
    model: torch.nn.Module, chunks: Chunks, device: str, precision: Precision, *, batch_size: int = 16
) -> dict[str, float]:
    """Token-level loss, perplexity and top-1/top-3 accuracy of ``model`` over chunks (teacher forcing)."""
    was = model.training
    model.eval()
    total, count, hits1, hits3 = 0.0, 0, 0, 0
    for s in range(0, len(chunks), batch_size):
        x, m, y = batch_tensors(chunks.ids[s : s + batch_size], chunks.lengths[s : s + batch_size])
        x, m, y = x.to(device), m.to(device), y.to(device)
        with precision.autocast(device):
            logits = logits_of(model, x, m)
        logits = logits.float()
        valid = y != IGNORE
        total += float(torch.nn.functional.cross_entropy(logits[valid], y[valid], reduction="sum"))
        count += int(valid.sum())
        top = logits.topk(3, dim=-1).indices
        hits1 += int(((top[..., :1] == y.unsqueeze(-1)).any(-1) & valid).sum())
        hits3 += int(((top == y.unsqueeze(-1)).any(-1) & valid).sum())
    model.train(was)
    n = max(count, 1)
    loss = total / n
    return {
        "loss": loss,
        "perplexity": math.exp(min(loss, 50.0)),
        "tokens": count,
        "top1_accuracy": hits1 / n,
        "top3_accuracy": hits3 / n,
    }
