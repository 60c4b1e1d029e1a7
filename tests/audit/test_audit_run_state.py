"""The issue's scenario end to end: an audit re-run interrupted mid-stage leaves the old summary.json
behind; `lmleak gate` must refuse the run (exit 2), and a completed re-run passes again."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.errors import Interrupted
from lmleak.runs import INCOMPLETE


def test_an_interrupted_audit_rerun_fails_the_gate_until_it_is_rerun(tmp_path, monkeypatch):
    from lmleak.audit.runner import Auditor

    texts = [f"user {i} wrote to u{i}@example.org about code {i * 7919 % 1000}" for i in range(8)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"text": t, "user_id": f"u{i}"}) + "\n" for i, t in enumerate(texts))
    )
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(
        f"out: run\ncorpus: {{path: corpus.jsonl}}\nmodels: [{{name: m, path: 'fake:{corpus}'}}]\n"
        "analyses: {report: {k: [1]}}\n"
    )
    run = tmp_path / "run"
    gate = ["gate", str(run), "--max-unique", "100000"]
    assert CliRunner().invoke(app, ["audit", str(cfg), "--quiet"]).exit_code == 0
    assert CliRunner().invoke(app, gate).exit_code == 0
    old_summary = (run / "summary.json").read_text()

    def interrupted(self, model, model_path, spec, out):
        raise Interrupted(out / "ledger", kept=0, total=1, description="ledger")

    monkeypatch.setattr(Auditor, "stage_report", interrupted)
    res = CliRunner().invoke(app, ["audit", str(cfg), "--quiet", "--force"])
    assert res.exit_code == 130 and "resume with: lmleak" in res.output, res.output
    assert (run / INCOMPLETE).exists() and (run / "summary.json").read_text() == old_summary
    res = CliRunner().invoke(app, gate)
    assert res.exit_code == 2 and "incomplete" in res.output and "re-run" in res.output, res.output

    monkeypatch.undo()
    assert CliRunner().invoke(app, ["audit", str(cfg), "--quiet"]).exit_code == 0
    assert not (run / INCOMPLETE).exists()
    assert CliRunner().invoke(app, gate).exit_code == 0
