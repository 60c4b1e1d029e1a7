"""``lmleak train``'s options in panels, the long tail behind ``--help-all``, and ``--config train.yaml``
with the same keys as the options (issue 29 item 2)."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

import lmleak.cli.models as cli_models
import lmleak.train.run as train_run
from lmleak.cli.main import build_app
from lmleak.cli.models import TRAIN_PANELS


def _train() -> typer.core.TyperCommand:
    return typer.main.get_command(build_app()).commands["train"]


def _help(*args: str) -> str:
    res = CliRunner().invoke(build_app(), ["train", *args], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res.stdout


def test_every_train_option_sits_in_one_panel_and_the_panels_come_in_order():
    panels = {p.name: p.rich_help_panel for p in _train().params}
    assert set(panels.values()) == set(TRAIN_PANELS), panels  # a setting's panel is its field's
    for text in (_help("--help"), _help("--help-all")):
        assert re.findall(r"╭─ (.+?) ─", text) == list(TRAIN_PANELS)


def test_help_shows_the_common_options_and_help_all_every_one():
    train = _train()
    flags = {p.opts[0]: p.hidden for p in train.params}
    short, every = _help("--help"), _help("--help-all")
    for flag, hidden in flags.items():
        pattern = re.compile(re.escape(flag) + r"[\s,]")
        assert pattern.search(every), f"--help-all does not show {flag}"
        assert bool(pattern.search(short)) == (not hidden), flag
    assert "--help-all shows every one" in short
    assert sum(flags.values()) >= 20  # the long tail is long


@pytest.fixture
def captured(monkeypatch):
    """The config ``lmleak train`` builds (the training itself is not run)."""
    seen = {}

    def fake(corpus, out_dir, cfg, **kw):
        seen.update(corpus=corpus, out_dir=out_dir, cfg=cfg, **kw)
        return object()

    monkeypatch.setattr(train_run, "train_and_summarise", fake)
    monkeypatch.setattr(cli_models, "_print_result", lambda *a: None)
    return seen


def _run(*args: str):
    return CliRunner().invoke(build_app(), ["train", *args])


def test_a_config_file_sets_the_same_config_as_the_options_and_the_command_line_wins(tmp_path, captured):
    options = ["--corpus", "c.jsonl", "--out", "m", "--epochs", "3", "--batch-size", "8", "--mode", "dp"]
    options += ["--target-epsilon", "4", "--context", "64", "--no-health-checks", "--holdout-users", "0.25"]
    assert _run(*options).exit_code == 0
    by_options = dict(captured)
    cfg = tmp_path / "train.yaml"
    cfg.write_text(
        "corpus: c.jsonl\nout: m\nepochs: 3\nbatch-size: 8\nmode: dp\ntarget_epsilon: 4\n"
        "context: 64\nhealth-checks: false\nholdout-users: 0.25\n"
    )
    captured.clear()
    assert _run("--config", str(cfg)).exit_code == 0
    assert captured == by_options
    assert (captured["cfg"].epochs, captured["cfg"].seq_len, captured["cfg"].health_checks) == (3, 64, False)
    captured.clear()
    assert _run("--config", str(cfg), "--epochs", "7").exit_code == 0  # the command line wins
    assert captured["cfg"].epochs == 7 and captured["cfg"].batch_size == 8


def test_a_missing_config_file_exits_2_naming_it(tmp_path, captured):
    res = _run("--config", str(tmp_path / "nope.yaml"), "--corpus", "c.jsonl", "--out", "m")
    assert res.exit_code == 2 and "nope.yaml: file does not exist" in " ".join(res.output.split())
    assert not captured


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("corpus: c.jsonl\nout: m\nepoch: 3\n", "unknown key 'epoch'. Did you mean 'epochs'?"),
        ("corpus: c.jsonl\nout: m\nepochs: 0\n", "field 'epochs': must be a whole number >= 1, got 0"),
        ("corpus: c.jsonl\nout: m\nlr: nan\n", "field 'lr': must be a finite number > 0, got nan"),
        (
            "corpus: c.jsonl\nout: m\nseq-len: 32\ncontext: 64\n",
            "'context' sets the same option as 'seq-len'",
        ),
        ("- epochs: 3\n", "a train config is a mapping of option: value"),
        ("corpus: c.jsonl\nout: m\nconfig: other.yaml\n", "unknown key 'config'"),
    ],
)
def test_a_bad_config_exits_2_with_one_line_naming_the_file_and_key_before_any_work(
    tmp_path, captured, text, message
):
    cfg = tmp_path / "train.yaml"
    cfg.write_text(text)
    res = _run("--config", str(cfg))
    line = " ".join(res.output.split())
    assert res.exit_code == 2 and message in line and str(cfg) in line, res.output
    assert not captured  # nothing trained, nothing written
