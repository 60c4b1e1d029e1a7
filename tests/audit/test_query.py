"""`lmleak query` over a run's tables."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.runs import write_parquet


def test_query_json_prints_list_and_struct_columns(tmp_path):
    write_parquet(pd.DataFrame({"text": ["a", "b"], "pii_types": [["EMAIL"], []], "n": [1, 2]}),
                  tmp_path / "sequences.parquet")
    (tmp_path / "summary.json").write_text("{}")
    sql = "SELECT text, pii_types, {'n': n, 'ids': [n, n + 1]} AS rec FROM sequences ORDER BY n"
    res = CliRunner().invoke(app, ["query", str(tmp_path), sql, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == [
        {"text": "a", "pii_types": ["EMAIL"], "rec": {"n": 1, "ids": [1, 2]}},
        {"text": "b", "pii_types": [], "rec": {"n": 2, "ids": [2, 3]}},
    ]
