"""The audit: config validation, stages skipped on rerun, schema version, gate exit codes, report."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from lmleak.audit.config import load_config, parse_config
from lmleak.cli.main import app
from lmleak.data.synth.customersim import synthesize
from lmleak.errors import ConfigError


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("audit")
    paths = synthesize(d / "data", users=6, dialogs_per_user=2, seed=3, canaries=2, canary_repeats=3)
    # the second line of every dialogue (canary documents have one line only)
    lines = [
        t.split("\n")[1]
        for t in (json.loads(x)["text"] for x in paths["corpus"].read_text().splitlines())
        if "\n" in t
    ]
    unseen = synthesize(d / "unseen", users=6, dialogs_per_user=2, seed=4)
    others = [json.loads(x)["text"].split("\n")[1] for x in unseen["corpus"].read_text().splitlines()]
    (d / "members.txt").write_text("\n".join(lines) + "\n")
    (d / "non_members.txt").write_text("\n".join(others) + "\n")
    cfg = {
        "out": "run",
        "corpus": {"path": "data/corpus.jsonl"},
        "models": [{"name": "memorizer", "path": f"fake:{paths['corpus']}"}],
        "analyses": {
            "report": {"k": [1], "t": 1.0, "p": 5},
            "exposure": {"canaries": "data/canaries.jsonl"},
            "mia": {"members": "members.txt", "non_members": "non_members.txt", "group_size": 4},
        },
    }
    (d / "audit.yaml").write_text(yaml.safe_dump(cfg))
    return d


def test_an_audit_writes_a_versioned_summary_and_skips_complete_stages(audit_dir):
    r = CliRunner().invoke(app, ["audit", str(audit_dir / "audit.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    run = audit_dir / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["schema_version"] >= 1
    head = summary["models"]["memorizer"]["headline"]
    assert {"unique_sequences", "max_exposure", "mia_auc"} <= set(head)
    assert set(summary["models"]["memorizer"]["scenarios"]) == {"report", "exposure", "mia"}
    assert (run / "report.html").stat().st_mode & 0o077 == 0
    assert (run / "kart" / "scenarios.parquet").exists()
    # the exposure headline's null: never-inserted secrets, as many as the canaries, ranked beside them
    exposure = json.loads((run / "models" / "memorizer" / "exposure" / "summary.json").read_text())
    assert exposure["num_placebos"] == exposure["num_canaries"] == 2
    assert exposure["placebo_max_exposure"] < exposure["max_exposure"]
    assert (run / "models" / "memorizer" / "exposure" / "placebo_exposure.parquet").exists()
    stamps = {p: p.stat().st_mtime_ns for p in run.rglob("*.parquet") if "models" in p.parts}
    r = CliRunner().invoke(app, ["audit", str(audit_dir / "audit.yaml")])
    assert r.exit_code == 0, r.output
    assert "skipped" in r.output or all(p.stat().st_mtime_ns == t for p, t in stamps.items())
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())


def test_the_gate_exit_code_follows_the_limits(audit_dir):
    run = audit_dir / "run"
    if not (run / "summary.json").exists():
        CliRunner().invoke(app, ["audit", str(audit_dir / "audit.yaml")])
    head = json.loads((run / "summary.json").read_text())["models"]["memorizer"]["headline"]
    ok = CliRunner().invoke(app, ["gate", str(run), "--max-exposure", str(head["max_exposure"] + 1)])
    assert ok.exit_code == 0, ok.output
    fail = CliRunner().invoke(
        app, ["gate", str(run), "--max-exposure", str(head["max_exposure"] - 0.5), "--json"]
    )
    assert fail.exit_code == 1 and json.loads(fail.stdout)["passed"] is False
    missing = CliRunner().invoke(app, ["gate", str(run), "--max-leakage-epsilon", "2"])
    assert missing.exit_code == 1 and "Not evaluable" in missing.output and "public model" in missing.output


def test_the_report_is_self_contained_html_with_a_headline_and_plots(audit_dir):
    run = audit_dir / "run"
    if not (run / "report.html").exists():
        CliRunner().invoke(app, ["audit", str(audit_dir / "audit.yaml")])
    html = (run / "report.html").read_text()
    assert 'id="headline"' in html and "Unique leaked sequences" in html
    assert "training data" in html.lower()
    import re

    # nothing is fetched from the network: no external scripts, styles or images
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=[\"']https?:", html)
    assert html.count('class="plot"') >= 2  # exposure bars and ROC curves
    assert "My ID is" not in html  # redacted by default


def test_query_runs_sql_over_the_run(audit_dir):
    run = audit_dir / "run"
    if not (run / "summary.json").exists():
        CliRunner().invoke(app, ["audit", str(audit_dir / "audit.yaml")])
    r = CliRunner().invoke(app, ["query", str(run), "SELECT count(*) AS n FROM exposure", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["n"] == 2


def test_the_report_renders_in_a_headless_browser(audit_dir, tmp_path):
    """Look at the report as a person would: Chromium renders it to a PNG that is not blank."""
    import shutil
    import subprocess

    import numpy as np
    from PIL import Image

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no Chromium on this machine (CI installs Debian's chromium)")
    run = audit_dir / "run"
    if not (run / "report.html").exists():
        CliRunner().invoke(app, ["audit", str(audit_dir / "audit.yaml")])
    shot = tmp_path / "report.png"
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,2000",
            "--virtual-time-budget=5000",
            f"--screenshot={shot}",
            (run / "report.html").as_uri(),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # the page's scripts (plots, table sorting) ran without an error or console message
    console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    assert console == [], console
    img = np.asarray(Image.open(shot).convert("L"), dtype=np.float64)
    assert img.shape == (2000, 1280)
    # the dark title bar, text and plots: many grey levels, not a blank or error page
    assert img[:60].mean() < 100  # the header band is dark
    assert len(np.unique(img.astype(np.uint8))) > 50
    assert img.std() > 20


def test_the_sequence_table_names_each_rows_k_and_the_cards_name_the_headline_k(tmp_path):
    import pandas as pd

    from lmleak.render.tables import report_k, sequence_table

    seqs = pd.DataFrame({"k": [1, 3, 3], "length_tokens": [2, 4, 3], "users_in_d": [2, 1, 1]})
    table, note = sequence_table(seqs, "seq-1", show_text=False, limit=10)
    assert '<th class="">k</th>' in table
    assert note == "3 sequences (k = 1: 1, k = 3: 2)"
    (tmp_path / "summary.json").write_text(json.dumps({"k": 1, "ks": [1, 3], "unique_sequences": 0}))
    assert report_k(tmp_path) == " Counted at k = 1; the table below lists k = 3 too."
    assert report_k(tmp_path / "missing") == ""


def test_a_stage_the_models_access_cannot_support_is_skipped_without_leaving_the_run_incomplete(tmp_path):
    # regression: auditing `--model http://...#m` (tier echo) with exposure enabled skipped the stage
    # but left models/api/exposure/.incomplete, so render, gate and query refused the finished run
    from lmleak.audit.runner import run_audit
    from lmleak.runs import check_run

    texts = ["My ID is: 123456. Hello there, how are you today?"] * 4 + ["A different line of text."] * 4
    (tmp_path / "c.jsonl").write_text(
        "".join(json.dumps({"user_id": f"u{i % 4}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    (tmp_path / "canaries.jsonl").write_text(json.dumps({"prefix": "My ID is: ", "secret": "123456"}) + "\n")
    cfg_path = tmp_path / "audit.yaml"
    cfg_path.write_text(
        yaml.safe_dump(
            {
                "out": "run",
                "corpus": {"path": "c.jsonl"},
                "models": [{"name": "api", "path": f"topk:5:fake:{tmp_path / 'c.jsonl'}"}],
                "analyses": {"report": {"k": [1]}, "exposure": {"canaries": "canaries.jsonl"}, "kart": False},
            }
        )
    )
    run_audit(load_config(cfg_path), echo=lambda s: None)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "exposure" in summary["models"]["api"]["skipped"]
    assert check_run(tmp_path / "run") == tmp_path / "run"


def test_exposure_max_candidates_switches_the_audit_to_the_extrapolated_estimate(audit_dir, tmp_path):
    """What `lmleak demo --base` sets on a CPU: no exact trie walk, Carlini et al.'s sampled estimate instead."""
    import pandas as pd

    cfg = yaml.safe_load((audit_dir / "audit.yaml").read_text())
    tables = {}
    for name, extra in (("exact", {}), ("extrapolated", {"max_candidates": 0, "sample_size": 50})):
        cfg["analyses"] = {"exposure": {"canaries": "data/canaries.jsonl", **extra}}
        cfg["out"] = str(tmp_path / name)
        (audit_dir / f"exposure-{name}.yaml").write_text(yaml.safe_dump(cfg))  # beside data/
        r = CliRunner().invoke(app, ["audit", str(audit_dir / f"exposure-{name}.yaml"), "--quiet"])
        assert r.exit_code == 0, r.output
        tables[name] = pd.read_parquet(
            tmp_path / name / "models" / "memorizer" / "exposure" / "exposure.parquet"
        )
    assert set(tables["exact"]["method"]) == {"exact"}  # the default keeps the exact rank
    table = tables["extrapolated"]
    assert set(table["method"]) == {"extrapolated"} and table["rank"].isna().all()
    assert (table["exposure_bits"] == table["extrapolated_bits"]).all()
    # the memoriser's canaries: both estimates put them far above chance (log2 of 10^6 candidates ~ 19.9)
    assert (table["exposure_bits"] > 5).all() and (tables["exact"]["exposure_bits"] > 5).all()
    cfg["analyses"]["exposure"]["sample_size"] = 1
    with pytest.raises(ConfigError, match="sample_size"):
        parse_config(cfg, base_dir=str(audit_dir))


