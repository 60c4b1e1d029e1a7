"""SQL over a run's Parquet files with DuckDB: every ``*.parquet`` below the run directory is a view
named after its file (``sequences``, ``occurrences``, ``exposure``...); in an audit, files of the
same name from several models are unioned with a ``model`` column and a ``stage`` column added.

The query runs in a sandbox: the run's files are registered as Arrow datasets (scanned lazily, so
memory does not grow with the run), then DuckDB's external access is disabled, extension
auto-loading and Python replacement scans are off and the configuration is locked. File functions
(``read_csv('/etc/passwd')``), ``COPY ... TO``, ``ATTACH``, ``INSTALL``/``LOAD`` and network reads
fail with a one-line :class:`~lmleak.errors.InputError`. Only a complete run is queried
(:func:`lmleak.runs.check_run`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lmleak.errors import InputError, RunError
from lmleak.runs import check_run
from lmleak.words import plural

#: Settings applied, in this order, after the run's tables are registered; the last one locks them.
SANDBOX = (
    "SET python_enable_replacements = false",  # no reading Python variables of the caller by name
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET enable_external_access = false",  # no files, no network, no ATTACH, no INSTALL/LOAD
    "SET lock_configuration = true",
)


def _view_name(path: Path) -> str:
    return re.sub(r"\W", "_", path.stem)


def parquet_views(run_dir: str | Path) -> dict[str, list[Path]]:
    """View name -> the Parquet files it unions (ledger shards are one view, ``ledger``).

    The resumable shards under a stage's ``passes/`` folder are internal and left out. Files that resolve outside the run directory (a symlink to elsewhere) are not the run's own
    tables and are left out.
    """
    run = Path(run_dir)
    if not run.is_dir():
        raise RunError(f"{run} is not a run directory")
    root = run.resolve()
    views: dict[str, list[Path]] = {}
    for p in sorted(run.rglob("*.parquet")):
        if p.name.startswith("."):
            continue  # temporary files of an unfinished write
        if not p.resolve().is_relative_to(root):
            continue
        if "passes" in p.relative_to(run).parts[:-1]:
            continue  # resumable shards of a stage's scoring pass; the stage's own tables hold them
        name = "ledger" if p.parent.name == "ledger" else _view_name(p)
        views.setdefault(name, []).append(p)
    return views


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def connect(run_dir: str | Path) -> Any:
    """A DuckDB connection that sees the run's tables and nothing else (see the module docstring)."""
    import duckdb
    import pyarrow.dataset as ds

    run = Path(run_dir)
    con = duckdb.connect(":memory:")
    n = 0
    for name, files in parquet_views(run).items():
        parts = []
        for f in files:
            rel = f.relative_to(run).parts
            model = rel[1] if len(rel) > 2 and rel[0] == "models" else ""
            stage = rel[2] if len(rel) > 3 and rel[0] == "models" else ""
            table = f"__file{n}"
            n += 1
            con.register(table, ds.dataset(str(f), format="parquet"))
            lit_model, lit_stage = model.replace("'", "''"), stage.replace("'", "''")
            parts.append(f"SELECT *, '{lit_model}' AS model, '{lit_stage}' AS stage FROM {table}")
        con.execute(f'CREATE VIEW "{name}" AS ' + " UNION ALL BY NAME ".join(parts))
    for setting in SANDBOX:
        con.execute(setting)
    return con


#: why a column can be empty in a run, and what fills it
EMPTY_COLUMN_REASONS = {
    "public_logprob": "it needs a public model (`public_model:` in the audit config, `--public-model`)",
    "public_perplexity": "it needs a public model (`public_model:` in the audit config, `--public-model`)",
    "perplexity_ratio": "it needs a public model (`public_model:` in the audit config, `--public-model`)",
    "log_perplexity_ratio": "it needs a public model (`public_model:` in the audit config, `--public-model`)",
    "public_perplexities": "it needs a public model (`public_model:` in the audit config, `--public-model`)",
    "pii_types": "it needs a PII policy (`analyses.report.pii_policy`, `--pii-policy`)",
}


def empty_columns(run_dir: str | Path, sql: str) -> list[str]:
    """One warning per column the query names that holds no value in this run (only nulls or NaN):
    ``ORDER BY perplexity_ratio`` on a run without a public model orders by nothing.

    Example:
        >>> import tempfile, pandas as pd, pathlib
        >>> from lmleak.runs import write_summary
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> pd.DataFrame({"text": ["a", "b"], "perplexity_ratio": [float("nan")] * 2}).to_parquet(d / "sequences.parquet")
        >>> _ = write_summary(d, {})
        >>> empty_columns(d, "SELECT text FROM sequences ORDER BY perplexity_ratio DESC")[0][:60]
        "column 'perplexity_ratio' of 'sequences' is empty in this ru"
    """
    run = check_run(run_dir)
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql))
    con = connect(run)
    out = []
    try:
        for view in sorted(set(parquet_views(run)) & words):
            schema = con.execute(f'DESCRIBE "{view}"').fetchall()
            for name, kind, *_ in schema:
                if name not in words or name in ("model", "stage"):
                    continue
                numeric = kind in ("DOUBLE", "FLOAT")
                cond = f'"{name}" IS NOT NULL' + (f' AND NOT isnan("{name}")' if numeric else "")
                filled, rows = con.execute(
                    f'SELECT count(*) FILTER (WHERE {cond}), count(*) FROM "{view}"'
                ).fetchone()
                if rows and not filled:
                    why = EMPTY_COLUMN_REASONS.get(name, "no stage of this run filled it")
                    out.append(
                        f"column {name!r} of {view!r} is empty in this run ({plural(rows, 'row')}, no value): {why}"
                    )
    finally:
        con.close()
    return out


def query(run_dir: str | Path, sql: str) -> Any:
    """Run DuckDB SQL over the run's Parquet files and return a pandas DataFrame.

    Example:
        >>> import tempfile, pandas as pd, pathlib
        >>> from lmleak.runs import write_summary
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> pd.DataFrame({"x": [1, 2, 3]}).to_parquet(d / "numbers.parquet")
        >>> _ = write_summary(d, {})
        >>> int(query(d, "SELECT sum(x) AS s FROM numbers")["s"][0])
        6
    """
    import duckdb

    run = check_run(run_dir)
    con = connect(run)
    try:
        return con.execute(sql).df()
    except duckdb.PermissionException as e:
        raise InputError(
            f"query refused: {_first_line(e)}",
            field="sql",
            hint="a query sees only this run's tables; files, network, ATTACH, COPY and extensions are disabled",
        ) from None
    except duckdb.Error as e:
        views = ", ".join(sorted(parquet_views(run))) or "none"
        raise InputError(
            f"query failed: {_first_line(e)}", field="sql", hint=f"tables in this run: {views}"
        ) from None
    finally:
        con.close()
