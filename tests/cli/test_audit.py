"""``lmleak audit``, ``gate``, ``query`` (lmleak.cli.audit): exit codes and what they print."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.runs import write_parquet


def _summary(tmp_path, **headline):
    (tmp_path / "summary.json").write_text(json.dumps({"models": {"m": {"headline": headline}}}))
    return tmp_path


def test_the_gate_cli_counts_extracted_samples_and_a_missing_measurement_fails(tmp_path):
    run = _summary(tmp_path, extracted=3)
    assert CliRunner().invoke(app, ["gate", str(run), "--max-extracted", "3"]).exit_code == 0
    assert CliRunner().invoke(app, ["gate", str(run), "--max-extracted", "2"]).exit_code == 1
    assert CliRunner().invoke(app, ["gate", str(run), "--min-epsilon-lower-bound", "0"]).exit_code == 1


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


def test_the_gate_without_limits_exits_2_naming_every_limit_option(tmp_path):
    r = CliRunner().invoke(app, ["gate", str(_summary(tmp_path, mia_auc=0.5))])
    assert r.exit_code == 2
    out = " ".join(r.output.split())
    assert "no limits given" in out and "--max-unique" in out and "--max-extracted" in out


def test_the_gate_json_lists_every_check_and_the_verdict(tmp_path):
    run = _summary(tmp_path, mia_auc=0.7, max_exposure=3.0)
    r = CliRunner().invoke(app, ["gate", str(run), "--max-mia-auc", "0.6", "--max-exposure", "4", "--json"])
    assert r.exit_code == 1
    got = json.loads(r.stdout)
    assert got["passed"] is False and got["allow_not_evaluable"] is False and got["profile"] is None
    keys = ("model", "metric", "limit", "value", "passed", "status")
    assert [{k: c[k] for k in keys} for c in got["checks"]] == [
        {
            "model": "m",
            "metric": "max_exposure",
            "limit": 4.0,
            "value": 3.0,
            "passed": True,
            "status": "pass",
        },
        {"model": "m", "metric": "mia_auc", "limit": 0.6, "value": 0.7, "passed": False, "status": "fail"},
    ]
    text = CliRunner().invoke(app, ["gate", str(run), "--max-mia-auc", "0.8"], env={"COLUMNS": "200"})
    assert text.exit_code == 0 and "gate passed" in text.output
    (row,) = [line for line in text.output.splitlines() if "Membership inference AUC" in line and "│" in line]
    assert "decided on the value alone" in text.output  # issue 32: a value with no interval says so
    assert [c.strip() for c in row.split("│")[1:-1]] == [
        "m",
        "Membership inference AUC ≤ 0.8",
        "0.7",
        "—",
        "Pass",
    ]


def test_the_demo_cli_prints_the_headlines_of_the_demo_run(tmp_path, monkeypatch):
    from lmleak.audit import demo

    run = _summary(tmp_path, mia_auc=0.7)
    monkeypatch.setattr(demo, "run_demo", lambda out_dir, **kw: run)
    r = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "d"), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["run"] == str(run) and got["report"] == str(run / "report.html") and got["seconds"] >= 0
    assert got["headlines"]["m"]["mia_auc"] == 0.7
    r = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "d")], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "0.7" in r.output and "demo finished in 0 s; report:" in " ".join(r.output.split())


def test_the_terminal_summary_shows_values_as_the_cards_do(monkeypatch):
    """The quick demo's terminal table printed 'DP ε 9.506' (no unit) and only the first k of the report's
    counts (292, where the HTML card shows 292 · 437)."""
    from rich.console import Console

    from lmleak.cli import audit as cli_audit

    console = Console(width=200, record=True)
    monkeypatch.setattr(cli_audit, "out", console)
    by_k = {
        "1": {"unique_sequences": 292, "log_leakage_epsilon": 104.0006},
        "3": {"unique_sequences": 437, "log_leakage_epsilon": 155.31},
    }
    heads = {
        "plain": {"unique_sequences": 292, "leakage_epsilon": 1.4686e45, "by_k": by_k},
        "dp": {
            "unique_sequences": 0,
            "dp_epsilon": 9.506,
            "privacy_unit": "user",
            "by_k": {"1": {"unique_sequences": 0}, "3": {"unique_sequences": 1}},
        },
    }
    cli_audit._summary_table(Path("run"), heads)
    text = console.export_text()
    assert "9.506 per person" in text and "1.47e+45 · 2.82e+67" in text and "292 · 437" in text
    assert "Unique leaked sequences (k = 1 · 3)" in text and "0 · 1" in text


def test_query_prints_training_text_as_text_never_as_markup(tmp_path):
    """Leaked mail holds '[proj-dev]' subject tags: Rich ate them as styles (the text printed without
    them), '[/oops]' crashed the query with 'unexpected MarkupError', '[link=…]' made a hyperlink."""
    texts = ["Subject: [proj-dev] Re: crash", "a [/oops] b", "[link=http://evil.example]click[/link]"]
    write_parquet(
        pd.DataFrame({"text": texts, "pii_types": [["EMAIL", "PERSON"], [], []]}),
        tmp_path / "sequences.parquet",
    )
    (tmp_path / "summary.json").write_text(json.dumps({"models": {}}))
    r = CliRunner().invoke(
        app, ["query", str(tmp_path), "SELECT text, pii_types FROM sequences"], env={"COLUMNS": "200"}
    )
    assert r.exit_code == 0, r.output
    for t in texts:
        assert t in r.output
    assert "['EMAIL', 'PERSON']" in r.output
