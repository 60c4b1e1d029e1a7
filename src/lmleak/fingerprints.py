"""Provenance: which model files and which corpus file a run measured, as fingerprints.

Every ``summary.json`` of a stage that has a model or a corpus records ``provenance`` (written by
:func:`lmleak.runs.write_summary` from what the stage passes it, through :func:`run_provenance`)::

    "provenance": {
      "lmleak_version": "0.2.0",
      "model": {"spec": "/models/smol", "backend": "TorchCausalLM", "device": "cpu", "dtype": "float32",
                "path": "/models/smol", "hash": "fast", "fingerprint": "3f9c…", "files": [...]},
      "corpus": {"path": "/data/mail.jsonl", "size": 18734, "sha256": "a41b…"}
    }

The model's **fast fingerprint** (the default) reads at most 2 MiB per file, whatever the model's
size: for each file of the model (:func:`model_files`) its size, the SHA-256 of its first and last
MiB (``head_tail_sha256``: the bytes ``[0, 1 MiB)`` and ``[max(1 MiB, size - 1 MiB), size)``, so a
file of at most 2 MiB is hashed whole and equals its SHA-256) and, for a ``.safetensors`` file, the
SHA-256 of its JSON header (the names, dtypes, shapes and offsets of every tensor). ``fingerprint``
is the SHA-256 of those records. It changes when a file is added, removed, resized, or changed in
its first or last MiB or its tensor layout; a change in the middle of a large weight file that
keeps its size is not seen. The **full** fingerprint (``lmleak --full-hash``, or
:func:`use_full_hash`) adds each file's whole SHA-256 (``sha256``) and uses it instead.

A model behind an HTTP API has no files here: its record comes from the model object's own
``provenance()`` (server, model id, a hash of its answers to a fixed probe; see
:mod:`lmleak.models.http`). The corpus is always hashed whole: a file's ``sha256`` with its
``size``, a folder's manifest of every file's relative path, size and SHA-256
with the manifest's digest (``hash: "manifest"``; issue 33: a folder was "not hashed" before, and
an edited document passed the gate).

Results are remembered per (path, size, modification time) within a process, so a run that writes
several summaries hashes each file once.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import stat
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lmleak._version import __version__

MIB = 1 << 20
#: Suffixes of weight files.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".npz")
#: Other files that decide what a model folder computes: its architecture, its tokenizer and
#: lmleak's own description of the model (matched by exact name, or by prefix for ``tokenizer*``).
DESCRIPTION_FILES = (
    "config.json",
    "generation_config.json",
    "lmleak_model.json",
    "lmleak_finetune.json",
    "adapter_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
)
#: The attribute :func:`lmleak.models.loading.load_model` sets on a model: the local path it was read from.
SOURCE_ATTR = "lmleak_source"
#: Longest safetensors header read (the format's own limit is 100 MB).
MAX_HEADER_BYTES = 100_000_000
#: Files of a corpus folder listed in its provenance record (beyond: only the digest, so that a
#: summary stays small; the gate then says that the folder changed, not which file).
MANIFEST_MAX_FILES = 20_000

_FULL: contextvars.ContextVar[bool] = contextvars.ContextVar("lmleak_full_hash", default=False)
_memo: dict[tuple[str, int, int, str], dict[str, Any]] = {}
_memo_lock = threading.Lock()


@contextlib.contextmanager
def use_full_hash(enabled: bool = True) -> Iterator[None]:
    """Inside the block, model fingerprints include every file's whole SHA-256 (``lmleak --full-hash``)."""
    token = _FULL.set(enabled)
    try:
        yield
    finally:
        _FULL.reset(token)


def full_hash_enabled() -> bool:
    return _FULL.get()


def sha256_file(path: str | Path) -> str:
    """The SHA-256 of a whole file, read in 1 MiB blocks.

    Example:
        >>> import tempfile, pathlib, hashlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "f"
        >>> _ = p.write_bytes(b"abc")
        >>> sha256_file(p) == hashlib.sha256(b"abc").hexdigest()
        True
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(MIB):
            h.update(block)
    return h.hexdigest()


def head_tail_sha256(path: str | Path, size: int | None = None) -> str:
    """The SHA-256 of a file's first MiB and its last MiB (non-overlapping: a file of at most 2 MiB
    is hashed whole, so this equals :func:`sha256_file` there).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "f"
        >>> _ = p.write_bytes(bytes(range(256)) * 10)
        >>> head_tail_sha256(p) == sha256_file(p)
        True
    """
    n = Path(path).stat().st_size if size is None else size
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read(min(MIB, n)))
        tail_start = max(MIB, n - MIB)
        if tail_start < n:
            f.seek(tail_start)
            h.update(f.read(n - tail_start))
    return h.hexdigest()


def safetensors_header_sha256(path: str | Path) -> str | None:
    """The SHA-256 of a safetensors file's JSON header (None when the file is not one)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            return None
        (n,) = struct.unpack("<Q", raw)
        if n > MAX_HEADER_BYTES:
            return None
        header = f.read(n)
    if len(header) < n or not header.lstrip().startswith(b"{"):
        return None
    return hashlib.sha256(header).hexdigest()


