"""``load_model(spec)``: one entry point that recognises every kind of model lmleak can audit.

Accepted specs (checked in this order):

- a model object (anything with ``capabilities``) — returned as is;
- ``http://HOST:PORT/v1#MODEL`` — a model behind an OpenAI-compatible API, at the access tier the
  server grants (see :mod:`lmleak.models.http`);
- ``smollm2-135m`` — the offline SmolLM2 GGUF (see :mod:`lmleak.models.hf_causal`);
- ``fake:PATH`` — :class:`~lmleak.models.fake.FakeLM` fitted on a JSONL corpus's ``text`` fields or
  a text file's lines (for tests and demos);
- ``topk:K:SPEC`` / ``topk:K:P:SPEC`` — the black-box top-K view of SPEC (abstaining below top-1
  probability P); ``text:SPEC`` — the generation-only view;
- a folder written by lmleak's trainer (``lmleak_model.json``), a fine-tune folder written by
  ``lmleak train --base`` (``lmleak_finetune.json`` and/or ``peft`` adapters: see
  :mod:`lmleak.models.adapters`), a Hugging Face causal or masked LM folder (``config.json``), a
  ``.gguf`` file or a folder holding one.

Nothing is downloaded: a spec that is not a local path is an error, also when it looks like a
Hugging Face hub id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lmleak.errors import LmleakError, ModelError, did_you_mean
from lmleak.fingerprints import SOURCE_ATTR
from lmleak.jsonl import read_jsonl
from lmleak.models import hf_masked
from lmleak.models.adapters import is_finetune_dir, load_finetuned
from lmleak.models.blackbox import TextOnly, TopKOnly
from lmleak.models.device import place, resolve_device
from lmleak.models.fake import FakeLM
from lmleak.models.hf_causal import SMOLLM2, load_gguf, load_hf_dir, load_smollm2, smollm2_gguf
from lmleak.models.http import load_http_model
from lmleak.models.small import load_small_model

NAMES = (SMOLLM2,)
ACCEPTED = (
    "a model folder (lmleak-trained, or Hugging Face with config.json), a .gguf file, "
    f"'{SMOLLM2}', 'fake:CORPUS', 'topk:K:SPEC', 'text:SPEC', 'http://HOST:PORT/v1#MODEL'"
)


def _fake(path: str, **kw: Any) -> Any:
    p = Path(path)
    if not p.exists():
        raise ModelError(f"fake model corpus {p} does not exist")
    if p.suffix in (".jsonl", ".json"):
        texts = [
            str(row.get("text", ""))
            for row in read_jsonl(p, hint='a corpus JSONL with a "text" field per line')
        ]
    else:
        texts = [line for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    return FakeLM.from_texts(texts, name=f"fake:{p.name}")


def load_model(
    spec: Any,
    *,
    allow_pickle: bool = False,
    dtype: str | None = None,
    batch_tokens: int | None = None,
    name: str | None = None,
    device: str | None = None,
    **kw: Any,
) -> Any:
    """Load a model from a spec (see the module docstring) onto ``device`` (see :mod:`lmleak.models.device`:
    by default a GPU when torch sees one; a model object passed in is not moved).

    Example:
        >>> load_model("gpt2-xl")
        Traceback (most recent call last):
        ...
        lmleak.errors.ModelError: 'gpt2-xl' is not a local file or folder, and models are never downloaded. Give a model folder (lmleak-trained, or Hugging Face with config.json), a .gguf file, 'smollm2-135m', 'fake:CORPUS', 'topk:K:SPEC', 'text:SPEC', 'http://HOST:PORT/v1#MODEL'.
    """
    if hasattr(spec, "capabilities"):
        return spec
    if isinstance(spec, str) and spec.startswith(("http://", "https://")):
        return load_http_model(spec)

    resolve_device(device)  # a GPU asked for but absent fails before any loading
    model = place(
        _load(
            spec, allow_pickle=allow_pickle, dtype=dtype, batch_tokens=batch_tokens, name=name, device=device
        ),
        device,
    )
    _tag_source(model, spec)
    return model


def _tag_source(model: Any, spec: Any) -> None:
    """Record on ``model`` the local file or folder it was read from (``lmleak_source``), which the
    run's provenance fingerprints (:mod:`lmleak.fingerprints`); a wrapper (``topk:``, ``text:``) names
    its inner model's."""
    source = getattr(getattr(model, "inner", None), SOURCE_ATTR, None)
    if source is None and isinstance(spec, str | Path):
        text = str(spec)
        if text == SMOLLM2:
            try:
                text = str(smollm2_gguf())
            except LmleakError:
                return
        text = text.removeprefix("fake:")
        p = Path(text).expanduser()
        source = str(p.resolve()) if p.exists() else None
    if source is not None:
        try:
            setattr(model, SOURCE_ATTR, source)
        except (AttributeError, TypeError):  # a model class with fixed attributes: no provenance files
            pass


