"""Fine-tuning a pretrained causal LM (LoRA adapters via ``peft``, or all weights) in every training mode.

``lmleak train --base NAME_OR_DIR --lora R`` lands here. The modes are those of
:mod:`lmleak.train.trainer` with the same rules, applied to the trainable weights only:

- ``nodp`` (alias ``plain``): AdamW over shuffled mini-batches;
- ``dp``: DP-SGD (Abadi et al. 2016) — Poisson sampling at rate q = 1 / steps-per-epoch,
  per-sequence clipping to ``max_grad_norm``, Gaussian noise N(0, σ²C²), division by the expected
  batch size, Opacus' accountant (``prv`` or ``rdp``); an empty Poisson batch is a noise-only step;
- ``crt``: paper 002 Algorithm 1 — each epoch one plain epoch on D_pub, then one DP epoch on D_pri
  (the same dedup/redact/split as the small models: :func:`lmleak.train.dp.crt_split_for`); only
  the private steps are accounted;
- ``sdp``: selective DP (Shi et al. 2021) — the ordinary gradient of the loss on non-sensitive
  target tokens plus the clipped, noised per-sequence gradient of the loss on sensitive ones.

Per-sample gradients are taken of the *trainable* weights only (the LoRA matrices A and B, which
peft builds as ``nn.Linear`` layers): by the project's book-keeping clipping
(:mod:`lmleak.train.bk`, one backward pass, a per-sample (in × r) product per adapter) when every
trainable weight belongs to a layer it handles, otherwise (``--full`` on a model with RMSNorm, tied
embeddings) by Opacus' ``GradSampleModule`` hooks. The frozen pretrained weights are public: the
DP guarantee covers the fine-tuning data, on the assumption that the base never saw it.

Device and precision: the device comes from ``--device`` / :mod:`lmleak.models.device` (a GPU when
torch sees one). ``precision="auto"`` autocasts the forward pass to bfloat16 on a GPU that supports
it and stays in float32 otherwise — on the CPU always (CPU bf16 autocast is slower than fp32 on the
machines lmleak targets and changes results), and on a GPU without bf16 (fp16 would need loss
scaling, which would have to be undone before per-sample clipping). Weights, optimiser state,
clipping and noise stay in float32. ``train.json`` records the device, the precision and why.

Checkpoints: after every epoch the trainable weights, optimiser, accountant history, counters and
RNG states go to ``OUT/checkpoint/state.pt``; rerunning the same command resumes after the last
finished epoch with the same batches and noise as an uninterrupted run (a different config is
refused). The checkpoint is removed once the model is saved.

Output: the adapters (``adapter_config.json`` + ``adapter_model.safetensors``) or, with ``full``,
a plain Hugging Face folder; ``lmleak_finetune.json`` (the manifest: base, kind, LoRA settings,
start token); ``train.json``, ``privacy.json``, ``holdout.json``; with ``merge`` also ``merged/``,
a plain Hugging Face folder of base + adapters. :func:`lmleak.models.loading.load_model` loads all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lmleak.data.corpus import Corpus
from lmleak.data.holdout import Holdout, write_holdout
from lmleak.errors import ConfigError, check_number
from lmleak.models.adapters import MANIFEST, base_record
from lmleak.models.device import resolve_device
from lmleak.models.loading import load_model
from lmleak.progress import track
from lmleak.runs import atomic_write_json
from lmleak.train.bk import BookKeeping, UnsupportedModel
from lmleak.train.config import check_training_numbers
from lmleak.train.dp import crt_split_for, sensitive_token_mask
from lmleak.train.plain import IGNORE, Chunks, batch_tensors, encode_chunks, sequence_losses
from lmleak.train.trainer import TrainResult, policy_gamma, public_share, split_users

MODES = ("nodp", "dp", "crt", "sdp")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
CLIPPING = ("auto", "bookkeeping", "hooks")
# Default LoRA targets per architecture (model_type in config.json): the attention query and value
# projections (Hu et al. 2021's choice), GPT-2's fused c_attn.
DEFAULT_TARGETS: dict[str, tuple[str, ...]] = {
    "llama": ("q_proj", "v_proj"),
    "mistral": ("q_proj", "v_proj"),
    "qwen2": ("q_proj", "v_proj"),
    "qwen3": ("q_proj", "v_proj"),
    "qwen": ("q_proj", "v_proj"),
    "gemma": ("q_proj", "v_proj"),
    "phi3": ("qkv_proj",),
    "gpt2": ("c_attn",),
    "gpt_neox": ("query_key_value",),
    "gptj": ("q_proj", "v_proj"),
}


@dataclass(frozen=True)
class FinetuneConfig:
    """How to fine-tune a pretrained model (see the module docstring).

    ``lora`` is the adapter rank (ignored with ``full``); ``lora_alpha`` defaults to ``2 * lora``;
    ``lora_targets`` None picks :data:`DEFAULT_TARGETS` by architecture, else every ``nn.Linear``
    inside an attention block. ``max_steps`` caps the optimiser steps of each kind over the whole run
    (plain/public steps and private DP steps separately, so a CRT smoke run takes both; demos and
    smoke tests); the accountant counts the steps actually taken.
    """

    base: str
    mode: str = "nodp"
    lora: int = 8
    lora_alpha: float | None = None
    lora_dropout: float = 0.0
    lora_targets: tuple[str, ...] | None = None
    full: bool = False
    merge: bool = False
    epochs: int = 1
    batch_size: int = 8
    lr: float = 1e-3
    weight_decay: float = 0.0
    seq_len: int = 128
    seed: int = 0
    holdout_users: float = 0.1
    max_steps: int | None = None
    max_grad_norm: float = 1.0
    noise_multiplier: float | None = None
    target_epsilon: float | None = None
    target_delta: float = 1e-5
    accountant: str = "prv"
    dp_clipping: str = "auto"
    policy: str | None = None
    secrets: str | None = None
    device: str | None = None
    precision: str = "auto"

    def __post_init__(self) -> None:
        check_training_numbers(self)
        if self.lora_alpha is not None:
            check_number(self.lora_alpha, "lora_alpha", gt=0, hint="e.g. --lora-alpha 16")
        check_number(self.lora_dropout, "lora_dropout", ge=0, lt=1)
        if self.mode == "plain":
            object.__setattr__(self, "mode", "nodp")
        if self.mode not in MODES:
            raise ConfigError(
                f"unknown mode {self.mode!r}", field="mode", hint="use plain (nodp), dp, crt or sdp"
            )
        if not self.full and self.lora < 1:
            raise ConfigError(
                f"LoRA rank {self.lora} must be >= 1", field="lora", hint="e.g. --lora 8, or --full"
            )
        if self.epochs < 1 or self.batch_size < 1 or self.seq_len < 2:
            raise ConfigError("epochs and batch_size must be >= 1 and seq_len >= 2", field="epochs")
        if not 0.0 <= self.holdout_users < 1.0:
            raise ConfigError(
                "holdout_users must be in [0, 1)", field="holdout_users", hint="e.g. --holdout-users 0.1"
            )
        if self.mode != "nodp" and (self.noise_multiplier is None) == (self.target_epsilon is None):
            raise ConfigError(
                f"mode {self.mode!r} needs exactly one of noise_multiplier and target_epsilon",
                field="noise_multiplier",
                hint="pass --noise-multiplier 1.0 or --target-epsilon 8",
            )
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"unknown precision {self.precision!r}",
                field="precision",
                hint="use auto, fp32, bf16 or fp16",
            )
        if self.dp_clipping not in CLIPPING:
            raise ConfigError(
                f"unknown dp_clipping {self.dp_clipping!r} for fine-tuning",
                field="dp_clipping",
                hint="use auto, bookkeeping or hooks (Opacus)",
            )
        if self.accountant not in ("prv", "rdp"):
            raise ConfigError(
                f"unknown accountant {self.accountant!r}", field="accountant", hint="use prv or rdp"
            )
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError("max_steps must be >= 1", field="max_steps")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["lora_targets"] = list(self.lora_targets) if self.lora_targets else None
        return d


# ---------------------------------------------------------------------------------------- precision
@dataclass(frozen=True)
class Precision:
    """The autocast decision for a device: ``dtype`` None means plain float32."""

    name: str
    dtype: torch.dtype | None
    reason: str

    def autocast(self, device: str) -> contextlib.AbstractContextManager[Any]:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=torch.device(device).type, dtype=self.dtype)


def resolve_precision(requested: str, device: str) -> Precision:
    """The mixed-precision mode for ``device`` (see the module docstring for the rules).

    Example:
        >>> resolve_precision("auto", "cpu").name
        'fp32'
        >>> resolve_precision("fp16", "cpu").reason
        'fp16 asked for on the CPU: float32 instead (no fp16 autocast with DP clipping on the CPU)'
    """
    dev = torch.device(device).type
    if requested == "fp32":
        return Precision("fp32", None, "float32 asked for")
    if dev == "cpu":
        if requested == "bf16":
            return Precision("bf16", torch.bfloat16, "bf16 autocast asked for on the CPU")
        if requested == "fp16":
            return Precision(
                "fp32",
                None,
                "fp16 asked for on the CPU: float32 instead (no fp16 autocast with DP clipping on the CPU)",
            )
        return Precision("fp32", None, "CPU: float32 (bf16 autocast is slower here and changes results)")
    bf16_ok = dev == "cuda" and torch.cuda.is_bf16_supported()
    if requested in ("auto", "bf16") and bf16_ok:
        return Precision(
            "bf16", torch.bfloat16, f"{dev}: bf16 autocast (weights, optimiser and clipping in float32)"
        )
    if requested == "fp16":
        return Precision(
            "fp32",
            None,
            f"{dev}: fp16 needs loss scaling, which per-sample clipping cannot see: float32 instead",
        )
    return Precision("fp32", None, f"{dev}: no bf16 support: float32")


# ------------------------------------------------------------------------------------------ models
class _Tok:
    """The base model's tokenizer as :func:`encode_chunks` and the sensitivity mask use it, with the
    start token lmleak scores with (SmolLM2: ``<|endoftext|>``), so training and audit agree."""

    def __init__(self, hf_wrapped: Any) -> None:
        self.hf = hf_wrapped.hf
        self.bos_token_id = int(hf_wrapped.bos_id)
        eos = hf_wrapped.eos_id
        self.eos_token_id = int(eos) if eos is not None else self.bos_token_id
        self.pad_token_id = int(hf_wrapped.pad_id)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return list(self.hf.encode(text, add_special_tokens=add_special_tokens))

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self.hf(*args, **kw)

    def convert_tokens_to_ids(self, token: str) -> Any:
        return self.hf.convert_tokens_to_ids(token)

    def __len__(self) -> int:
        return len(self.hf)


def default_targets(module: torch.nn.Module) -> list[str]:
    """LoRA target module names for ``module``: by architecture, else every Linear in attention.

    Example:
        >>> from transformers import LlamaConfig, LlamaForCausalLM
        >>> m = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
        ...                                  num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2))
        >>> default_targets(m)
        ['q_proj', 'v_proj']
    """
    kind = getattr(getattr(module, "config", None), "model_type", None)
    if kind in DEFAULT_TARGETS:
        return list(DEFAULT_TARGETS[kind])
    conv1d: tuple[type, ...] = ()
    with contextlib.suppress(ImportError):
        from transformers.pytorch_utils import Conv1D

        conv1d = (Conv1D,)
    names = sorted(
        {
            name.rsplit(".", 1)[-1]
            for name, sub in module.named_modules()
            if isinstance(sub, (torch.nn.Linear, *conv1d))
            and any(k in name.lower() for k in ("attn", "attention"))
        }
    )
    if not names:
        raise ConfigError(
            f"no Linear layer inside an attention block of this {kind or type(module).__name__} model",
            field="lora_targets",
            hint="name them with --lora-targets q_proj,v_proj",
        )
    return names


def _untie(module: torch.nn.Module) -> bool:
    """Give the output layer its own copy of tied input embeddings (per-sample gradients need one
    owner per weight); returns whether they were tied."""
    out, inp = module.get_output_embeddings(), module.get_input_embeddings()
    if out is None or out.weight is not inp.weight:
        return False
    out.weight = torch.nn.Parameter(inp.weight.detach().clone())
    if hasattr(module, "config"):
        module.config.tie_word_embeddings = False
    return True


def prepare_model(module: torch.nn.Module, config: FinetuneConfig) -> tuple[torch.nn.Module, dict[str, Any]]:
    """Wrap ``module`` with LoRA adapters (or unfreeze it for ``full``); returns (model, info)."""
    info: dict[str, Any] = {"kind": "full" if config.full else "lora"}
    if config.full:
        if config.mode != "nodp":
            info["untied_embeddings"] = _untie(module)
        for p in module.parameters():
            p.requires_grad_(True)
        model = module
    else:
        from peft import LoraConfig, get_peft_model

        targets = list(config.lora_targets) if config.lora_targets else default_targets(module)
        alpha = config.lora_alpha if config.lora_alpha is not None else 2.0 * config.lora
        lcfg = LoraConfig(
            r=config.lora,
            lora_alpha=alpha,
            lora_dropout=config.lora_dropout,
            target_modules=targets,
            bias="none",
            task_type="CAUSAL_LM",
        )
        try:
            model = get_peft_model(module, lcfg)
        except ValueError as e:  # peft: "Target modules {...} not found in the base model"
            raise ConfigError(
                f"LoRA targets {','.join(targets)}: {e}",
                field="lora_targets",
                hint="name Linear layers of this model, e.g. --lora-targets q_proj,v_proj",
            ) from None
        info.update(rank=config.lora, alpha=alpha, dropout=config.lora_dropout, targets=targets)
    trainable = [p for p in model.parameters() if p.requires_grad]
    info["trainable_parameters"] = int(sum(p.numel() for p in trainable))
    info["total_parameters"] = int(sum(p.numel() for p in model.parameters()))
    return model, info


def logits_of(model: torch.nn.Module, x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    out = model(input_ids=x, attention_mask=m)
    return out.logits if hasattr(out, "logits") else out[0]


# ----------------------------------------------------------------------------- per-sample clipping
class HooksClipper:
    """Per-sample gradients by Opacus' ``GradSampleModule`` hooks, clipped and summed by hand —
    the fallback where book-keeping does not apply (same interface as
    :class:`lmleak.train.bk.BookKeeping`: ``capture()``, ``clipped_sum(C)``, ``params``)."""

    def __init__(self, model: torch.nn.Module) -> None:
        from opacus import GradSampleModule

        self.gsm = GradSampleModule(model, batch_first=True, loss_reduction="sum", strict=False)
        self.gsm.disable_hooks()
        self.forward_module: torch.nn.Module = self.gsm
        self.params = [p for p in model.parameters() if p.requires_grad]

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        for p in self.params:
            p.grad = None
            p.grad_sample = None
        self.gsm.enable_hooks()
        try:
            yield
        finally:
            self.gsm.disable_hooks()

    def clipped_sum(self, max_grad_norm: float) -> torch.Tensor:
        samples = [p.grad_sample for p in self.params]
        b = next(s.shape[0] for s in samples if s is not None)
        sq = sum(
            (s.reshape(b, -1).float().pow(2).sum(1) for s in samples if s is not None),
            torch.zeros(b, device=self.params[0].device),
        )
        norms = sq.sqrt()
        c = (max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
        for p, s in zip(self.params, samples, strict=True):
            p.grad = None if s is None else torch.einsum("b,b...->...", c, s.float()).to(p.dtype)
            p.grad_sample = None
        return norms


def make_clipper(model: torch.nn.Module, how: str) -> tuple[Any, str]:
    """(clipper, name): book-keeping when it applies (``auto``) or is asked for, else Opacus hooks."""
    if how in ("auto", "bookkeeping"):
        try:
            bk = BookKeeping(model)
            bk.forward_module = model  # type: ignore[attr-defined]
            return bk, "bookkeeping"
        except UnsupportedModel as e:
            if how == "bookkeeping":
                raise ConfigError(
                    f"book-keeping clipping does not apply to this model: {e}",
                    field="dp_clipping",
                    hint="use --dp-clipping hooks (Opacus) or auto",
                ) from None
    return HooksClipper(model), "opacus hooks"


# ----------------------------------------------------------------------------------------- trainer
@dataclass
class FinetuneResult(TrainResult):
    """A :class:`~lmleak.train.trainer.TrainResult` plus the merged folder (``--merge``), if any."""

    merged_dir: Path | None = None


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


def save_plain(module: torch.nn.Module, out: Path) -> None:
    """``save_pretrained`` as safetensors. A model loaded from a de-quantised GGUF copy (SmolLM2's cache
    keeps ``quantization_config: gguf`` in its config) is refused by transformers although its weights
    are dense: its weights then go into a plain model of the same config without that entry."""
    try:
        module.save_pretrained(out, safe_serialization=True)
        return
    except ValueError as e:
        if "not serializable" not in str(e):
            raise
    from transformers import AutoModelForCausalLM

    cfg = module.config.__class__.from_dict(
        {k: v for k, v in module.config.to_dict().items() if k != "quantization_config"}
    )
    plain = AutoModelForCausalLM.from_config(cfg)
    plain.load_state_dict(module.state_dict())
    plain.save_pretrained(out, safe_serialization=True)


def _fingerprint(config: FinetuneConfig, n_train: int, n_val: int) -> str:
    keep = {k: v for k, v in config.to_dict().items() if k not in ("device", "merge")}
    return hashlib.sha256(
        json.dumps([keep, n_train, n_val], sort_keys=True, default=str).encode()
    ).hexdigest()[:16]


def _save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def finetune(
    corpus: Corpus,
    out_dir: str | Path,
    config: FinetuneConfig,
    *,
    val_corpus: Corpus | None = None,
    public: Corpus | None = None,
    private: Corpus | None = None,
    progress: bool = True,
    on_epoch_end: Callable[[int, torch.nn.Module], None] | None = None,
) -> FinetuneResult:
    """Fine-tune ``config.base`` on ``corpus`` and save it to ``out_dir`` (see the module docstring).

    Args:
        corpus: the training data; ``config.holdout_users`` of its users are held out (validation,
            and the non-members of membership inference) unless ``val_corpus`` is given.
        public, private: ``crt`` with a pre-computed split (otherwise paper 002's split of ``corpus``).
        on_epoch_end: called as ``(epoch, model)`` after each epoch's checkpoint is written.
    """
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    if not progress:  # transformers' loading/saving bars go to stderr, around --json output
        hf_logging.disable_progress_bar()
    try:
        return _finetune(
            corpus,
            out_dir,
            config,
            val_corpus=val_corpus,
            public=public,
            private=private,
            progress=progress,
            on_epoch_end=on_epoch_end,
        )
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _finetune(
    corpus: Corpus,
    out_dir: str | Path,
    config: FinetuneConfig,
    *,
    val_corpus: Corpus | None,
    public: Corpus | None,
    private: Corpus | None,
    progress: bool,
    on_epoch_end: Callable[[int, torch.nn.Module], None] | None,
) -> FinetuneResult:
    """:func:`finetune` with transformers' progress bars already set: load, encode, train, save."""
    cfg = config
    device = resolve_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    out = Path(out_dir)
    torch.manual_seed(cfg.seed)
    train_corpus, val = (
        (corpus, val_corpus) if val_corpus is not None else split_users(corpus, cfg.holdout_users, cfg.seed)
    )
    module, tok, base = _load_base(cfg, device)
    data = _encode_data(cfg, tok, train_corpus, val, public, private)

    model, model_info = prepare_model(module, cfg)
    model.to(device)
    ft = Finetuner(model, cfg, device, precision)
    if cfg.mode != "nodp":
        ft.set_private_data(len(data.train))
    before = evaluate_chunks(model, data.val, device, precision) if data.val is not None else None

    ckpt = out / "checkpoint" / "state.pt"
    fingerprint = _fingerprint(cfg, len(data.train), 0 if data.val is None else len(data.val))
    history, resumed_from = _resume(ft, ckpt, fingerprint)
    t_start = time.perf_counter()
    trained_tokens = _run_epochs(
        ft,
        data,
        history,
        first_epoch=1 if resumed_from is None else resumed_from + 1,
        ckpt=ckpt,
        fingerprint=fingerprint,
        label=f"{cfg.mode}, {model_info['kind']}",
        progress=progress,
        on_epoch_end=on_epoch_end,
    )

    final = _final_metrics(history, before, time.perf_counter() - t_start, trained_tokens)
    privacy = _privacy_record(ft, cfg, base, train_corpus, data.split_stats)
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    merged_dir = _save_model(model, tok, out, cfg, base, model_info)
    info = _train_info(ft, base, model_info, history, final, resumed_from, train_corpus, val, data)
    _write_records(out, ckpt, info, privacy, cfg, corpus.source)
    return FinetuneResult(out, history, final, privacy, info["train_users"], info["val_users"], merged_dir)


def _train_info(
    ft: Finetuner,
    base: dict[str, str],
    model_info: dict[str, Any],
    history: list[dict[str, Any]],
    final: dict[str, Any],
    resumed_from: int | None,
    train_corpus: Corpus,
    val: Corpus | None,
    data: _Data,
) -> dict[str, Any]:
    """``train.json``: the config, model, device and precision, history, and who was trained on."""
    return {
        "config": ft.config.to_dict(),
        "kind": "finetune",
        "base": base["spec"],
        "model": model_info,
        "device": ft.device,
        "precision": ft.precision.name,
        "precision_reason": ft.precision.reason,
        "history": history,
        "final": final,
        "resumed_after_epoch": resumed_from,
        "train_users": train_corpus.users,
        "val_users": val.users if val is not None else [],
        "num_train_documents": len(train_corpus),
        "num_train_sequences": len(data.train),
        "split_stats": data.split_stats,
    }


def _write_records(
    out: Path,
    ckpt: Path,
    info: dict[str, Any],
    privacy: dict[str, Any],
    cfg: FinetuneConfig,
    source: str | None,
) -> None:
    """Write ``train.json``, ``holdout.json`` and ``privacy.json``, then drop the finished run's checkpoint."""
    atomic_write_json(out / "train.json", info)
    write_holdout(out, Holdout(tuple(info["val_users"]), cfg.holdout_users, cfg.seed, source))
    atomic_write_json(out / "privacy.json", privacy)
    ckpt.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        ckpt.parent.rmdir()


def _load_base(cfg: FinetuneConfig, device: str) -> tuple[torch.nn.Module, _Tok, dict[str, str]]:
    """The base model's module (on ``device``, in training mode), its tokenizer and its record."""
    lm = load_model(cfg.base, device=device)
    if not hasattr(lm, "module") or not hasattr(lm.tokenizer, "hf"):
        raise ConfigError(
            f"--base {cfg.base!r} is not a Hugging Face causal LM (a folder with config.json, "
            "a .gguf file or smollm2-135m)",
            field="base",
        )
    base = base_record(cfg.base)
    tok = _Tok(lm.tokenizer)
    module = lm.module.to(device)
    module.train()
    return module, tok, base


@dataclass
class _Data:
    """The encoded sequences of one run: private (or all) training, CRT public, validation."""

    mode: str
    batch_size: int
    train: Chunks
    public: Chunks | None = None
    val: Chunks | None = None
    sensitive: Any = None  # sdp: the per-token mask of sensitive positions
    split_stats: dict[str, Any] | None = None  # crt: paper 002's split statistics


def _encode_data(
    cfg: FinetuneConfig,
    tok: _Tok,
    train_corpus: Corpus,
    val: Corpus | None,
    public: Corpus | None,
    private: Corpus | None,
) -> _Data:
    """Split (crt), mask (sdp) and encode the training and validation text into sequences."""
    if cfg.mode == "crt":
        pub, pri, stats = crt_split_for(train_corpus, cfg, public, private)  # type: ignore[arg-type]
        stats["public_words"] = sum(len(t.split()) for t in pub.texts())
        stats["private_words"] = sum(len(t.split()) for t in pri.texts())
        public_chunks = encode_chunks(pub.texts(), tok, cfg.seq_len)
        data = _Data(cfg.mode, cfg.batch_size, encode_chunks(pri.texts(), tok, cfg.seq_len), public_chunks)
        data.split_stats = stats
    else:
        data = _Data(cfg.mode, cfg.batch_size, encode_chunks(train_corpus.texts(), tok, cfg.seq_len))
    if cfg.mode == "sdp":
        data.sensitive = sensitive_token_mask(train_corpus, tok, cfg)  # type: ignore[arg-type]
    data.val = encode_chunks(val.texts(), tok, cfg.seq_len) if val is not None and len(val) else None
    return data


def _resume(ft: Finetuner, ckpt: Path, fingerprint: str) -> tuple[list[dict[str, Any]], int | None]:
    """(history so far, last epoch done): restored from ``ckpt`` when this run left one, else ([], None)."""
    if not ckpt.exists():
        return [], None
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    if state.get("fingerprint") != fingerprint:
        raise ConfigError(
            f"{ckpt} belongs to a different run (config or data changed)",
            field="out",
            hint="rerun the original command to resume it, or use a new --out / delete the checkpoint folder",
        )
    done, history = ft.restore(state)
    return history, done


def _run_epochs(
    ft: Finetuner,
    data: _Data,
    history: list[dict[str, Any]],
    *,
    first_epoch: int,
    ckpt: Path,
    fingerprint: str,
    label: str,
    progress: bool,
    on_epoch_end: Callable[[int, torch.nn.Module], None] | None,
) -> int:
    """Train epochs ``first_epoch..epochs``, appending to ``history`` and checkpointing each; the tokens trained."""
    cfg, model = ft.config, ft.model
    trained_tokens = 0
    taken = {"plain": ft.public_steps, "private": ft.steps}
    kinds = [
        k for k, used in (("plain", cfg.mode in ("nodp", "crt")), ("private", cfg.mode != "nodp")) if used
    ]
    for epoch in range(first_epoch, cfg.epochs + 1):
        if cfg.max_steps is not None and all(taken[k] >= cfg.max_steps for k in kinds):
            break  # every step allowed is taken: a further epoch would only re-evaluate (minutes on a CPU)
        model.train()
        batches = _epoch_batches(ft, data)
        # tracked as the steps run (tracking the list as it was built logged "done in 0s" up front)
        steps: Iterable[tuple[str, tuple[torch.Tensor, ...]]] = (
            track(batches, description=f"epoch {epoch}/{cfg.epochs} ({label})") if progress else batches
        )
        record = _train_epoch(ft, steps, taken, epoch)
        trained_tokens += record["tokens"]
        if data.val is not None:
            val = evaluate_chunks(model, data.val, ft.device, ft.precision)
            record.update({f"val_{k}": v for k, v in val.items()})
        history.append(record)
        _save_checkpoint(ckpt, ft.state(epoch, history, fingerprint))
        if on_epoch_end is not None:
            on_epoch_end(epoch, model)
    return trained_tokens


def _epoch_batches(ft: Finetuner, data: _Data) -> list[tuple[str, tuple[torch.Tensor, ...]]]:
    """One epoch's batches, in order: shuffled plain (nodp, or crt's public) then Poisson private ones."""
    batches: list[tuple[str, tuple[torch.Tensor, ...]]] = []
    if data.mode in ("nodp", "crt"):
        chunks = data.train if data.mode == "nodp" else data.public
        assert chunks is not None  # crt always encodes its public part
        order = torch.randperm(len(chunks))
        for s in range(0, len(order), data.batch_size):
            idx = order[s : s + data.batch_size]
            batches.append(("plain", (chunks.ids[idx], chunks.lengths[idx])))
    if data.mode != "nodp":
        kind = "sdp" if data.mode == "sdp" else "dp"
        batches.extend((kind, b) for b in ft.poisson_batches(data.train, data.sensitive))
    return batches


def _train_epoch(
    ft: Finetuner, steps: Iterable[tuple[str, tuple[torch.Tensor, ...]]], taken: dict[str, int], epoch: int
) -> dict[str, Any]:
    """Take the epoch's steps (at most ``max_steps`` of each kind in all) and return its history record."""
    max_steps = ft.config.max_steps
    losses, t0, tokens = [], time.perf_counter(), 0
    for kind, batch in steps:
        which = "plain" if kind == "plain" else "private"
        if max_steps is not None and taken[which] >= max_steps:
            continue
        taken[which] += 1
        if kind == "plain":
            if len(batch[0]) == 0:
                continue
            losses.append(ft.plain_step(*batch))
            ft.public_steps += 1
        elif kind == "dp":
            losses.append(ft.dp_step(*batch))
        else:
            losses.append(ft.sdp_step(*batch))
        tokens += int((batch[1] - 1).clamp(min=0).sum())
    dt = time.perf_counter() - t0
    finite = [v for v in losses if not math.isnan(v)]
    return {
        "epoch": epoch,
        "train_loss": float(np.mean(finite)) if finite else None,
        "tokens": tokens,
        "tokens_per_s": tokens / dt if dt > 0 else None,
        "seconds": dt,
    }


def _final_metrics(
    history: list[dict[str, Any]], before: dict[str, Any] | None, wall_seconds: float, trained_tokens: int
) -> dict[str, Any]:
    """The last epoch's record, plus perplexity before training, wall time and overall throughput."""
    final = dict(history[-1]) if history else {}
    if before is not None:
        final["val_perplexity_before"] = before["perplexity"]
    final["wall_seconds"] = wall_seconds
    # over every epoch's own time (an epoch trained before a resumption included)
    epoch_seconds = sum(h.get("seconds") or 0.0 for h in history)
    final["tokens_per_s"] = (
        sum(h.get("tokens") or 0 for h in history) / epoch_seconds if epoch_seconds > 0 else None
    )
    final["tokens_this_run"] = trained_tokens
    return final


def _privacy_record(
    ft: Finetuner,
    cfg: FinetuneConfig,
    base: dict[str, str],
    train_corpus: Corpus,
    split_stats: dict[str, Any] | None,
) -> dict[str, Any]:
    """``privacy.json``: the accountant's epsilon, the tokenizer and base, gamma and the CRT split."""
    privacy = ft.privacy()
    privacy["tokenizer_source"] = f"pretrained:{base['name']}"
    privacy["base"] = base["spec"]
    if cfg.mode in ("crt", "sdp"):
        privacy.update(policy_gamma(cfg, train_corpus))  # type: ignore[arg-type]
    if split_stats:
        privacy["split"] = public_share(split_stats)
    return privacy


def _save_model(
    model: Any, tok: _Tok, out: Path, cfg: FinetuneConfig, base: dict[str, str], model_info: dict[str, Any]
) -> Path | None:
    """Write the weights (full, or adapters and with ``merge`` a merged copy) and the manifest."""
    manifest = {
        "format": 1,
        "kind": model_info["kind"],
        "base": base["spec"],
        "base_name": base["name"],
        "bos_id": tok.bos_token_id,
        "mode": cfg.mode,
        "model": model_info,
        "merged_dir": None,
    }
    merged_dir = None
    if cfg.full:
        save_plain(model, out)
        tok.hf.save_pretrained(out)
    else:
        model.save_pretrained(out)
        if cfg.merge:
            merged_dir = out / "merged"
            merged = model.merge_and_unload()
            save_plain(merged, merged_dir)
            tok.hf.save_pretrained(merged_dir)
            atomic_write_json(merged_dir / MANIFEST, {**manifest, "kind": "merged", "merged_dir": None})
            manifest["merged_dir"] = "merged"
    atomic_write_json(out / MANIFEST, manifest)
    return merged_dir