def is_model_file(path: Path) -> bool:
    """Whether a file belongs to a model's fingerprint (weights, architecture, tokenizer).

    Example:
        >>> [is_model_file(Path(n)) for n in ("model.safetensors", "tokenizer.json", "train.log", ".x.bin")]
        [True, True, False, False]
    """
    name = path.name
    if name.startswith("."):
        return False
    return (
        path.suffix in WEIGHT_SUFFIXES
        or name in DESCRIPTION_FILES
        or name.startswith("tokenizer")
        or name.startswith("adapter_model")
    )


def model_files(path: str | Path) -> list[Path]:
    """The files of the model at ``path``: the file itself, or a folder's top-level model files
    (:func:`is_model_file`; sub-folders such as ``snapshots/`` are other models)."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.is_dir():
        return []
    return sorted(f for f in p.iterdir() if f.is_file() and is_model_file(f))


def file_record(path: str | Path, *, full: bool | None = None) -> dict[str, Any]:
    """One file's fingerprint record: ``name, size, head_tail_sha256`` (+ ``safetensors_header_sha256``,
    + ``sha256`` when ``full``); remembered per (path, size, mtime)."""
    p = Path(path)
    full = full_hash_enabled() if full is None else full
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, "full" if full else "fast")
    with _memo_lock:
        if key in _memo:
            return dict(_memo[key])
    rec: dict[str, Any] = {
        "name": p.name,
        "size": st.st_size,
        "head_tail_sha256": head_tail_sha256(p, st.st_size),
    }
    if p.suffix == ".safetensors":
        rec["safetensors_header_sha256"] = safetensors_header_sha256(p)
    if full:
        rec["sha256"] = sha256_file(p)
    with _memo_lock:
        _memo[key] = dict(rec)
    return rec


def files_fingerprint(path: str | Path, *, full: bool | None = None) -> dict[str, Any]:
    """The fingerprint of the model files at ``path`` (see the module docstring): ``path``, ``hash``
    ("fast" or "full"), ``fingerprint`` and one record per file.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "model.bin").write_bytes(b"weights")
        >>> fp = files_fingerprint(d)
        >>> fp["hash"], [f["name"] for f in fp["files"]], len(fp["fingerprint"])
        ('fast', ['model.bin'], 64)
    """
    full = full_hash_enabled() if full is None else full
    files = [file_record(f, full=full) for f in model_files(path)]
    return {
        "path": str(Path(path).resolve()),
        "hash": "full" if full else "fast",
        "fingerprint": _digest(files, full),
        "files": files,
    }


def _digest(files: list[dict[str, Any]], full: bool) -> str:
    keys = (
        ("name", "size", "sha256")
        if full
        else ("name", "size", "head_tail_sha256", "safetensors_header_sha256")
    )
    rows = [[f.get(k) for k in keys] for f in files]
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


def _file_sha256(p: Path, st: os.stat_result) -> str:
    """:func:`sha256_file`, remembered per (path, size, modification time) within the process."""
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, "corpus")
    with _memo_lock:
        cached = _memo.get(key)
    if cached is None:
        cached = {"sha256": sha256_file(p)}
        with _memo_lock:
            _memo[key] = cached
    return str(cached["sha256"])


def folder_manifest(path: str | Path) -> list[dict[str, Any]]:
    """Every file under the folder ``path`` (sub-folders too, hidden files too; links to folders are
    not followed): ``{"path": relative POSIX path, "size", "sha256"}``, sorted by path. Each file is
    read once (and not again within the process while its size and modification time stay).

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> (d / "u1").mkdir()
        >>> _ = (d / "u1" / "a.txt").write_text("abc")
        >>> [(f["path"], f["size"], f["sha256"][:8]) for f in folder_manifest(d)]
        [('u1/a.txt', 3, 'ba7816bf')]
    """
    root = Path(path)
    out: list[dict[str, Any]] = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            f = Path(folder) / name
            if not f.exists():
                continue  # a link to nothing: no text to read (the loader reads none either)
            st = f.stat()
            if not stat.S_ISREG(st.st_mode):
                continue  # a socket or a fifo holds no corpus text
            out.append(
                {"path": f.relative_to(root).as_posix(), "size": st.st_size, "sha256": _file_sha256(f, st)}
            )
    out.sort(key=lambda r: str(r["path"]))
    return out


def manifest_digest(manifest: list[dict[str, Any]]) -> str:
    """The SHA-256 of a folder manifest's ``[path, size, sha256]`` rows (its ``sha256`` in provenance)."""
    rows = [[f["path"], f["size"], f["sha256"]] for f in manifest]
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


