"""Owner-only outputs (issue 16, item 6): every file lmleak writes is 0600 and every folder 0700 —
run directories, trained models, logs, plots, synthetic corpora and their secrets files — whether
written through the CLI or the library, even when the caller's umask is the usual 0o022."""

from __future__ import annotations

import json
import os
import stat

import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app


@pytest.fixture(autouse=True)
def permissive_umask():
    """Start each test from a world-readable umask; lmleak must tighten it itself."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def _modes(root):
    """(path, mode) of every folder and file below ``root``, root included; links are not followed."""
    found = [(root, stat.S_IMODE(os.lstat(root).st_mode))]
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            found.append((p, stat.S_IMODE(os.lstat(p).st_mode)))
    return found


def _assert_owner_only(root):
    entries = _modes(root)
    assert len(entries) > 2
    bad = [
        (p, oct(m))
        for p, m in entries
        if (os.path.isdir(p) and m != 0o700) or (os.path.isfile(p) and m != 0o600)
    ]
    assert not bad, bad


def test_a_synth_corpus_through_the_cli_is_owner_only(tmp_path):
    out = tmp_path / "nested" / "synth"
    res = CliRunner().invoke(
        app,
        [
            "synth",
            "customersim",
            "--out",
            str(out),
            "--users",
            "3",
            "--dialogs-per-user",
            "1",
            "--canaries",
            "1",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert (out / "secrets.jsonl").exists()
    _assert_owner_only(tmp_path / "nested")


def test_a_report_run_its_html_and_plots_through_the_library_are_owner_only(tmp_path):
    from lmleak.data.corpus import Corpus, Document
    from lmleak.models.fake import FakeLM
    from lmleak.render.html import render_report
    from lmleak.report.leakage import ReportConfig, run_report
    from lmleak.report.studies import hardening_study

    texts = [f"user {i} wrote to u{i}@example.org about code {i * 7919 % 1000}" for i in range(8)]
    run = tmp_path / "runs" / "report"
    run_report(
        FakeLM.from_texts(texts, order=2),
        Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)]),
        run,
        ReportConfig(k=(1, 3)),
    )
    render_report(run)
    hardening_study(run, None, [2.0])
    assert (run / "ledger").is_dir() and (run / "report.html").exists() and (run / "hardening.png").exists()
    _assert_owner_only(tmp_path / "runs")


def test_an_audit_run_with_its_log_through_the_cli_is_owner_only(tmp_path):
    texts = [f"user {i} wrote to u{i}@example.org about code {i * 7919 % 1000}" for i in range(8)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"text": t, "user_id": f"u{i}"}) + "\n" for i, t in enumerate(texts))
    )
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(
        f"out: audits/run\ncorpus: {{path: corpus.jsonl}}\nmodels: [{{name: m, path: 'fake:{corpus}'}}]\n"
        "analyses: {report: {k: [1]}}\n"
    )
    res = CliRunner().invoke(app, ["audit", str(cfg), "--quiet"])
    assert res.exit_code == 0, res.output
    run = tmp_path / "audits" / "run"
    assert (run / "audit.log").exists() and (run / "models" / "m" / "report" / "summary.json").exists()
    _assert_owner_only(tmp_path / "audits")


def test_a_trained_model_is_owner_only(tmp_path):
    from lmleak.data.corpus import Corpus, Document
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model

    corpus = Corpus(
        [
            Document(f"u{i % 3}", f"d{i}", f"call 555-01{i:02d} about the parser, said user {i}")
            for i in range(12)
        ]
    )
    out = tmp_path / "models" / "tiny"
    train_model(
        corpus,
        out,
        TrainConfig(
            epochs=1,
            batch_size=4,
            seq_len=16,
            vocab_size=80,
            n_embd=16,
            n_head=2,
            n_layer=1,
            holdout_users=0.0,
        ),
        progress=False,
    )
    assert any(p.suffix == ".safetensors" for p in out.iterdir())
    _assert_owner_only(tmp_path / "models")
