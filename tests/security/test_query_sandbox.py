"""`lmleak query` is sandboxed (issue 16, item 3): the run's own tables and nothing else."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from typer.testing import CliRunner

from lmleak.audit.query import query
from lmleak.cli.main import app
from lmleak.errors import InputError
from lmleak.runs import open_run, write_parquet, write_summary


@pytest.fixture()
def run(tmp_path):
    run = tmp_path / "run"
    with open_run(run):
        write_parquet(pd.DataFrame({"text": ["a", "b"], "n": [1, 2]}), run / "sequences.parquet")
        write_parquet(pd.DataFrame({"m": [7]}), run / "models" / "m1" / "report" / "exposure.parquet")
        write_summary(run, {"stage": "test"})
    return run


def _cli(run, sql):
    return CliRunner().invoke(app, ["query", str(run), sql, "--json"])


def test_the_run_tables_are_queryable(run):
    res = _cli(run, "SELECT sum(n) AS s FROM sequences")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == [{"s": 3}]
    df = query(run, "SELECT m, model, stage FROM exposure")
    assert df.to_dict("records") == [{"m": 7, "model": "m1", "stage": "report"}]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_parquet('{outside}')",
        "COPY sequences TO '{target}'",
        "COPY (SELECT 1) TO '{target}' (FORMAT csv)",
        "ATTACH '{target}' AS other",
        "EXPORT DATABASE '{target_dir}'",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SELECT * FROM read_parquet('https://example.org/x.parquet')",
        "SELECT * FROM read_csv('s3://bucket/x.csv')",
        "SET enable_external_access = true",
        "RESET lock_configuration",
    ],
)
def test_files_network_extensions_and_settings_are_refused(run, tmp_path, sql):
    outside = tmp_path / "outside.parquet"
    write_parquet(pd.DataFrame({"secret": ["not this run's"]}), outside)
    target = tmp_path / "exfil.csv"
    sql = sql.format(outside=outside, target=target, target_dir=tmp_path / "exported")
    res = _cli(run, sql)
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), res.output
    assert "not this run's" not in res.output and "root:" not in res.output
    assert not target.exists() and not (tmp_path / "exported").exists()
    with pytest.raises(InputError, match="query (refused|failed)"):
        query(run, sql)


def test_python_variables_of_the_caller_are_not_reachable(run):
    secret_frame = pd.DataFrame({"secret": ["caller's data"]})  # noqa: F841 - DuckDB replacement scans would find it
    with pytest.raises(InputError, match="query failed"):
        query(run, "SELECT * FROM secret_frame")


def test_a_symlink_to_a_file_outside_the_run_is_not_a_table(run, tmp_path):
    outside = tmp_path / "elsewhere.parquet"
    write_parquet(pd.DataFrame({"secret": ["x"]}), outside)
    os.symlink(outside, run / "linked.parquet")
    os.utime(run / "summary.json")  # the run stays consistent; only the link is new
    with pytest.raises(InputError, match="query failed"):
        query(run, "SELECT * FROM linked")