def _load(
    spec: Any,
    *,
    allow_pickle: bool,
    dtype: str | None,
    batch_tokens: int | None,
    name: str | None,
    device: str | None,
) -> Any:
    """The model ``spec`` names, not yet placed on a device (see :func:`load_model`)."""
    if isinstance(spec, Path):
        spec = str(spec)
    if not isinstance(spec, str) or not spec:
        raise ModelError(f"expected a model spec string, got {spec!r}")
    given: dict[str, Any] = {"dtype": dtype, "batch_tokens": batch_tokens, "name": name}
    opts = {k: v for k, v in given.items() if v is not None}
    if spec == SMOLLM2:
        return load_smollm2(**opts)
    if spec.startswith("fake:"):
        return _fake(spec[5:])
    if spec.startswith("topk:"):
        return _load_topk(spec, allow_pickle=allow_pickle, dtype=dtype, device=device)
    if spec.startswith("text:"):
        return TextOnly(load_model(spec[5:], allow_pickle=allow_pickle, dtype=dtype, device=device))
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return _load_gguf_file(path, opts)
    if path.is_dir():
        return _load_dir(path, allow_pickle=allow_pickle, name=name, batch_tokens=batch_tokens, opts=opts)
    if path.exists():
        raise ModelError(f"{path} is a file lmleak cannot load as a model; accepted: {ACCEPTED}")
    hint = did_you_mean(spec, NAMES)
    raise ModelError(
        f"'{spec}' is not a local file or folder, and models are never downloaded.{hint} Give {ACCEPTED}."
    )


def _load_topk(spec: str, *, allow_pickle: bool, dtype: str | None, device: str | None) -> TopKOnly:
    """``topk:K:SPEC`` or ``topk:K:MIN_PROB:SPEC``: the inner model seen through its top-k only."""
    parts = spec.split(":", 2)
    try:
        k = int(parts[1])
        inner, p = parts[2], None
    except (IndexError, ValueError):
        raise ModelError(f"cannot read {spec!r}; write topk:K:SPEC or topk:K:MIN_PROB:SPEC") from None
    head, _, rest = inner.partition(":")
    try:  # an optional minimum top-1 probability before the inner spec
        p, inner = float(head), rest
    except ValueError:
        pass
    return TopKOnly(
        load_model(inner, allow_pickle=allow_pickle, dtype=dtype, device=device), k, min_top1_prob=p
    )


def _load_gguf_file(path: Path, opts: dict[str, Any]) -> Any:
    """A ``.gguf`` file, any failure to read it turned into one :class:`ModelError` line."""
    try:
        return load_gguf(path, **opts)
    except LmleakError:
        raise
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RuntimeError) as e:
        raise ModelError(
            f"{path}: cannot load this GGUF file ({type(e).__name__}: {e}); "
            "check that it is a complete GGUF model file"
        ) from None


def _load_dir(
    path: Path, *, allow_pickle: bool, name: str | None, batch_tokens: int | None, opts: dict[str, Any]
) -> Any:
    """The model in a folder, any failure to read it (or no model there) turned into a :class:`ModelError`."""
    try:
        model = _load_folder(path, allow_pickle=allow_pickle, name=name, batch_tokens=batch_tokens, opts=opts)
    except LmleakError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ModelError(
            f"{path}: a model description file is not valid JSON/UTF-8 ({e}); "
            "re-save the model or fix config.json / lmleak_model.json"
        ) from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RuntimeError) as e:
        raise ModelError(f"{path}: cannot load the model in this folder: {type(e).__name__}: {e}") from None
    except Exception as e:
        if (
            type(e).__name__ != "SafetensorError"
        ):  # safetensors' own error type is not a subclass of the above
            raise
        raise ModelError(
            f"{path}: the weights are not a complete safetensors file ({e}); copy or save the model again"
        ) from None
    if model is not None:
        return model
    raise ModelError(
        f"{path} is a folder but not a model: no config.json, lmleak_model.json or single .gguf file"
    )


def _load_folder(
    path: Path, *, allow_pickle: bool, name: str | None, batch_tokens: int | None, opts: dict[str, Any]
) -> Any:
    """The model in a folder, or None when the folder holds no recognised model files."""
    if is_finetune_dir(path):  # written by `lmleak train --base` (adapters, full or merged fine-tune)
        return load_finetuned(
            path,
            name=name,
            load_base=lambda spec: _load(
                spec,
                allow_pickle=allow_pickle,
                dtype=opts.get("dtype"),
                batch_tokens=batch_tokens,
                name=None,
                device=None,
            ),
            load_dir=lambda d: load_hf_dir(d, allow_pickle=allow_pickle, **opts),
        )
    if (path / "lmleak_model.json").exists():
        return load_small_model(path, name=name, batch_tokens=batch_tokens or 4096)
    if (path / "config.json").exists():
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        if any("MaskedLM" in a for a in config.get("architectures") or []):
            return hf_masked.HFMaskedLM.load(path, name=name)
        return load_hf_dir(path, allow_pickle=allow_pickle, **opts)
    ggufs = sorted(path.glob("*.gguf"))
    if len(ggufs) == 1:
        return load_gguf(ggufs[0], **opts)
    return None
