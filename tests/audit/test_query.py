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


def test_a_query_on_a_column_this_run_left_empty_warns_with_what_fills_it(tmp_path):
    """Regression: the README's `ORDER BY perplexity_ratio` returned `.`, `-`, `patch` on a run without a
    public model, because the column is NaN in every row, and nothing said so."""
    import json

    from typer.testing import CliRunner

    from lmleak.audit.query import empty_columns
    from lmleak.cli.main import app
    from lmleak.data.corpus import Corpus, Document
    from lmleak.models.fake import FakeLM
    from lmleak.report.leakage import ReportConfig, run_report

    texts = [f"user {i} wrote code {i * 7919 % 1000} and then {i % 3}" for i in range(8)]
    corpus = Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)])
    model = FakeLM.from_texts(texts, order=2)
    run = tmp_path / "run"
    run_report(model, corpus, run, ReportConfig(k=(1,)))
    sql = "SELECT text FROM sequences ORDER BY perplexity_ratio DESC LIMIT 3"
    (warning,) = empty_columns(run, sql)
    n = int(pd.read_parquet(run / "sequences.parquet")["perplexity_ratio"].isna().sum())
    assert n > 0 and warning.startswith(
        f"column 'perplexity_ratio' of 'sequences' is empty in this run ({n} rows"
    )
    assert "public model" in warning
    assert (
        empty_columns(run, "SELECT text, users_in_d FROM sequences") == []
    )  # filled columns: nothing to say
    r = CliRunner().invoke(app, ["query", str(run), sql, "--json"])
    assert r.exit_code == 0 and len(json.loads(r.stdout)) == 3  # the answer is still printed (stdout)
    assert "warning: column 'perplexity_ratio'" in " ".join(r.stderr.split())  # the warning goes to stderr
    public = run_report(
        model,
        corpus,
        tmp_path / "pub",
        ReportConfig(k=(1,)),
        public_model=FakeLM.from_texts(texts[:4], order=1),
    )
    assert public["public_model"] is not None and empty_columns(tmp_path / "pub", sql) == []
