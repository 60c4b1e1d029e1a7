"""``examples/``: each script runs as a user runs it (as ``__main__``, with its command-line
arguments; in this process, which saves the second import of torch) on a tiny model, prints what its
run directory holds, and imports nothing but the public API (``from lmleak import ...``)."""

from __future__ import annotations

import ast
import json
import runpy
import sys
from pathlib import Path

from typer.testing import CliRunner

import lmleak
from lmleak.cli.main import build_app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
#: every example and the test that runs it (a new script must be added here)
RUN_BY = {"audit_in_python.py": "test_audit_in_python_audits_a_tiny_model_and_prints_its_headlines"}


def _run(script: Path, *args: str, cwd: Path, monkeypatch) -> int:
    """``python script args...`` run from ``cwd``; its exit status."""
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", [str(script), *args])
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as e:
        return int(e.code or 0)
    return 0


def test_every_example_is_run_by_a_test_and_uses_only_the_public_api():
    assert [p.name for p in EXAMPLES] == sorted(RUN_BY)
    for name, test in RUN_BY.items():
        assert callable(globals().get(test)), f"{name}: no test named {test}"
    for p in EXAMPLES:
        tree = ast.parse(p.read_text())
        assert ast.get_docstring(tree), f"{p.name} says nothing about what it shows"
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lmleak"):
                assert node.module == "lmleak", f"{p.name}:{node.lineno} imports {node.module}"
                assert {a.name for a in node.names} <= set(lmleak.__all__), f"{p.name}:{node.lineno}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("lmleak.") for a in node.names), f"{p.name}:{node.lineno}"


def test_audit_in_python_audits_a_tiny_model_and_prints_its_headlines(tmp_path, monkeypatch, capsys):
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.customersim import synthesize
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model

    paths = synthesize(tmp_path / "data", users=6, dialogs_per_user=2, seed=1)
    # a one-layer GPT, two epochs: seconds on a CPU; a third of the users held out for membership
    cfg = TrainConfig(
        mode="nodp",
        epochs=2,
        batch_size=8,
        seq_len=32,
        n_embd=32,
        n_layer=1,
        n_head=2,
        vocab_size=300,
        holdout_users=0.34,
    )
    train_model(load_corpus(paths["corpus"]), tmp_path / "model", cfg, progress=False)

    capsys.readouterr()
    status = _run(
        ROOT / "examples" / "audit_in_python.py",
        "model",
        "data/corpus.jsonl",
        "run",
        cwd=tmp_path,
        monkeypatch=monkeypatch,
    )
    printed = capsys.readouterr().out
    assert status == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    model = summary["models"]["audited"]
    assert set(model["stages"]) == {"report", "mia"} and not model["skipped"]
    stage = {
        s: json.loads((tmp_path / "run" / rel / "summary.json").read_text())
        for s, rel in model["stages"].items()
    }
    rep, mia = stage["report"], stage["mia"]
    # the verdict through the other route: `lmleak gate RUN --json` under the config's gate: section
    gate = CliRunner().invoke(build_app(), ["gate", str(tmp_path / "run"), "--json"])
    verdict = json.loads(gate.stdout)
    assert gate.exit_code == (0 if verdict["passed"] else 1)

    def g3(x):  # three significant digits; None: not measured
        return "not measured" if x is None else f"{x:.3g}"

    def ci(pair):
        return f"[{g3(pair[0])}, {g3(pair[1])}]"

    assert printed.splitlines() == [
        f"audited: unique_sequences = {rep['unique_sequences']} (95 % interval {ci(rep['unique_sequences_ci'])})",
        f"audited: mia_auc = {g3(mia['mia_auc'])} (95 % interval {ci(mia['mia_auc_ci'])}; "
        f"placebo {g3(mia['placebo_auc'])}, blind baseline {g3(mia['blind_auc'])})",
        f"verdict: {'pass' if verdict['passed'] else 'fail'}",
        *(
            f"  {c['model']}: {c['metric']} = {g3(c['value'])} (limit {g3(c['limit'])}): {c['status']}"
            for c in verdict["checks"]
        ),
        f"report: {tmp_path / 'run' / 'report.html'}",
    ]
    assert (tmp_path / "run" / "report.html").exists()