def test_the_audit_function_loads_the_file_and_passes_echo_and_redaction_to_run_audit(tmp_path, monkeypatch):
    import lmleak.audit
    import lmleak.audit.runner as runner

    seen = {}

    def fake_run_audit(cfg, **kw):
        seen.update(kw, cfg=cfg)
        return tmp_path / "run"

    monkeypatch.setattr(runner, "run_audit", fake_run_audit)
    path = tmp_path / "audit.yaml"
    (tmp_path / "c.jsonl").write_text('{"user_id": "u", "text": "hi"}\n')
    path.write_text(
        yaml.safe_dump(
            {
                "out": "run",
                "corpus": {"path": "c.jsonl"},
                "models": [{"name": "m", "path": f"fake:{tmp_path / 'c.jsonl'}"}],
            }
        )
    )
    lines: list[str] = []
    key = tmp_path / "key"
    assert (
        lmleak.audit.audit(path, force=True, echo=lines.append, redact=True, redact_key_file=key)
        == tmp_path / "run"
    )
    assert seen["cfg"] == load_config(path)
    assert (seen["force"], seen["echo"], seen["redact"], seen["redact_key_file"]) == (
        True,
        lines.append,
        True,
        key,
    )
    lmleak.audit.audit(path)  # the defaults of run_audit
    assert (seen["force"], seen["echo"], seen["redact"], seen["redact_key_file"]) == (
        False,
        None,
        False,
        None,
    )
