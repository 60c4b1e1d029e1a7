"""`lmleak query` over a run's tables."""

from __future__ import annotations

import pandas as pd

from lmleak.runs import write_parquet


def test_the_resumable_shards_of_a_stages_passes_are_not_tables(tmp_path):
    # regression: an audit's mia/passes/mia-scores/shard-00000.parquet and the probe's pass shards
    # were unioned into one meaningless table "shard_00000" listed beside the run's real tables
    from lmleak.audit.query import parquet_views

    stage = tmp_path / "models" / "m" / "mia"
    write_parquet(pd.DataFrame({"score": [0.1]}), stage / "mia_scores.parquet")
    write_parquet(pd.DataFrame({"score": [0.1]}), stage / "passes" / "mia-scores" / "shard-00000.parquet")
    write_parquet(
        pd.DataFrame({"tok": [1]}), tmp_path / "models" / "m" / "report" / "ledger" / "shard-00000.parquet"
    )
    assert sorted(parquet_views(tmp_path)) == ["ledger", "mia_scores"]
