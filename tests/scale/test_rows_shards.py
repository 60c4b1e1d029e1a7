"""run_rows keeps every key of every row (a key missing from a shard's first row was dropped)."""

from __future__ import annotations

import pytest

from lmleak.errors import ConfigError
from lmleak.shards import ShardEngine, run_rows


def test_run_rows_keeps_keys_the_first_row_lacks(tmp_path):
    items = ["phone", "email", "phone", "email", "email"]

    def work(chunk):
        return [
            {"kind": k, **({"email_id": k == "email"} if k == "email" else {"area_code": True})}
            for k in chunk
        ]

    rows = run_rows(items, work, tmp_path / "p", fingerprint="f", shard_size=3)
    assert [r["kind"] for r in rows] == items
    assert [r.get("email_id") for r in rows] == [None, True, None, True, True]
    assert [r.get("area_code") for r in rows] == [True, None, True, None, None]
    # a rerun reads the same rows back from the complete shards
    assert run_rows(items, work, tmp_path / "p", fingerprint="f", shard_size=3) == rows


def test_engine_options_are_checked():
    with pytest.raises(ConfigError, match="engine"):
        ShardEngine("spark")
    with pytest.raises(ConfigError, match="num_workers"):  # the field, as every Settings names it
        ShardEngine("ray", num_workers=0)
    with pytest.raises(ValueError, match="factory"):
        run_rows(
            [1], lambda c: [{"x": 1}], "unused", fingerprint="f", shard_size=1, engine=ShardEngine("ray")
        )
