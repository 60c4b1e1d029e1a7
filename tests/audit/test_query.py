"""`lmleak query` over a run's tables."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.runs import write_parquet


def test_query_json_prints_list_and_struct_columns(tmp_path):
    write_parquet(
        pd.DataFrame({"text": ["a", "b"], "pii_types": [["EMAIL"], []], "n": [1, 2]}),
        tmp_path / "sequences.parquet",
    )
    (tmp_path / "summary.json").write_text("{}")
    sql = "SELECT text, pii_types, {'n': n, 'ids': [n, n + 1]} AS rec FROM sequences ORDER BY n"
    res = CliRunner().invoke(app, ["query", str(tmp_path), sql, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == [
        {"text": "a", "pii_types": ["EMAIL"], "rec": {"n": 1, "ids": [1, 2]}},
        {"text": "b", "pii_types": [], "rec": {"n": 2, "ids": [2, 3]}},
    ]


def test_the_gate_checks_every_k_and_its_verdict_does_not_depend_on_their_order(tmp_path):
    from lmleak.audit.gate import check_gate
    from lmleak.data.corpus import Corpus, Document
    from lmleak.models.fake import FakeLM
    from lmleak.report.leakage import ReportConfig, run_report

    texts = [f"user {i} code {i * 7919 % 1000} and the word {i % 3} then {i * 31 % 7}" for i in range(12)]
    model = FakeLM.from_texts(texts, order=2)  # a bigram model: k = 1 and k = 3 leak different counts
    corpus = Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)])
    verdicts = []
    for order in ((1, 3), (3, 1)):
        run = tmp_path / f"run-{order[0]}"
        summary = run_report(model, corpus, run, ReportConfig(ks=order))
        by_k = {k: summary["by_k"][str(k)]["unique_sequences"] for k in order}
        limit = min(by_k.values())  # passes at one k, fails at the other when they differ
        checks = check_gate(run, {"unique_sequences": limit})
        assert {c.metric for c in checks} == {"unique_sequences (k=1)", "unique_sequences (k=3)"}
        verdicts.append((all(c.passed for c in checks), sorted((c.metric, c.value) for c in checks)))
    assert len(set(by_k.values())) == 2
    assert verdicts[0] == verdicts[1]
    assert verdicts[0][0] is False  # the old gate read only the first k: one of the orders passed


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
