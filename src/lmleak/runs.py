"""Run directories: atomic, owner-only outputs and the summary contract.

Rules every stage follows:
    - Outputs are written under a temporary name in the same folder and renamed when complete,
      so an interrupted run never leaves a half-written file that looks finished.
    - Run directories are created ``0o700`` and files ``0o600``: results contain training data.
    - ``summary.json`` carries ``schema_version``; a field is never renamed or redefined without
      bumping :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from lmleak._version import __version__
from lmleak.errors import RunError

SCHEMA_VERSION = 1


def secure_dir(path: str | Path) -> Path:
    """Create ``path`` (and parents) with owner-only permissions on the leaf."""
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    os.chmod(p, 0o700)
    return p


def _finish(tmp: Path, path: Path) -> Path:
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write text to ``path`` via a temporary file and a rename; owner-only permissions."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    return _finish(tmp, path)


def _jsonable(obj: Any) -> Any:
    """NaN/inf become null (JSON has no NaN); numpy scalars become Python numbers, numpy arrays (the
    list columns of Parquet tables) lists, dates ISO strings.

    Example:
        >>> import numpy as np
        >>> _jsonable({"a": np.array([1, 2]), "b": [np.float32(0.5), float("nan")], "c": {"d": np.int64(3)}})
        {'a': [1, 2], 'b': [0.5, None], 'c': {'d': 3}}
    """
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and getattr(obj, "ndim", 0) >= 1:
        return [_jsonable(v) for v in obj.tolist()]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 1) == 0:
        obj = obj.item()
    if hasattr(obj, "isoformat") and callable(obj.isoformat):
        return obj.isoformat()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def to_json(obj: Any) -> str:
    """Strict JSON (no NaN), indented, keys in insertion order."""
    return json.dumps(_jsonable(obj), indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, to_json(obj))


def write_parquet(df: Any, path: str | Path) -> Path:
    """Write a pandas DataFrame or pyarrow Table to Parquet atomically, owner-only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = df if isinstance(df, pa.Table) else pa.Table.from_pandas(df, preserve_index=False)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    return _finish(tmp, path)


def write_summary(run_dir: str | Path, summary: dict[str, Any], *, name: str = "summary.json") -> Path:
    """Write ``summary.json`` with ``schema_version`` and the lmleak version first."""

    full = {"schema_version": SCHEMA_VERSION, "lmleak_version": __version__, **summary}
    return atomic_write_json(Path(run_dir) / name, full)


def read_summary(run_dir: str | Path, *, name: str = "summary.json") -> dict[str, Any]:
    p = Path(run_dir) / name
    if not p.exists():
        raise RunError(f"{p} does not exist; run the stage that writes it first")
    try:
        return dict(json.loads(p.read_text(encoding="utf-8")))
    except json.JSONDecodeError as e:
        raise RunError(f"{p} is not valid JSON ({e}); rerun the stage that writes it") from e
