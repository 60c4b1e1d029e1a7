"""``lmleak extract`` (cli/extract.py): the run it writes, what it prints, its errors."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from lmleak.attacks.extraction import METRICS
from lmleak.cli.common import out
from lmleak.cli.main import app
from lmleak.render.printouts import print_extraction
from tests.attacks.test_extraction import _corpus


def test_the_cli_writes_the_run_and_prints_verified_counts(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"user_id": d.user_id, "text": d.text}) + "\n" for d in _corpus()))
    prefixes = tmp_path / "p.txt"
    prefixes.write_text("please note\n\nhello there\n")
    res = CliRunner().invoke(
        app,
        [
            "extract",
            "--model",
            f"fake:{corpus}",
            "--corpus",
            str(corpus),
            "--out",
            str(tmp_path / "run"),
            "--num-samples",
            "8",
            "--max-new-tokens",
            "12",
            "--prefixes",
            str(prefixes),
            "--min-match-tokens",
            "6",
            "--prefix-tokens",
            "4",
            "--suffix-tokens",
            "4",
            "--quiet",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "verified_at_100 combined:" in res.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert set(summary["verified_at_100"]) == {"perplexity", "zlib", "lowercase", "window", "combined"}
    df = pd.read_parquet(tmp_path / "run" / "extract.parquet")
    assert set(df["prefix"]) == {"please note", "hello there"}
    public = tmp_path / "public.txt"
    public.write_text("hello there how are you\nthe weather is cold today\n")
    res = CliRunner().invoke(
        app,
        [
            "extract",
            "--model",
            f"fake:{corpus}",
            "--corpus",
            str(corpus),
            "--out",
            str(tmp_path / "run-pub"),
            "--num-samples",
            "4",
            "--max-new-tokens",
            "8",
            "--min-match-tokens",
            "2",
            "--public-model",
            f"fake:{public}",
            "--discoverable-docs",
            "0",
            "--json",
            "--quiet",
        ],
    )
    assert res.exit_code == 0, res.output
    pub = json.loads(res.output)
    assert "small" in pub["metrics"] and set(pub["verified_at_100"]) == set(METRICS)
    assert pub["scenario"]["resources"] == ["public_model"]
    res = CliRunner().invoke(
        app,
        [
            "extract",
            "--model",
            f"fake:{corpus}",
            "--corpus",
            str(corpus),
            "--out",
            str(tmp_path / "run2"),
            "--prefixes",
            str(tmp_path / "missing.txt"),
        ],
    )
    assert res.exit_code == 2


def test_the_summary_lines_name_each_metric_the_discoverable_share_and_the_run(capsys):
    summary = {
        "config": {"top_n": 5, "min_match_tokens": 8},
        "verified_at_5": {"perplexity": 2, "combined": 1},
        "discoverable": {"documents": 4, "n": 10, "p": 0.5, "discoverable_fraction": 0.25},
        "extracted": 3,
        "extracted_with_pii": 1,
    }
    print_extraction(out, summary, "r")
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["verified_at_5 perplexity: 2", "verified_at_5 combined: 1"]
    assert lines[2] == "discoverable (10, 0.5): 0.250 of 4 training prefixes"
    assert lines[3].startswith("extracted: 3 memorised samples (>= 8 tokens verbatim), 1 with PII")
    summary["discoverable"]["documents"] = 0  # --discoverable-docs 0: no discoverable line
    print_extraction(out, summary, "r")
    assert not any(ln.startswith("discoverable") for ln in capsys.readouterr().out.splitlines())
