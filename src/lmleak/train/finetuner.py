"""One fine-tuning run's optimiser, clipping, noise and accountant: :class:`Finetuner`.

A plain step is AdamW on the mean loss; a DP step is Opacus' rules by hand — the clipped per-sample
gradient sum (:mod:`lmleak.train.clipping`), N(0, σ²C²) noise, division by the expected batch size,
one accountant step; an empty Poisson batch is a noise-only step. A selective-DP step adds the
ordinary gradient of the non-sensitive loss. :meth:`Finetuner.state` / :meth:`Finetuner.restore`
carry everything a resumed run needs (weights, optimiser, counters, accountant history, RNG).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import torch

from lmleak.train.clipping import make_clipper
from lmleak.train.config import FinetuneConfig
from lmleak.train.plain import IGNORE, Chunks, batch_tensors, sequence_losses
from lmleak.train.prepare import Precision, logits_of


class Finetuner:
    """One fine-tuning run: the model, optimiser, clipping, accountant and the step of each kind."""

    def __init__(
        self, model: torch.nn.Module, config: FinetuneConfig, device: str, precision: Precision
    ) -> None:
        self.model, self.config, self.device, self.precision = model, config, device, precision
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=config.lr, weight_decay=config.weight_decay)
        self.steps = self.public_steps = self.empty_steps = self.noise_draws = 0
        self.clipper: Any = None
        self.clipping: str | None = None
        self.accountant: Any = None
        if config.mode != "nodp":
            from opacus.accountants import create_accountant

            self.clipper, self.clipping = make_clipper(model, config.dp_clipping)
            self.accountant = create_accountant(config.accountant)

    def set_private_data(self, n: int) -> None:
        """Opacus' rules for ``n`` private sequences: q = 1 / steps-per-epoch, σ from the target ε."""
        cfg = self.config
        self.n_private = n
        self.steps_per_epoch = max(1, math.ceil(n / max(1, min(cfg.batch_size, n))))
        self.sample_rate = 1 / self.steps_per_epoch
        self.expected_batch_size = max(1, int(n * self.sample_rate))
        if cfg.target_epsilon is not None:
            from opacus.accountants.utils import get_noise_multiplier

            self.noise_multiplier = float(
                get_noise_multiplier(
                    target_epsilon=cfg.target_epsilon,
                    target_delta=cfg.target_delta,
                    sample_rate=self.sample_rate,
                    epochs=cfg.epochs,
                    accountant=cfg.accountant,
                )
            )
        else:
            self.noise_multiplier = float(cfg.noise_multiplier or 0.0)

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

    def _add_noise(self) -> None:
        """``grad <- (grad + N(0, σ²C²)) / expected batch size`` for every trainable weight."""
        std = self.noise_multiplier * self.config.max_grad_norm
        self.noise_draws += 1
        for p in self.params:
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            if std > 0:
                g = g + torch.normal(0.0, std, size=p.shape, device=p.device, dtype=p.dtype)
            p.grad = g / self.expected_batch_size

    def _account(self) -> None:
        self.accountant.step(noise_multiplier=self.noise_multiplier, sample_rate=self.sample_rate)

    def clipped_gradient(
        self, ids: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Σ_i clip(∇ loss_i) into every trainable ``.grad`` (no noise); returns (per-sample losses).
        ``targets`` replaces the batch's own (selective DP's sensitive-token loss)."""
        x, m, y = self._tensors(ids, lengths)
        if targets is not None:
            y = targets.to(self.device)
        with self.clipper.capture():
            losses = self._losses(self.clipper.forward_module, x, m, y)
            has = (y != IGNORE).any(1).float()
            (losses * has).sum().backward()
        self.clipper.clipped_sum(self.config.max_grad_norm)
        return losses.detach()

    # -- steps
    def plain_step(self, ids: torch.Tensor, lengths: torch.Tensor) -> float:
        x, m, y = self._tensors(ids, lengths)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self._losses(self.model, x, m, y).mean()
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    def dp_step(self, ids: torch.Tensor, lengths: torch.Tensor) -> float:
        self.steps += 1
        self.optimizer.zero_grad(set_to_none=True)
        value = float("nan")
        if len(ids) == 0:
            self.empty_steps += 1  # the sum of clipped gradients is 0: a noise-only step, still accounted
        else:
            value = float(self.clipped_gradient(ids, lengths).mean())
        self._add_noise()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self._account()
        return value

    def sdp_step(self, ids: torch.Tensor, lengths: torch.Tensor, sensitive: torch.Tensor) -> float:
        self.steps += 1
        self.optimizer.zero_grad(set_to_none=True)
        if len(ids) == 0:
            self.empty_steps += 1
            self._add_noise()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            self._account()
            return float("nan")
        x, m, y = self._tensors(ids, lengths)
        sens = sensitive[:, 1 : y.shape[1] + 1].to(self.device) & (y != IGNORE)
        y_public, y_secret = y.masked_fill(sens, IGNORE), y.masked_fill(~sens, IGNORE)
        # 1) the ordinary gradient of the non-sensitive loss (outside capture: no per-sample work)
        ns = self._losses(self.model, x, m, y_public)
        has_ns = (y_public != IGNORE).any(1).float()
        loss_ns = (ns * has_ns).sum() / len(ids)
        g_public = torch.autograd.grad(loss_ns, self.params, allow_unused=True)
        # 2) the clipped, noised per-sequence gradient of the sensitive loss
        s = self.clipped_gradient(ids, lengths, targets=y_secret)
        self._add_noise()
        for p, g in zip(self.params, g_public, strict=True):
            if g is not None:
                p.grad = p.grad + g
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self._account()
        has_s = (y_secret != IGNORE).any(1).float()
        return float((loss_ns + (s * has_s).mean()).detach())

    def poisson_batches(
        self, chunks: Chunks, extra: torch.Tensor | None = None
    ) -> Iterator[tuple[torch.Tensor, ...]]:
        """One epoch of Poisson batches (Opacus' UniformWithReplacementSampler's rule)."""
        n = len(chunks)
        for _ in range(self.steps_per_epoch):
            idx = (torch.rand(n) < self.sample_rate).nonzero().reshape(-1)
            yield (chunks.ids[idx], chunks.lengths[idx]) + (() if extra is None else (extra[idx],))

    def accounted_steps(self) -> int:
        return int(sum(n for _, _, n in self.accountant.history)) if self.accountant is not None else 0

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
                "trainable": trainable,
                "note": "no differential privacy: epsilon is unbounded (reported as null)",
            }
        out = {
            "mode": cfg.mode,
            "epsilon": float(self.accountant.get_epsilon(delta=cfg.target_delta))
            if self.accounted_steps()
            else 0.0,
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
            "privacy_unit": "one training sequence (a chunk of one document)",
            "trainable": trainable,
            "dp_scope": "the fine-tuning data; the pretrained base is public (assumed never to have seen it)",
        }
        if cfg.mode == "crt":
            out["public_steps"] = self.public_steps
            out["note"] = "only DP-SGD steps on D_pri are accounted (paper 002 Algorithm 1)"
        if cfg.mode == "sdp":
            out["note"] = (
                "selective DP (Shi et al. 2021): only updates from sensitive tokens are clipped, noised and accounted"
            )
        return out

    # -- checkpoints
    def state(self, epoch: int, history: list[dict[str, Any]], fingerprint: str) -> dict[str, Any]:
        names = {id(p): n for n, p in self.model.named_parameters()}
        state: dict[str, Any] = {
            "fingerprint": fingerprint,
            "epoch": epoch,
            "history": json.dumps(history),
            "weights": {names[id(p)]: p.detach().cpu() for p in self.params},
            "optimizer": self.optimizer.state_dict(),
            "counters": [self.steps, self.public_steps, self.empty_steps, self.noise_draws],
            "accountant": [list(h) for h in self.accountant.history] if self.accountant is not None else [],
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
        self.steps, self.public_steps, self.empty_steps, self.noise_draws = (
            int(v) for v in state["counters"]
        )
        if self.accountant is not None:
            self.accountant.history = [(float(a), float(b), int(c)) for a, b, c in state["accountant"]]
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
