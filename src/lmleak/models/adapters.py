"""Fine-tuned models written by ``lmleak train --base``: LoRA adapter folders, full fine-tunes, merged folders.

A fine-tune folder holds ``lmleak_finetune.json`` (the manifest) beside either ``peft`` adapters
(``adapter_config.json`` + ``adapter_model.safetensors``; ``kind: lora``) or a plain Hugging Face
model (``kind: full`` or ``merged``). The manifest records the base model (``base``: the name
``smollm2-135m`` or the base folder's absolute path) and the start token the model was trained
after (``bos_id``), which loading restores so that scoring sees text exactly as training did.

Loading an adapter folder loads the base, applies the adapters and merges them into the weights
(W + (α/r)·B·A, peft's ``merge_and_unload``): the result scores like the unmerged model up to
float rounding and runs at the base's speed. A folder with ``adapter_config.json`` but no manifest
(a foreign ``peft`` adapter) is accepted when its ``base_model_name_or_path`` is a local folder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmleak.errors import ModelError
from lmleak.models.hf_causal import SMOLLM2

MANIFEST = "lmleak_finetune.json"
BASE = "base"  # the public-model spec meaning "the audited model's recorded base"


def base_record(spec: str) -> dict[str, str]:
    """How a base model is recorded: ``spec`` (a built-in name, or an absolute folder/file path) and ``name``.

    Example:
        >>> base_record("smollm2-135m")
        {'spec': 'smollm2-135m', 'name': 'smollm2-135m'}
    """
    if spec == SMOLLM2:
        return {"spec": spec, "name": spec}
    p = Path(spec).expanduser()
    if p.exists():
        return {"spec": str(p.resolve()), "name": p.stem if p.is_file() else p.name}
    return {"spec": spec, "name": spec}


def read_manifest(model_dir: str | Path) -> dict[str, Any] | None:
    """The manifest of a fine-tune folder, or None when ``model_dir`` is not one."""
    p = Path(model_dir) / MANIFEST
    if not p.is_file():
        return None
    try:
        return dict(json.loads(p.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ModelError(
            f"{p}: not valid JSON ({e}); re-run `lmleak train --base ...` or restore the file"
        ) from None


def recorded_base(model_dir: str | Path | None) -> str:
    """The base model recorded for a fine-tuned model folder (for ``--public-model base``)."""
    if model_dir is None or not Path(model_dir).is_dir():
        raise ModelError(
            "public model 'base' needs the audited model to be a fine-tune folder written by "
            "`lmleak train --base` (its lmleak_finetune.json records the base); got "
            f"{model_dir if model_dir is not None else 'a model object'}"
        )
    man = read_manifest(model_dir)
    if man is not None and man.get("base"):
        return str(man["base"])
    cfg = Path(model_dir) / "adapter_config.json"
    if cfg.is_file():
        base = json.loads(cfg.read_text(encoding="utf-8")).get("base_model_name_or_path")
        if base and Path(base).exists():
            return str(base)
    raise ModelError(
        f"{model_dir} records no base model (no {MANIFEST}); public model 'base' applies to "
        "models fine-tuned with `lmleak train --base`; name the public model's folder instead"
    )


def is_finetune_dir(path: Path) -> bool:
    return (path / MANIFEST).is_file() or (path / "adapter_config.json").is_file()


def load_finetuned(
    path: Path, *, load_base: Callable[[str], Any], load_dir: Callable[[Path], Any], name: str | None = None
) -> Any:
    """A fine-tune folder as a scoring model (see the module docstring).

    ``load_base(spec)`` loads the recorded base; ``load_dir(path)`` a plain Hugging Face folder.
    """
    man = read_manifest(path) or {}
    kind = man.get("kind", "lora")
    if kind in ("full", "merged"):
        lm = load_dir(path)
    else:
        if not (path / "adapter_config.json").is_file():
            raise ModelError(
                f"{path}: the manifest says LoRA adapters but adapter_config.json is missing; "
                "re-run the fine-tune or restore the file"
            )
        base = man.get("base") or recorded_base(path)
        if base != "smollm2-135m" and not Path(base).exists():
            raise ModelError(
                f"{path}: its base model {base} (recorded in {MANIFEST}) does not exist here; "
                f"put the base back at that path or edit 'base' in {MANIFEST}"
            )
        lm = load_base(str(base))
        from peft import PeftModel

        peft_model = PeftModel.from_pretrained(lm.module, path, is_trainable=False)
        lm.module = peft_model.merge_and_unload().eval()
    lm.name = name or path.name
    if man.get("bos_id") is not None and hasattr(lm.tokenizer, "bos_id"):
        lm.tokenizer.bos_id = int(man["bos_id"])
    lm.base = man.get("base")
    return lm
