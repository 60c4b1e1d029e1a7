"""SQL over a run's Parquet files with DuckDB: every ``*.parquet`` below the run directory is a view
named after its file (``sequences``, ``occurrences``, ``exposure``...); in an audit, files of the
same name from several models are unioned with a ``model`` column and a ``stage`` column added.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lmleak.errors import InputError, RunError


def _view_name(path: Path) -> str:
    return re.sub(r"\W", "_", path.stem)


def parquet_views(run_dir: str | Path) -> dict[str, list[Path]]:
    """View name -> the Parquet files it unions (ledger shards are one view, ``ledger``)."""
    run = Path(run_dir)
    if not run.is_dir():
        raise RunError(f"{run} is not a run directory")
    views: dict[str, list[Path]] = {}
    for p in sorted(run.rglob("*.parquet")):
        if p.name.startswith("."):
            continue  # temporary files of an unfinished write
        name = "ledger" if p.parent.name == "ledger" else _view_name(p)
        views.setdefault(name, []).append(p)
    return views


def query(run_dir: str | Path, sql: str) -> Any:
    """Run DuckDB SQL over the run's Parquet files and return a pandas DataFrame.

    Example:
        >>> import tempfile, pandas as pd, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> pd.DataFrame({"x": [1, 2, 3]}).to_parquet(d / "numbers.parquet")
        >>> int(query(d, "SELECT sum(x) AS s FROM numbers")["s"][0])
        6
    """
    import duckdb

    run = Path(run_dir)
    con = duckdb.connect()
    for name, files in parquet_views(run).items():
        parts = []
        for f in files:
            rel = f.relative_to(run).parts
            model = rel[1] if len(rel) > 2 and rel[0] == "models" else ""
            stage = rel[2] if len(rel) > 3 and rel[0] == "models" else ""
            lit = str(f).replace("'", "''")
            parts.append(f"SELECT *, '{model}' AS model, '{stage}' AS stage FROM read_parquet('{lit}')")
        con.execute(f'CREATE VIEW "{name}" AS ' + " UNION ALL BY NAME ".join(parts))
    try:
        return con.execute(sql).df()
    except duckdb.Error as e:
        views = ", ".join(sorted(parquet_views(run))) or "none"
        raise InputError(f"query failed: {e}", field="sql", hint=f"tables in this run: {views}") from None
