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
from collections.abc import Callable, Iterator
from typing import Any

import torch

from lmleak.train.clipping import make_clipper
from lmleak.train.config import FinetuneConfig
from lmleak.train.dpsgd import PrivateStep, clip_into_grad, dp_privacy_record, masked_losses
from lmleak.train.health import HealthMonitor, health_monitor
from lmleak.train.plain import IGNORE, Chunks, batch_tensors, plain_privacy_record, sequence_losses
from lmleak.train.prepare import Precision, logits_of
from lmleak.train.sensitive import public_copy
from lmleak.train.units import Batch, Units


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
        self.n_private, self.unit, self.unit_reason, self.units = n, unit, reason, units
        self.sampler, self.private = PrivateStep.of_run(self.clipper, self.config, n, unit=unit, units=units)
        self.steps_per_epoch = self.sampler.steps_per_epoch
        self.sample_rate = self.sampler.sample_rate
        self.expected_batch_size = self.sampler.expected_size
        self.noise_multiplier = self.private.noise_multiplier
        self.health = health_monitor(self.model, self.config, lora=not self.config.full)

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

    def _logits(self, module: torch.nn.Module, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        with self.precision.autocast(self.device):
            return logits_of(module, x, m).float()

    def _losses(
        self, module: torch.nn.Module, x: torch.Tensor, m: torch.Tensor, y: torch.Tensor
    ) -> torch.Tensor:
        return sequence_losses(self._logits(module, x, m), y)

    def _losses_of(
        self, ids: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor | None = None
    ) -> Callable[[torch.nn.Module], torch.Tensor]:
        """The per-unit losses :meth:`PrivateStep.clip` clips (``targets``: selective DP's sensitive ones)."""
        x, m, y = self._tensors(ids, lengths)
        return masked_losses(self._logits, x, m, y if targets is None else targets.to(self.device))

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
        losses_of = self._losses_of(ids, lengths, targets)
        if self.private is not None:
            return self.private.clip(losses_of, groups)
        return clip_into_grad(self.clipper, losses_of, self.config.max_grad_norm, groups)[0]

    def _private_step(
        self,
        ids: torch.Tensor,
        lengths: torch.Tensor,
        groups: torch.Tensor | None,
        targets: torch.Tensor | None = None,
        public: list[torch.Tensor | None] | None = None,
    ) -> torch.Tensor | None:
        """One :meth:`PrivateStep.step` (an empty batch a noise-only step), ``.grad`` cleared after
        it; the health check when it is due. Returns the clipped per-unit losses (None if empty)."""
        assert self.private is not None and self.health is not None
        self.steps += 1
        if len(ids) == 0:
            self.empty_steps += 1  # the sum of clipped gradients is 0: a noise-only step, still accounted
        losses_of = self._losses_of(ids, lengths, targets) if len(ids) else None
        losses = self.private.step(self.optimizer, losses_of, groups, public)
        self.optimizer.zero_grad(set_to_none=True)
        if self.steps == self.health.settings.after_steps:
            self.health.check("early", self.steps, self.private.log)
        return losses

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
        losses = self._private_step(ids, lengths, groups)
        return float("nan") if losses is None else float(losses.mean())

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
        if len(ids) == 0:
            self._private_step(ids, lengths, groups)
            return float("nan")
        _, _, y = batch_tensors(ids, lengths)
        sens = sensitive[:, 1 : y.shape[1] + 1] & (y != IGNORE)
        y_secret = y.masked_fill(~sens, IGNORE)
        # 1) the ordinary gradient of the loss on the public copy (outside capture: no per-sample work)
        loss_ns, g_public = self.public_gradient(ids, lengths, sensitive)
        # 2) the clipped, noised per-unit gradient of the sensitive loss (rows without one count 0)
        s = self._private_step(ids, lengths, groups, targets=y_secret, public=g_public)
        assert s is not None
        return float((loss_ns + s.mean()).detach())

    def private_batches(self, chunks: Chunks, extra: torch.Tensor | None = None) -> Iterator[tuple[Any, ...]]:
        """One epoch of private batches (``ids, lengths, groups[, extra rows]``) from the sampler."""
        for b in self.sampler.epoch():
            yield self._rows(chunks, b, extra)

    @staticmethod
    def _rows(chunks: Chunks, b: Batch, extra: torch.Tensor | None) -> tuple[Any, ...]:
        rows = (chunks.ids[b.idx], chunks.lengths[b.idx], b.groups)
        return rows if extra is None else (*rows, extra[b.idx])

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
            return plain_privacy_record(self.public_steps, {"privacy_unit": None, "trainable": trainable})
        assert self.private is not None
        scope = "the fine-tuning data; the pretrained base is public (assumed never to have seen it)"
        return dp_privacy_record(
            self,
            mode=cfg.mode,
            epsilon=self.private.epsilon(cfg.target_delta),
            clipping=self.clipping,
            extra={"trainable": trainable, "dp_scope": scope},
        )

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