def corpus_record(corpus: Any) -> dict[str, Any] | None:
    """The fingerprint of a corpus: a path, or an object with ``source`` (a loaded
    :class:`~lmleak.data.corpus.Corpus`); None when it names no file (a corpus built in memory).

    A file: ``{path, size, sha256}`` (no ``hash`` key: the record as it always was). A folder (``<user>/*.txt``, a saved dataset):
    ``{path, hash: "manifest", files, size, sha256, manifest}``, ``manifest`` listing every file
    (:func:`folder_manifest`; left out beyond :data:`MANIFEST_MAX_FILES`, the digest kept) and
    ``sha256`` its digest (:func:`manifest_digest`). A path that is neither: ``hash: "missing"``.
    """
    source = getattr(corpus, "source", corpus)
    if not isinstance(source, str | Path) or not str(source):
        return None
    p = Path(source)
    if p.is_dir():
        manifest = folder_manifest(p)
        rec: dict[str, Any] = {
            "path": str(p.resolve()),
            "hash": "manifest",
            "files": len(manifest),
            "size": sum(f["size"] for f in manifest),
            "sha256": manifest_digest(manifest),
        }
        if len(manifest) <= MANIFEST_MAX_FILES:
            rec["manifest"] = manifest
        else:
            rec["manifest"] = None
            rec["note"] = f"{len(manifest):,} files: the list is not kept, only its digest"
        return rec
    if not p.is_file():
        return {
            "path": str(p),
            "hash": "missing",
            "size": None,
            "sha256": None,
            "note": "no such file or folder",
        }
    st = p.stat()
    return {"path": str(p.resolve()), "size": st.st_size, "sha256": _file_sha256(p, st)}


def _inner(model: Any) -> Any:
    """The model a wrapper (a top-k or text-only view) delegates to, else the model itself."""
    while getattr(model, "inner", None) is not None and not hasattr(model, "module"):
        model = model.inner
    return model


def _dtype(model: Any) -> str | None:
    dtype = getattr(model, "dtype", None)
    module = getattr(model, "module", None)
    if dtype is None and module is not None and hasattr(module, "parameters"):
        first = next(iter(module.parameters()), None)
        dtype = getattr(first, "dtype", None)
    return None if dtype is None else str(dtype).removeprefix("torch.")


def model_record(model: Any) -> dict[str, Any]:
    """The provenance of a model: a loaded model object or a spec (path) string.

    A model with a ``provenance()`` method (a model behind an HTTP API) describes itself; any other
    gets its backend, device and dtype from the object and the fingerprint of the files it was read
    from (the ``lmleak_source`` that ``load_model`` sets, or the spec itself when it is a path).
    """
    if callable(getattr(model, "provenance", None)):
        return dict(model.provenance())
    obj = None if isinstance(model, str | Path) else model
    source = str(model) if obj is None else getattr(obj, SOURCE_ATTR, None)
    rec: dict[str, Any] = {"spec": None if source is None else str(source)}
    if obj is not None:
        inner = _inner(obj)
        rec["name"] = getattr(obj, "name", None)
        rec["backend"] = (
            type(obj).__name__ if inner is obj else f"{type(obj).__name__}({type(inner).__name__})"
        )
        device = getattr(inner, "device", None)
        rec["device"] = None if device is None else str(device)
        rec["dtype"] = _dtype(inner)
    if source is not None and Path(str(source)).exists():
        rec.update(files_fingerprint(str(source)))
    else:
        rec.update({"hash": None, "fingerprint": None, "note": "no local files (a model built in memory)"})
    return rec


def run_provenance(*, model: Any = None, corpus: Any = None) -> dict[str, Any]:
    """The ``provenance`` entry of a summary: lmleak's version, the model's record (when given) and the
    corpus's (when it names a file)."""
    out: dict[str, Any] = {"lmleak_version": __version__}
    if model is not None:
        out["model"] = model_record(model)
    if corpus is not None:
        rec = corpus_record(corpus)
        if rec is not None:
            out["corpus"] = rec
    return out


def cache_record(model: Any) -> dict[str, Any] | None:
    """The ``cache`` entry of a summary (``hits, misses, fingerprint``) of a model that answers from a
    cache (a model behind an HTTP API), else None."""
    stats = getattr(model, "cache_stats", None)
    return dict(stats()) if callable(stats) else None
