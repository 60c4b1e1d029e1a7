"""DP-SGD, CRT and selective-DP strategies for :func:`lmleak.train.trainer.train_model` (Opacus).

- ``dp``: DP-SGD (Abadi et al. 2016) — Poisson sampling, clipping per unit to ``max_grad_norm``,
  Gaussian noise. The unit (:mod:`lmleak.train.units`) is the user by default whenever the data has
  user ids: each step samples users, each contributes the mean gradient of up to
  ``max_sequences_per_user`` of their sequences, clipped as one. At user level, and for the GPT's
  default book-keeping clipping at sequence level, the step is DP-SGD by hand
  (:class:`lmleak.train.dpsgd.PrivateStep` on :mod:`lmleak.train.clipping`: book-keeping for the GPT,
  Opacus' per-sample hooks on ``DPLSTM`` for the LSTM); a sequence-level run with Opacus' ghost
  clipping (GPT) or the LSTM goes through ``opacus.PrivacyEngine`` as before.
- ``crt``: Confidentially Redacted Training, paper 002 Algorithm 1 — every epoch one epoch of
  ordinary SGD on D_pub, then one epoch of DP-SGD on D_pri. A mini-batch is all-public or
  all-private (A.5 rule 6); only private steps are accounted (sample rate of the unit in D_pri).
- ``sdp``: selective DP-SGD (Shi et al. 2021), the LSTM baseline of paper 002: each step's update
  is the ordinary gradient of the loss on a public copy of the batch whose flagged tokens are masked
  (:func:`lmleak.train.sensitive.public_copy`) plus the clipped, noised per-unit gradient of the loss
  on sensitive target tokens (tokens inside a policy's spans, or digits and ``<MASK>`` without a
  policy). Only the sensitive part is accounted; it protects detected secrets only.

Accounting: the accountant of ``opacus.PrivacyEngine`` (``prv`` default, ``rdp`` selectable) with q
the sampling rate of the unit; an empty Poisson batch still counts as a step (a noise-only step).
A shuffled run (``sampler="shuffle"``, Opacus' ``poisson_sampling=False``) reports the bound that
holds for it (:func:`lmleak.train.accounting.sampler_epsilon`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from lmleak.errors import ConfigError
from lmleak.models.small import SmallLSTM
from lmleak.train.clipping import make_clipper
from lmleak.train.config import TrainConfig
from lmleak.train.dpsgd import PrivateStep, dp_privacy_record, masked_losses, noise_multiplier_for
from lmleak.train.health import HealthMonitor, health_monitor
from lmleak.train.plain import (
    IGNORE,
    Chunks,
    PlainStrategy,
    batch_tensors,
    forward_logits,
    sequence_losses,
)
from lmleak.train.sensitive import crt_split_for, public_copy, sensitive_token_mask
from lmleak.train.units import Sampler, Units

__all__ = [
    "CRTStrategy",
    "DPStrategy",
    "SDPStrategy",
    "crt_split_for",
    "make_strategy",
    "sensitive_token_mask",
]

# Opacus' per-sample hooks fire on the first layer, whose input (token ids) needs no gradient; torch
# warns about that on every backward pass although the gradients are right (tests compare by hand).
warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)
# Opacus warns on every training run that its noise does not come from a cryptographically secure
# RNG (secure_mode needs torchcsprng). lmleak's DP models are for auditing and experiments; the
# docs say so once instead of every run.
warnings.filterwarnings("ignore", message="Secure RNG turned off", category=UserWarning)


class DPStrategy:
    """DP-SGD over the training sequences, per user or per sequence (module docstring)."""

    mode = "dp"

    def __init__(self, config: TrainConfig) -> None:
        self.config = config
        self.steps = 0
        self.empty_steps = 0
        self.noise_draws = 0  # steps that added Gaussian noise to the parameters' gradients
        self.batch_log: list[str] = []
        self.private: PrivateStep | None = None  # the by-hand path (user level, book-keeping)
        self.expected_batch_size: float = 1.0  # the divisor of the noised sum
        self.health: HealthMonitor | None = None
        self.unit, self.unit_reason = "sequence", ""
        self.units: Units | None = None
        self.engine_log: list[dict[str, float]] = []  # the Opacus path's steps, for the health checks

    def _make_private(
        self, module: torch.nn.Module, chunks: Chunks, extra: dict[str, Any]
    ) -> torch.nn.Module:
        from opacus import PrivacyEngine
        from opacus.validators import ModuleValidator
        from torch.utils.data import DataLoader, TensorDataset

        cfg = self.config
        self.unit = extra.get("unit") or "sequence"
        self.unit_reason = extra.get("unit_reason") or "the caller gave no user ids (sequence level)"
        self.units = extra.get("units")
        if self.units is None and chunks.docs is not None and extra.get("user_of_doc") is not None:
            self.units = Units.of(chunks.docs, extra["user_of_doc"])
        self.ghost = cfg.arch == "gpt"
        self.bk: Any = None
        if self.unit == "user" or (self.ghost and cfg.dp_clipping == "bookkeeping"):
            return self._make_private_by_hand(module, chunks)
        if not self.ghost:
            module = ModuleValidator.fix(module)  # nn.LSTM -> DPLSTM (same state-dict names)
        self.engine = PrivacyEngine(accountant=cfg.accountant, secure_mode=False)
        optimizer = torch.optim.AdamW(module.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        shuffle = cfg.sampler == "shuffle"
        data = TensorDataset(chunks.ids, chunks.lengths)
        loader = DataLoader(data, batch_size=min(cfg.batch_size, len(chunks)), shuffle=shuffle)
        common: dict[str, Any] = dict(
            module=module,
            optimizer=optimizer,
            data_loader=loader,
            max_grad_norm=cfg.max_grad_norm,
            poisson_sampling=not shuffle,
        )
        if self.ghost:
            common.update(
                criterion=torch.nn.CrossEntropyLoss(ignore_index=IGNORE, reduction="mean"),
                grad_sample_mode="ghost",
            )
        else:
            common.update(grad_sample_mode="hooks")
        # make_private_with_epsilon's own rule (Poisson), or the shuffled run's bound
        noise = noise_multiplier_for(cfg, 1 / len(loader))
        result = self.engine.make_private(noise_multiplier=noise, **common)
        if self.ghost:
            self.module, self.optimizer, self.criterion, self.loader = result
        else:
            self.module, self.optimizer, self.loader = result
        self.sample_rate = 1 / len(self.loader)
        self.sampler = Sampler(len(chunks), cfg.batch_size, kind=cfg.sampler)
        self._count_engine_noise()
        self.noise_multiplier = float(self.optimizer.noise_multiplier)
        self.expected_batch_size = float(int(self.optimizer.expected_batch_size))
        self.private_chunks = chunks
        self.health = health_monitor(getattr(self.module, "_module", self.module), cfg, lora=False)
        return self.module

    def _count_engine_noise(self) -> None:
        """Wrap the Opacus optimiser's ``add_noise``: every step draws its noise there; the norm of the
        clipped sum it is about to noise goes to the health log."""
        add_noise = self.optimizer.add_noise
        cfg = self.config

        def counted_add_noise() -> None:
            self.noise_draws += 1
            params = [p for g in self.optimizer.param_groups for p in g["params"] if p.requires_grad]
            summed = [getattr(p, "summed_grad", None) for p in params]
            sq = sum(float(t.pow(2).sum()) for t in summed if t is not None)
            dim = sum(p.numel() for p in params)
            self.engine_log.append(
                {
                    "units": float(getattr(self, "_batch_units", 0)),
                    "clipped": float("nan"),
                    "signal_norm": sq**0.5,
                    "noise_norm": float(self.optimizer.noise_multiplier) * cfg.max_grad_norm * dim**0.5,
                }
            )
            add_noise()

        self.optimizer.add_noise = counted_add_noise  # type: ignore[method-assign]

    def _make_private_by_hand(self, module: torch.nn.Module, chunks: Chunks) -> torch.nn.Module:
        """Opacus' rules without its wrappers, for either unit: the sampler's batches and rate, σ from
        the target ε like ``make_private_with_epsilon``, the clipped sum per unit plus N(0, σ²C²)
        divided by the expected units per step, the same accountant."""
        from opacus.validators import ModuleValidator

        cfg = self.config
        if self.ghost and cfg.dp_clipping == "ghost":
            raise ConfigError(
                "Opacus' ghost clipping clips per sequence; user-level DP needs the per-sample gradients",
                field="dp_clipping",
                hint="use --dp-clipping bookkeeping (the default), or --privacy-unit sequence",
            )
        if self.unit == "user" and self.units is None:
            raise ConfigError("user-level DP needs to know who owns each sequence", field="privacy_unit")
        if not self.ghost:
            module = ModuleValidator.fix(module)  # nn.LSTM -> DPLSTM, whose layers Opacus' hooks know
        clipper, self.clipping_name = make_clipper(module, "bookkeeping" if self.ghost else "hooks")
        self.bk = clipper if self.ghost else None
        self.sampler, self.private = PrivateStep.of_run(
            clipper, cfg, len(chunks), unit=self.unit, units=self.units
        )
        self.steps_per_epoch = self.sampler.steps_per_epoch
        self.sample_rate = self.sampler.sample_rate
        self.expected_batch_size = self.sampler.expected_size
        self.noise_multiplier = self.private.noise_multiplier
        self.engine = self.private  # .accountant, as Opacus' engine
        self.optimizer = torch.optim.AdamW(module.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.private_chunks = chunks
        self.module = module
        self.health = health_monitor(module, cfg, lora=False)
        return module

    def _step_log(self) -> list[dict[str, float]]:
        return self.private.log if self.private is not None else self.engine_log

    def _after_step(self) -> None:
        """Count the noise draw and run the early health check when it is due."""
        if self.private is not None:
            self.noise_draws = self.private.noise_draws
        if self.health is not None and self.steps == self.health.settings.after_steps:
            self.health.check("early", self.steps, self._step_log())

    def finish_health(self) -> dict[str, Any] | None:
        """The end-of-training health check; its record for ``train.json``."""
        if self.health is None:
            return None
        self.health.check("final", self.steps, self._step_log())
        return self.health.record()

    def _by_hand_step(
        self,
        ids: torch.Tensor,
        lengths: torch.Tensor,
        groups: torch.Tensor | None,
        targets: torch.Tensor | None = None,
        public: list[torch.Tensor | None] | None = None,
    ) -> float:
        """Clip per unit (``targets`` replaces the batch's own, selective DP), noise, add the
        un-noised ``public`` gradient if any, step, account."""
        assert self.private is not None
        losses_of = None
        if len(ids) == 0:
            self.empty_steps += 1  # nobody sampled: the clipped sum is 0, a noise-only step, accounted
        else:
            x, m, y = batch_tensors(ids, lengths)
            losses_of = masked_losses(forward_logits, x, m, y if targets is None else targets)
        losses = self.private.step(self.optimizer, losses_of, groups, public)
        self._after_step()
        return float("nan") if losses is None else float(losses.mean())

    def _add_noise(self, params: list[torch.nn.Parameter]) -> None:
        """``grad <- (grad + N(0, σ²C²)) / expected batch size`` for every parameter (grad 0 when None)."""
        std = self.noise_multiplier * self.config.max_grad_norm
        self.noise_draws += 1
        for p in params:
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            noise = torch.normal(0.0, std, size=p.shape) if std > 0 else 0.0
            p.grad = (g + noise) / self.expected_batch_size

    def _noise_only_step(self) -> float:
        """Poisson sampling drew nobody (Opacus path): the sum of clipped gradients is 0, so the step is
        pure noise — taken, not skipped, so that every step the accountant counts released a noised update."""
        self.empty_steps += 1
        params = [p for group in self.optimizer.param_groups for p in group["params"] if p.requires_grad]
        base = self.optimizer.original_optimizer
        for p in params:
            p.grad = None
        self._add_noise(params)
        base.step()
        for p in params:
            p.grad = None
        self.engine.accountant.step(noise_multiplier=self.noise_multiplier, sample_rate=self.sample_rate)
        self._after_step()
        return float("nan")

    def accounted_steps(self) -> int:
        """Steps the privacy accountant has counted (each a (σ, q) composition)."""
        return int(sum(n for _, _, n in self.engine.accountant.history))

    def setup(self, module: torch.nn.Module, train: Chunks, extra: dict[str, Any]) -> torch.nn.Module:
        self.original = module
        return self._make_private(module, train, extra)

    def batches(self, epoch: int) -> Iterator[tuple[Any, ...]]:
        if self.private is not None:
            chunks = self.private_chunks
            for b in self.sampler.epoch():
                yield "private", chunks.ids[b.idx], chunks.lengths[b.idx], b.groups
            return
        for ids, lengths in self.loader:
            yield "private", ids, lengths

    def dp_step(self, ids: torch.Tensor, lengths: torch.Tensor, groups: torch.Tensor | None = None) -> float:
        self.batch_log.append("private")
        self.steps += 1
        if self.private is not None:
            return self._by_hand_step(ids, lengths, groups)
        if len(ids) == 0:
            return self._noise_only_step()
        self._batch_units = len(ids)
        x, m, y = batch_tensors(ids, lengths)
        self.optimizer.zero_grad(set_to_none=True)
        logits = forward_logits(self.module, x, m)
        if self.ghost:
            loss = self.criterion(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), shape=logits.shape)
            loss.backward()
            value = float(loss.detach().mean()) if hasattr(loss, "detach") else float("nan")
        else:
            loss = sequence_losses(logits, y).mean()
            loss.backward()
            value = float(loss.detach())
        self.optimizer.step()
        self._after_step()
        return value

    def step(self, kind: str, ids: torch.Tensor, lengths: torch.Tensor, *rest: Any) -> float:
        return self.dp_step(ids, lengths, *rest)

    def trained_module(self) -> torch.nn.Module:
        """The plain (unwrapped) model: a GPT2LMHeadModel or a SmallLSTM with nn.LSTM."""
        inner = getattr(self.module, "_module", self.module)
        if self.config.arch == "lstm":
            plain = SmallLSTM(self.original.config)
            # DPLSTM's state dict carries nn.LSTM's names (RenameParamsMixin) beside its own
            wanted = plain.state_dict()
            plain.load_state_dict({k: v for k, v in inner.state_dict().items() if k in wanted})
            return plain
        return inner

    def epsilon(self) -> float:
        if not self.accounted_steps():
            return 0.0
        with np.errstate(divide="ignore"):  # PRV's log(1 - q) at q = 1 (accounting.epsilon_opacus)
            return float(self.engine.accountant.get_epsilon(delta=self.config.target_delta))

    def clipping(self) -> str:
        if self.private is not None:
            return "bookkeeping" if self.ghost else "per-sample hooks"
        return "ghost" if self.ghost else "per-sample hooks"

    def privacy(self) -> dict[str, Any]:
        """``privacy.json``'s accounting (:func:`lmleak.train.dpsgd.dp_privacy_record`), crt's and sdp's notes included."""
        return dp_privacy_record(self, mode=self.mode, epsilon=self.epsilon(), clipping=self.clipping())


class CRTStrategy(DPStrategy):
    """Paper 002 Algorithm 1: an epoch of SGD on D_pub, then an epoch of DP-SGD on D_pri."""

    mode = "crt"

    def setup(self, module: torch.nn.Module, train: Chunks, extra: dict[str, Any]) -> torch.nn.Module:
        self.original = module
        self.public: Chunks = extra["public"]
        wrapped = self._make_private(module, extra["private"], extra)
        inner = getattr(wrapped, "_module", wrapped)
        self.public_optimizer = torch.optim.AdamW(
            inner.parameters(), lr=self.config.lr, weight_decay=self.config.weight_decay
        )
        self.gen = torch.Generator().manual_seed(self.config.seed)
        self.public_steps = 0
        return wrapped

    def batches(self, epoch: int) -> Iterator[tuple[Any, ...]]:
        order = torch.randperm(len(self.public), generator=self.gen)
        bs = self.config.batch_size
        for s in range(0, len(order), bs):
            idx = order[s : s + bs]
            yield "public", self.public.ids[idx], self.public.lengths[idx]
        yield from super().batches(epoch)

    def step(self, kind: str, ids: torch.Tensor, lengths: torch.Tensor, *rest: Any) -> float:
        if kind == "private":
            return self.dp_step(ids, lengths, *rest)
        # a public step: ordinary SGD on the unwrapped model, Opacus hooks off, nothing accounted
        self.batch_log.append("public")
        inner = getattr(self.module, "_module", self.module)
        hooks = hasattr(
            self.module, "disable_hooks"
        )  # Opacus' wrapper; book-keeping and by-hand hooks idle outside capture()
        if hooks:
            self.module.disable_hooks()
        try:
            x, m, y = batch_tensors(ids, lengths)
            self.public_optimizer.zero_grad(set_to_none=True)
            loss = sequence_losses(forward_logits(inner, x, m), y).mean()
            loss.backward()
            self.public_optimizer.step()
        finally:
            if hooks:
                self.module.enable_hooks()
            for p in inner.parameters():
                p.grad = None
                for attr in ("grad_sample", "_norm_sample"):
                    if hasattr(p, attr):
                        setattr(p, attr, None)
        self.public_steps += 1
        return float(loss.detach())


class SDPStrategy(DPStrategy):
    """Selective DP-SGD (Shi et al. 2021) for the LSTM; see the module docstring."""

    mode = "sdp"

    def setup(self, module: torch.nn.Module, train: Chunks, extra: dict[str, Any]) -> torch.nn.Module:
        self.original = module
        self.sensitive: torch.Tensor = extra["sensitive"]  # (N, seq_len + 1) bool over chunk tokens
        self.mask_id = int(extra.get("mask_id", 0))
        self.width = train.ids.shape[1]
        self.tokens = train
        unit = extra.get("unit") or "sequence"
        if unit == "user":
            return self._make_private(module, train, extra)
        masked = Chunks(torch.cat([train.ids, self.sensitive.long()], dim=1), train.lengths, train.docs)
        return self._make_private(module, masked, extra)

    def batches(self, epoch: int) -> Iterator[tuple[Any, ...]]:
        if self.private is None:
            yield from super().batches(epoch)
            return
        for b in self.sampler.epoch():
            yield (
                "private",
                self.tokens.ids[b.idx],
                self.tokens.lengths[b.idx],
                b.groups,
                self.sensitive[b.idx],
            )

    def public_gradient(
        self, ids: torch.Tensor, lengths: torch.Tensor, sensitive: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        """(loss, gradient) of the mean loss over the batch's public copy (flagged runs masked, mask
        tokens not predicted), on the plain module: independent of what the flagged tokens hold."""
        inner = getattr(self.module, "_module", self.module)
        params = [p for p in inner.parameters() if p.requires_grad]
        pid, plen = public_copy(ids, lengths, sensitive, self.mask_id)
        x, m, y = batch_tensors(pid, plen)
        y = y.masked_fill(y == self.mask_id, IGNORE)
        hooks = hasattr(self.module, "disable_hooks")
        if hooks:
            self.module.disable_hooks()
        try:
            ns = sequence_losses(forward_logits(inner, x, m), y)
            loss = (ns * (y != IGNORE).any(1).float()).sum() / max(len(ids), 1)
            grads = list(torch.autograd.grad(loss, params, allow_unused=True))
        finally:
            if hooks:
                self.module.enable_hooks()
        return loss.detach(), grads

    def step(self, kind: str, ids: torch.Tensor, lengths: torch.Tensor, *rest: Any) -> float:
        self.batch_log.append("private")
        self.steps += 1
        if self.private is not None:
            groups, sens = rest[0], rest[1]
            if len(ids) == 0:
                return self._by_hand_step(ids, lengths, groups)
            _, _, y = batch_tensors(ids, lengths)
            y_secret = y.masked_fill(~(sens[:, 1 : y.shape[1] + 1] & (y != IGNORE)), IGNORE)
            loss_ns, g_public = self.public_gradient(ids, lengths, sens)
            value = self._by_hand_step(ids, lengths, groups, targets=y_secret, public=g_public)
            return float(loss_ns) + value
        if len(ids) == 0:
            return self._noise_only_step()
        self._batch_units = len(ids)
        tokens, sens = ids[:, : self.width], ids[:, self.width :].bool()
        x, m, y = batch_tensors(tokens, lengths)
        sens_t = sens[:, 1 : y.shape[1] + 1] & (y != IGNORE)
        y_secret = y.masked_fill(~sens_t, IGNORE)
        inner = getattr(self.module, "_module", self.module)
        params = [p for p in inner.parameters() if p.requires_grad]
        self.optimizer.zero_grad(set_to_none=True)
        # 1) ordinary gradient of the loss on the public copy (hooks off: no per-sample work)
        loss_ns, g_public = self.public_gradient(tokens, lengths, sens)
        # 2) clipped + noised per-sequence gradient of the sensitive loss
        s = sequence_losses(forward_logits(self.module, x, m), y_secret)
        has_s = (y_secret != IGNORE).any(1).float()
        (s * has_s).mean().backward()
        self.optimizer.pre_step()  # clip per sample, add noise, average -> p.grad
        for p, g in zip(params, g_public, strict=True):
            if g is not None:
                p.grad = g if p.grad is None else p.grad + g
        self.optimizer.original_optimizer.step()
        self._after_step()
        return float((loss_ns + (s * has_s).mean()).detach())


def make_strategy(config: TrainConfig) -> Any:
    return {"dp": DPStrategy, "crt": CRTStrategy, "sdp": SDPStrategy, "nodp": PlainStrategy}[config.mode](
        config
    )
