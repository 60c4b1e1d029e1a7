"""Model preparation for fine-tuning: the base model and its tokenizer, LoRA adapters (or all weights),
mixed precision, and saving the result.

- :func:`load_base` loads ``--base`` (a Hugging Face folder, a ``.gguf`` file, ``smollm2-135m``) with
  the start token lmleak scores with (:class:`BaseTokenizer`);
- :func:`prepare_model` wraps it with peft's LoRA adapters on :func:`default_targets` (or unfreezes
  every weight for ``full``, untying tied embeddings under DP: per-sample gradients need one owner
  per weight);
- :func:`resolve_precision` decides the autocast (rules in :mod:`lmleak.train.finetune`);
- :func:`save_model` writes the adapters (and with ``merge`` a merged plain folder) or the full
  model, and the ``lmleak_finetune.json`` manifest.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lmleak.errors import ConfigError
from lmleak.models.adapters import MANIFEST, base_record
from lmleak.models.loading import load_model
from lmleak.runs import atomic_write_json
from lmleak.train.config import FinetuneConfig

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
class BaseTokenizer:
    """The base model's tokenizer as :func:`encode_chunks` and the sensitivity mask use it, with the
    start token lmleak scores with (SmolLM2: ``<|endoftext|>``), so training and audit agree."""

    def __init__(self, hf_wrapped: Any) -> None:
        self.hf = hf_wrapped.hf
        self.bos_token_id = int(hf_wrapped.bos_id)
        eos = hf_wrapped.eos_id
        self.eos_token_id = int(eos) if eos is not None else self.bos_token_id
        self.pad_token_id = int(hf_wrapped.pad_id)
        self.unk_token_id = getattr(self.hf, "unk_token_id", None)

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


def untie_embeddings(module: torch.nn.Module) -> bool:
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
            info["untied_embeddings"] = untie_embeddings(module)
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


def load_base(cfg: FinetuneConfig, device: str) -> tuple[torch.nn.Module, BaseTokenizer, dict[str, str]]:
    """The base model's module (on ``device``, in training mode), its tokenizer and its record."""
    lm = load_model(cfg.base, device=device)
    if not hasattr(lm, "module") or not hasattr(lm.tokenizer, "hf"):
        raise ConfigError(
            f"--base {cfg.base!r} is not a Hugging Face causal LM (a folder with config.json, "
            "a .gguf file or smollm2-135m)",
            field="base",
        )
    base = base_record(cfg.base)
    tok = BaseTokenizer(lm.tokenizer)
    module = lm.module.to(device)
    module.train()
    return module, tok, base


def save_model(
    model: Any,
    tok: BaseTokenizer,
    out: Path,
    cfg: FinetuneConfig,
    base: dict[str, str],
    model_info: dict[str, Any],
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
