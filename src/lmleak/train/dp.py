"""DP-SGD, CRT and selective-DP strategies for :func:`lmleak.train.trainer.train_model` (Opacus).

- ``dp``: DP-SGD (Abadi et al. 2016) over all training sequences — Poisson sampling, per-sequence
  clipping to ``max_grad_norm``, Gaussian noise. The GPT's per-sample clipping is book-keeping
  (:mod:`lmleak.train.bk`: norms and clipped sum in one backward pass; Opacus' sampling rule,
  clip factor, noise and averaging reproduced here) or, with ``dp_clipping="ghost"``, Opacus'
  ghost clipping; the LSTM uses Opacus' per-sample hooks with ``DPLSTM``.
- ``crt``: Confidentially Redacted Training, paper 002 Algorithm 1 — every epoch one epoch of
  ordinary SGD on D_pub, then one epoch of DP-SGD on D_pri. A mini-batch is all-public or
  all-private (A.5 rule 6); only private steps are accounted (sample rate = batch / |D_pri|).
- ``sdp``: selective DP-SGD (Shi et al. 2021), the LSTM baseline of paper 002: each step's update
  is the ordinary gradient of the loss on non-sensitive target tokens plus the clipped, noised
  per-sequence gradient of the loss on sensitive target tokens (tokens inside a policy's spans,
  or digits and ``<MASK>`` without a policy). Only the sensitive part is accounted.

Accounting: the accountant of ``opacus.PrivacyEngine`` (``prv`` default, ``rdp`` selectable);
an empty Poisson batch still counts as a step (a noise-only step in DP-SGD).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from typing import Any

import torch

from lmleak.models.small import SmallLSTM
from lmleak.pii.policies import get_policy
from lmleak.train.bk import BookKeeping
from lmleak.train.config import TrainConfig
from lmleak.train.plain import (
    IGNORE,
    Chunks,
    PlainStrategy,
    batch_tensors,
    encode_chunks,
    forward_logits,
    sequence_losses,
)
from lmleak.train.split import crt_split

# Opacus' per-sample hooks fire on the first layer, whose input (token ids) needs no gradient; torch
# warns about that on every backward pass although the gradients are right (tests compare by hand).
warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)
# Opacus warns on every training run that its noise does not come from a cryptographically secure
# RNG (secure_mode needs torchcsprng). lmleak's DP models are for auditing and experiments; the
# docs say so once instead of every run.
warnings.filterwarnings("ignore", message="Secure RNG turned off", category=UserWarning)


def _engine(config: TrainConfig) -> Any:
    from opacus import PrivacyEngine

    return PrivacyEngine(accountant=config.accountant, secure_mode=False)


class _Accounting:
    """What the strategies read of an Opacus ``PrivacyEngine``, for the book-keeping path."""

    def __init__(self, mechanism: str) -> None:
        from opacus.accountants import create_accountant

        self.accountant = create_accountant(mechanism)

    def get_epsilon(self, delta: float) -> float:
        return float(self.accountant.get_epsilon(delta=delta))


def _dataset(chunks: Chunks) -> Any:
    from torch.utils.data import TensorDataset

    return TensorDataset(chunks.ids, chunks.lengths)


class DPStrategy:
    """DP-SGD over every training sequence."""

    mode = "dp"

    def __init__(self, config: TrainConfig) -> None:
        self.config = config
        self.steps = 0
        self.empty_steps = 0
        self.noise_draws = 0  # steps that added Gaussian noise to the parameters' gradients
        self.batch_log: list[str] = []

    def _make_private(self, module: torch.nn.Module, chunks: Chunks) -> torch.nn.Module:
        from opacus.validators import ModuleValidator
        from torch.utils.data import DataLoader

        cfg = self.config
        self.ghost = cfg.arch == "gpt"
        self.bk: BookKeeping | None = None
        if self.ghost and cfg.dp_clipping == "bookkeeping":
            return self._make_private_bookkeeping(module, chunks)
        if not self.ghost:
            module = ModuleValidator.fix(module)  # nn.LSTM -> DPLSTM (same state-dict names)
        self.engine = _engine(cfg)
        optimizer = torch.optim.AdamW(module.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        loader = DataLoader(_dataset(chunks), batch_size=min(cfg.batch_size, len(chunks)), shuffle=False)
        common: dict[str, Any] = dict(
            module=module,
            optimizer=optimizer,
            data_loader=loader,
            max_grad_norm=cfg.max_grad_norm,
            poisson_sampling=True,
        )
        if self.ghost:
            common.update(
                criterion=torch.nn.CrossEntropyLoss(ignore_index=IGNORE, reduction="mean"),
                grad_sample_mode="ghost",
            )
        else:
            common.update(grad_sample_mode="hooks")
        if cfg.target_epsilon is not None:
            result = self.engine.make_private_with_epsilon(
                target_epsilon=cfg.target_epsilon, target_delta=cfg.target_delta, epochs=cfg.epochs, **common
            )
        else:
            result = self.engine.make_private(noise_multiplier=cfg.noise_multiplier, **common)
        if self.ghost:
            self.module, self.optimizer, self.criterion, self.loader = result
        else:
            self.module, self.optimizer, self.loader = result
        self.sample_rate = 1 / len(self.loader)
        add_noise = self.optimizer.add_noise

        def counted_add_noise() -> None:  # every Opacus step draws its noise here
            self.noise_draws += 1
            add_noise()

        self.optimizer.add_noise = counted_add_noise  # type: ignore[method-assign]
        self.noise_multiplier = float(self.optimizer.noise_multiplier)
        self.expected_batch_size = int(self.optimizer.expected_batch_size)
        self.private_chunks = chunks
        return self.module

    def _make_private_bookkeeping(self, module: torch.nn.Module, chunks: Chunks) -> torch.nn.Module:
        """Opacus' rules without its wrappers: ``len(loader)`` Poisson batches per epoch at sample rate
        1 / len(loader), σ from the target ε like ``make_private_with_epsilon``, the sum of clipped
        gradients plus N(0, σ²C²) divided by the expected batch size, the same accountant."""
        from opacus.accountants.utils import get_noise_multiplier

        cfg = self.config
        n = len(chunks)
        self.steps_per_epoch = math.ceil(n / min(cfg.batch_size, n))
        self.sample_rate = 1 / self.steps_per_epoch
        self.expected_batch_size = int(n * self.sample_rate)
        self.engine = _Accounting(cfg.accountant)
        if cfg.target_epsilon is not None:
            self.noise_multiplier = float(
                get_noise_multiplier(
                    target_epsilon=cfg.target_epsilon,
                    target_delta=cfg.target_delta,
                    sample_rate=self.sample_rate,
                    epochs=cfg.epochs,
                    accountant=self.engine.accountant.mechanism(),
                )
            )
        else:
            self.noise_multiplier = float(cfg.noise_multiplier)  # type: ignore[arg-type]
        self.bk = BookKeeping(module)
        self.optimizer = torch.optim.AdamW(module.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.private_chunks = chunks
        self.module = module
        return module

    def _bookkeeping_step(self, ids: torch.Tensor, lengths: torch.Tensor) -> float:
        assert self.bk is not None
        cfg = self.config
        x, m, y = batch_tensors(ids, lengths)
        with self.bk.capture():
            losses = sequence_losses(forward_logits(self.module, x, m), y)
            losses.sum().backward()
        self.bk.clipped_sum(cfg.max_grad_norm)
        self._add_noise(self.bk.params)
        self.optimizer.step()
        self.engine.accountant.step(noise_multiplier=self.noise_multiplier, sample_rate=self.sample_rate)
        return float(losses.detach().mean())

    def _add_noise(self, params: list[torch.nn.Parameter]) -> None:
        """``grad <- (grad + N(0, σ²C²)) / expected batch size`` for every parameter (grad 0 when None)."""
        std = self.noise_multiplier * self.config.max_grad_norm
        self.noise_draws += 1
        for p in params:
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            noise = torch.normal(0.0, std, size=p.shape) if std > 0 else 0.0
            p.grad = (g + noise) / self.expected_batch_size

    def _noise_only_step(self) -> float:
        """Poisson sampling drew nobody: the sum of clipped gradients is 0, so the step is pure noise —
        taken, not skipped, so that every step the accountant counts released a noised update."""
        self.empty_steps += 1
        if self.bk is not None:
            params = list(self.bk.params)
            base = self.optimizer
        else:
            params = [p for group in self.optimizer.param_groups for p in group["params"] if p.requires_grad]
            base = self.optimizer.original_optimizer
        for p in params:
            p.grad = None
        self._add_noise(params)
        base.step()
        for p in params:
            p.grad = None
        self.engine.accountant.step(noise_multiplier=self.noise_multiplier, sample_rate=self.sample_rate)
        return float("nan")

    def accounted_steps(self) -> int:
        """Steps the privacy accountant has counted (each a (σ, q) composition)."""
        return int(sum(n for _, _, n in self.engine.accountant.history))

    def setup(self, module: torch.nn.Module, train: Chunks, extra: dict[str, Any]) -> torch.nn.Module:
        self.original = module
        return self._make_private(module, train)

    def batches(self, epoch: int) -> Iterator[tuple[str, torch.Tensor, torch.Tensor]]:
        if self.bk is not None:  # Poisson sampling as Opacus' UniformWithReplacementSampler
            n = len(self.private_chunks)
            for _ in range(self.steps_per_epoch):
                idx = (torch.rand(n) < self.sample_rate).nonzero().reshape(-1)
                yield "private", self.private_chunks.ids[idx], self.private_chunks.lengths[idx]
            return
        for ids, lengths in self.loader:
            yield "private", ids, lengths

    def dp_step(self, ids: torch.Tensor, lengths: torch.Tensor) -> float:
        self.batch_log.append("private")
        self.steps += 1
        if len(ids) == 0:
            return self._noise_only_step()
        if self.bk is not None:
            return self._bookkeeping_step(ids, lengths)
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
        return value

    def step(self, kind: str, ids: torch.Tensor, lengths: torch.Tensor) -> float:
        return self.dp_step(ids, lengths)

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
        return float(self.engine.get_epsilon(self.config.target_delta))

    def privacy(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "epsilon": self.epsilon(),
            "delta": self.config.target_delta,
            "noise_multiplier": self.noise_multiplier,
            "max_grad_norm": self.config.max_grad_norm,
            "sample_rate": self.sample_rate,
            "steps": self.steps,
            "empty_batches": self.empty_steps,
            "noise_draws": self.noise_draws,
            "accounted_steps": self.accounted_steps(),
            "accountant": self.config.accountant,
            "clipping": ("bookkeeping" if self.bk is not None else "ghost")
            if self.ghost
            else "per-sample hooks",
            "privacy_unit": "one training sequence (a chunk of one document)",
        }


class CRTStrategy(DPStrategy):
    """Paper 002 Algorithm 1: an epoch of SGD on D_pub, then an epoch of DP-SGD on D_pri."""

    mode = "crt"

    def setup(self, module: torch.nn.Module, train: Chunks, extra: dict[str, Any]) -> torch.nn.Module:
        self.original = module
        self.public: Chunks = extra["public"]
        wrapped = self._make_private(module, extra["private"])
        inner = getattr(wrapped, "_module", wrapped)
        self.public_optimizer = torch.optim.AdamW(
            inner.parameters(), lr=self.config.lr, weight_decay=self.config.weight_decay
        )
        self.gen = torch.Generator().manual_seed(self.config.seed)
        self.public_steps = 0
        return wrapped

    def batches(self, epoch: int) -> Iterator[tuple[str, torch.Tensor, torch.Tensor]]:
        order = torch.randperm(len(self.public), generator=self.gen)
        bs = self.config.batch_size
        for s in range(0, len(order), bs):
            idx = order[s : s + bs]
            yield "public", self.public.ids[idx], self.public.lengths[idx]
        yield from super().batches(epoch)

    def step(self, kind: str, ids: torch.Tensor, lengths: torch.Tensor) -> float:
        if kind == "private":
            return self.dp_step(ids, lengths)
        # a public step: ordinary SGD on the unwrapped model, Opacus hooks off, nothing accounted
        self.batch_log.append("public")
        inner = getattr(self.module, "_module", self.module)
        hooks = hasattr(
            self.module, "disable_hooks"
        )  # Opacus' wrapper; book-keeping hooks idle outside capture()
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

    def privacy(self) -> dict[str, Any]:
        out = super().privacy()
        out["public_steps"] = self.public_steps
        out["note"] = "only DP-SGD steps on D_pri are accounted (paper 002 Algorithm 1)"
        return out


class SDPStrategy(DPStrategy):
    """Selective DP-SGD (Shi et al. 2021) for the LSTM; see the module docstring."""

    mode = "sdp"

    def setup(self, module: torch.nn.Module, train: Chunks, extra: dict[str, Any]) -> torch.nn.Module:
        self.original = module
        self.sensitive: torch.Tensor = extra["sensitive"]  # (N, seq_len + 1) bool over chunk tokens
        masked = Chunks(torch.cat([train.ids, self.sensitive.long()], dim=1), train.lengths)
        self.width = train.ids.shape[1]
        return self._make_private(module, masked)

    def step(self, kind: str, ids: torch.Tensor, lengths: torch.Tensor) -> float:
        self.batch_log.append("private")
        self.steps += 1
        if len(ids) == 0:
            return self._noise_only_step()
        tokens, sens = ids[:, : self.width], ids[:, self.width :].bool()
        x, m, y = batch_tensors(tokens, lengths)
        sens_t = sens[:, 1 : y.shape[1] + 1] & (y != IGNORE)
        y_public = y.masked_fill(sens_t, IGNORE)
        y_secret = y.masked_fill(~sens_t, IGNORE)
        inner = getattr(self.module, "_module", self.module)
        params = [p for p in inner.parameters() if p.requires_grad]
        # 1) ordinary gradient of the non-sensitive loss (hooks off: no per-sample work)
        self.optimizer.zero_grad(set_to_none=True)
        self.module.disable_hooks()
        ns = sequence_losses(forward_logits(inner, x, m), y_public)
        has_ns = (y_public != IGNORE).any(1).float()
        loss_ns = (ns * has_ns).sum() / max(len(ids), 1)
        g_public = torch.autograd.grad(loss_ns, params, allow_unused=True)
        self.module.enable_hooks()
        # 2) clipped + noised per-sequence gradient of the sensitive loss
        s = sequence_losses(forward_logits(self.module, x, m), y_secret)
        has_s = (y_secret != IGNORE).any(1).float()
        (s * has_s).mean().backward()
        self.optimizer.pre_step()  # clip per sample, add noise, average -> p.grad
        for p, g in zip(params, g_public, strict=True):
            if g is not None:
                p.grad = g if p.grad is None else p.grad + g
        self.optimizer.original_optimizer.step()
        return float((loss_ns + (s * has_s).mean()).detach())

    def privacy(self) -> dict[str, Any]:
        out = super().privacy()
        out["note"] = (
            "selective DP (Shi et al. 2021): only updates from sensitive tokens are clipped, noised and accounted"
        )
        return out


def make_strategy(config: TrainConfig) -> Any:
    return {"dp": DPStrategy, "crt": CRTStrategy, "sdp": SDPStrategy, "nodp": PlainStrategy}[config.mode](
        config
    )


def crt_split_for(
    train: Any, config: TrainConfig, public: Any, private: Any
) -> tuple[Any, Any, dict[str, Any]]:
    """The (public, private) corpora for CRT: given ones, or the paper-002 split of ``train``."""
    if public is not None and private is not None:
        return public, private, {"public_sequences": len(public), "private_sequences": len(private)}
    res = crt_split(
        train, get_policy(config.policy or "balanced"), conservative=get_policy("conservative"), dedup="exact"
    )
    return res.public, res.private, dict(res.stats)


def sensitive_token_mask(corpus: Any, tokenizer: Any, config: TrainConfig) -> torch.Tensor:
    """Per chunk token (aligned with :func:`encode_chunks`), True where the token is sensitive."""
    policy = None
    if config.policy:
        policy = get_policy(config.policy)
    rows: list[list[bool]] = []
    mask_id = tokenizer.convert_tokens_to_ids("<MASK>")
    for doc in corpus:
        enc = tokenizer(doc.text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = enc["input_ids"], enc["offset_mapping"]
        if policy is not None:
            spans = [(s.start, s.end) for s in policy.detect(doc.text)]
            flags = [any(a < e and b > s for s, e in spans) for a, b in offsets]
        else:
            flags = [
                i == mask_id or doc.text[a:b].strip().isdigit()
                for i, (a, b) in zip(ids, offsets, strict=True)
            ]
        full = [False, *flags, False]  # BOS, tokens, EOS
        start = 0
        while start < len(full) - 1:
            rows.append(full[start : start + config.seq_len + 1])
            start += config.seq_len
    chunks = encode_chunks(corpus.texts(), tokenizer, config.seq_len)
    out = torch.zeros_like(chunks.ids, dtype=torch.bool)
    assert len(rows) == len(chunks), "sensitivity mask and chunks disagree"
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.bool)
    return out
