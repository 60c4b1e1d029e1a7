"""`lmleak report` and its studies through the CLI (typer's CliRunner against the real app), and the
defaults it shares with the library and the audit config."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from lmleak.audit.config import parse_config
from lmleak.cli.main import app
from lmleak.data.corpus import Corpus, Document
from lmleak.report.leakage import ReportConfig
from lmleak.report.metrics import DEFAULT_KS, default_ks

TEXTS = [
    "hello my name is ada and my phone is 555 0100",
    "thank you very much for the call today",
    "my order number is 4 4 1 2 and it is late",
    "the weather is nice today thank you",
    "please call me back at 555 0199 thank you",
    "my name is bob and i like cats very much",
]


def _save_model(out, texts, seed=0):
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    tok = build_tokenizer(texts, kind="word", vocab_size=200)
    module = new_small_gpt(
        len(tok), SmallGPTConfig(n_positions=64, n_embd=32, n_layer=1, n_head=2), seed=seed
    )
    return save_small_model(module, tok, out)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    corpus = Corpus([Document(f"u{i % 4}", f"d{i}", t) for i, t in enumerate(TEXTS)])
    corpus_path = corpus.write_jsonl(root / "corpus.jsonl")
    model = _save_model(root / "model", TEXTS)
    for epoch in (1, 2):
        _save_model(model / "snapshots" / f"epoch-{epoch}", TEXTS, seed=epoch)
    return root, corpus_path, model


def _app():
    return app


def test_report_runs_with_several_k_after_one_flag_and_prints_json(setup):
    root, corpus, model = setup
    out = root / "run"
    res = CliRunner().invoke(
        _app(),
        [
            "report",
            "--model",
            str(model),
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            "--k",
            "1",
            "10",
            "--p",
            "3",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["ks"] == [1, 10] and summary["k"] == 1
    assert set(summary["by_k"]) == {"1", "10"}
    assert summary["by_k"]["10"]["num_sequences"] >= summary["by_k"]["1"]["num_sequences"]
    assert summary["leakage_epsilon"] is None  # no public model
    assert json.loads((out / "summary.json").read_text())["schema_version"] == 1
    seqs = pd.read_parquet(out / "sequences.parquet")
    assert set(seqs["k"]) <= {1, 10}


def test_report_with_a_public_model_and_a_table(setup):
    root, corpus, model = setup
    res = CliRunner().invoke(
        _app(),
        [
            "report",
            "--model",
            str(model),
            "--corpus",
            str(corpus),
            "--out",
            str(root / "run2"),
            "--k",
            "10",
            "--public-model",
            str(model / "snapshots" / "epoch-1"),
            "--quiet",
        ],
    )
    assert res.exit_code == 0, res.output
    s = json.loads((root / "run2" / "summary.json").read_text())
    assert s["public_model"]["kind"] == "model"
    if s["unique_sequences"]:
        assert s["leakage_epsilon"] is not None and s["leakage_epsilon"] > 0


def test_missing_options_and_bad_k_exit_2_with_one_line(setup):
    root, corpus, model = setup
    res = CliRunner().invoke(_app(), ["report", "--model", str(model)])
    assert res.exit_code == 2 and "missing --corpus, --out" in res.output
    res = CliRunner().invoke(
        _app(),
        ["report", "--model", str(model), "--corpus", str(corpus), "--out", str(root / "x"), "--k", "0"],
    )
    assert res.exit_code == 2 and "'--k': must be a whole number >= 1" in res.output


def test_snapshots_study_writes_the_fig5_tables_and_plots(setup):
    root, corpus, model = setup
    out = root / "snap"
    res = CliRunner().invoke(
        _app(),
        [
            "report",
            "snapshots",
            "--model",
            str(model),
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            "--k",
            "10",
            "--val",
            str(corpus),
            "--quiet",
        ],
    )
    assert res.exit_code == 0, res.output
    table = pd.read_parquet(out / "snapshots.parquet")
    assert table["epoch"].tolist() == [1, 2]
    assert table["val_perplexity"].notna().all() and table["train_perplexity"].notna().all()
    for png in ("fig5a_perplexity.png", "fig5b_unique_lengths.png", "fig5c_unique_perplexity.png"):
        assert (out / png).stat().st_size > 1000
    assert len(list((out / ".index-cache").iterdir())) == 1  # one index for every epoch


def test_compare_and_hardening_studies(setup):
    root, corpus, model = setup
    out = root / "cmp"
    res = CliRunner().invoke(
        _app(),
        [
            "report",
            "compare",
            "--model",
            f"a={model}",
            "--model",
            f"b={model / 'snapshots' / 'epoch-2'}",
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            "--k",
            "10",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["model"] for r in rows] == ["a", "b"]
    assert all(isinstance(r["unique_sequences"], int) for r in rows)
    res = CliRunner().invoke(
        _app(),
        [
            "report",
            "hardening",
            "--run",
            str(out / "a"),
            "--k",
            "10",
            "--threshold",
            "5",
            "--threshold",
            "50",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    curve = json.loads(res.stdout)
    assert [c["threshold"] for c in curve[:2]] == [5.0, 50.0]
    assert curve[0]["accuracy"] <= curve[1]["accuracy"] <= curve[2]["accuracy"]
    assert (out / "a" / "hardening.png").exists()


def test_report_against_a_top_k_black_box_uses_only_its_k(setup):
    pytest.importorskip("lmleak.models.blackbox")
    root, corpus, model = setup
    out = root / "api"
    res = CliRunner().invoke(
        _app(),
        [
            "report",
            "--model",
            str(model),
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            "--api-top-k",
            "5",
            "--k",
            "1",
            "5",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["ledger"]["access"] == "topk_ranks" and s["ledger"]["k_available"] == 5
    assert s["perplexity"] is None  # a black box reveals no probabilities
    full = json.loads((root / "run" / "summary.json").read_text())  # same model, full access, k = 1 10
    assert s["by_k"]["1"]["num_sequences"] == full["by_k"]["1"]["num_sequences"]
    res = CliRunner().invoke(
        _app(),
        [
            "report",
            "--model",
            str(model),
            "--corpus",
            str(corpus),
            "--out",
            str(root / "api2"),
            "--api-top-k",
            "5",
            "--k",
            "6",
        ],
    )
    assert res.exit_code == 2 and "k=6 is not available" in res.output


# One default per concept: the CLI, the audit config's report section and ReportConfig agree.
def _cli_defaults(name: str) -> dict[str, object]:
    cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {p.name: p.default for p in cmd.params}


def test_report_cli_audit_config_and_library_share_their_defaults():
    """One class (issue 34): the CLI's defaults are its fields', the audit's `report: {}` is it."""
    cli = _cli_defaults("report")
    lib = {f.name: f.default for f in dataclasses.fields(ReportConfig)}
    base = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]}
    assert parse_config({**base, "analyses": {"report": {}}}).analyses.report == ReportConfig()
    for key in ("t", "p", "public_occurrences", "pii_policy", "min_tokens", "public_context_tokens"):
        assert cli[key] == lib[key], key
    assert lib["p"] == 5


def test_k_has_one_default_and_a_top_1_api_keeps_only_k_1(setup):
    assert ReportConfig().k == DEFAULT_KS == (1, 3)
    assert default_ks(None) == DEFAULT_KS
    root, corpus, model = setup
    runs = {}
    for name, extra in (("default-k", []), ("top1-k", ["--api-top-k", "1"])):
        res = CliRunner().invoke(
            _app(),
            [
                "report",
                "--model",
                str(model),
                "--corpus",
                str(corpus),
                "--out",
                str(root / name),
                "--json",
                *extra,
            ],
        )
        assert res.exit_code == 0, res.output
        runs[name] = json.loads(res.stdout)
    assert runs["default-k"]["ks"] == [1, 3] and sorted(runs["default-k"]["by_k"]) == ["1", "3"]
    assert runs["top1-k"]["ks"] == [1] and sorted(runs["top1-k"]["by_k"]) == ["1"]
