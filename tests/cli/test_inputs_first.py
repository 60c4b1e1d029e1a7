"""Every input file is checked before any model loads (issue 33): a missing --canaries file was
reported only after 12 s of model loading. Each command here gets one missing input file and a model
loader that fails the test if it is called: exit 2, one line naming the file, no model loaded, no run."""

from __future__ import annotations

import importlib
import json
import sys

import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app

#: modules that load a model by their own name for it (``from lmleak.models.loading import load_model``)
LOADERS = (
    "lmleak.models.loading",
    "lmleak.attacks.exposure",
    "lmleak.attacks.membership",
    "lmleak.attacks.extraction",
    "lmleak.train.evaluate",
    "lmleak.probe.commands",
    "lmleak.ledger.ledger",
)


@pytest.fixture()
def no_model(monkeypatch):
    """Every model loader of lmleak, made to fail the test when called."""
    calls: list[str] = []

    def refuse(spec, *a, **kw):
        calls.append(str(spec))
        raise AssertionError(f"the model {spec!r} was loaded before the input files were checked")

    for name in LOADERS:
        importlib.import_module(name)
    for name, module in list(sys.modules.items()):
        if name.startswith("lmleak.") and callable(getattr(module, "load_model", None)):
            monkeypatch.setattr(module, "load_model", refuse)
    return calls


@pytest.fixture()
def corpus(tmp_path):
    p = tmp_path / "corpus.jsonl"
    p.write_text(
        "".join(json.dumps({"user_id": f"u{i % 3}", "text": f"hello number {i}"}) + "\n" for i in range(9))
    )
    return p


def _commands(tmp, corpus):
    missing = tmp / "missing.jsonl"
    model = f"fake:{corpus}"
    out = ["--out", str(tmp / "run")]
    return {
        "exposure --canaries": ["exposure", "--model", model, "--canaries", str(missing), *out],
        "mia --members/--non-members": [
            "mia", "--model", model, "--members", str(missing), "--non-members", str(corpus), *out,
        ],
        "mia --non-members (people never seen)": [
            "mia", "--model", model, "--corpus", str(corpus), "--non-members", str(missing), *out,
        ],
        "mia --corpus": ["mia", "--model", model, "--corpus", str(missing), *out],
        "extract --corpus": ["extract", "--model", model, "--corpus", str(missing), *out],
        "eval --corpus": ["eval", "--model", model, "--corpus", str(missing)],
        "report --corpus": ["report", "--model", model, "--corpus", str(missing), *out],
        "probe --subject": ["probe", "--model", model, "--subject", str(missing)],
        "probe run --subjects": ["probe", "run", "--model", model, "--subjects", str(missing), *out],
    }  # fmt: skip


CASES = [
    "exposure --canaries",
    "mia --members/--non-members",
    "mia --non-members (people never seen)",
    "mia --corpus",
    "extract --corpus",
    "eval --corpus",
    "report --corpus",
    "probe --subject",
    "probe run --subjects",
]


@pytest.mark.parametrize("case", CASES)
def test_a_missing_input_file_exits_2_before_any_model_loads(tmp_path, corpus, no_model, case):
    args = _commands(tmp_path, corpus)[case]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert res.exit_code == 2, (res.output, repr(res.exception))
    assert "missing.jsonl" in res.output and "Traceback" not in res.output
    assert no_model == [], no_model
    assert not (tmp_path / "run").exists()


def test_every_command_case_is_listed(tmp_path, corpus):
    assert sorted(_commands(tmp_path, corpus)) == sorted(CASES)
