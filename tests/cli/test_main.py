"""lmleak.cli.main: the root app, its global options and the one place errors become exit codes."""

from __future__ import annotations

import importlib

import pytest
from typer.testing import CliRunner

from lmleak import progress
from lmleak.cli.main import AREAS, _one_line, _where, build_app
from lmleak.errors import ConfigError


@pytest.fixture
def app_with(monkeypatch):
    """A fresh root app with one extra command that raises what the test gives it."""
    monkeypatch.delenv("LMLEAK_DEBUG", raising=False)
    monkeypatch.setattr(progress, "_ENABLED", progress.enabled())  # restored after the test

    def make(exc):
        app = build_app()

        @app.command("boom")
        def boom() -> None:
            raise exc

        return app

    return make


def test_every_area_registers_its_commands():
    app = build_app()
    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    for area in AREAS:  # each area module is importable and exposes register(app, groups)
        assert callable(importlib.import_module(area).register), area
    assert {"report", "dedup", "redact", "split", "confidentiality", "synth", "corpus", "pii"} <= names
    res = CliRunner().invoke(app, ["--help"])
    assert res.exit_code == 0 and all(n in res.stdout for n in ("report", "synth", "corpus"))


def test_a_user_error_is_one_line_and_exit_2_and_debug_shows_it(app_with, monkeypatch):
    app = app_with(ConfigError("bad value\nsecond line", field="--x", hint="use 1"))
    res = CliRunner().invoke(app, ["boom"])
    assert res.exit_code == 2
    line = " ".join(res.output.split())
    assert line.startswith("error:") and "bad value second line" in line and "Traceback" not in res.output
    res = CliRunner().invoke(app, ["--debug", "boom"])
    assert isinstance(res.exception, ConfigError)  # the traceback, not the one line
    monkeypatch.setenv("LMLEAK_DEBUG", "1")
    assert isinstance(CliRunner().invoke(app, ["boom"]).exception, ConfigError)


def test_an_unexpected_error_names_its_type_and_place_never_its_message(app_with):
    res = CliRunner().invoke(app_with(RuntimeError("the patient is Ada Smith")), ["boom"])
    out = " ".join(res.output.split())
    assert res.exit_code == 2 and "unexpected RuntimeError" in out and "test_main.py:" in out
    assert "Ada Smith" not in res.output


def test_an_os_error_names_the_path_and_exits_2(app_with):
    res = CliRunner().invoke(app_with(IsADirectoryError(21, "Is a directory", "/tmp/x")), ["boom"])
    assert res.exit_code == 2 and "Is a directory: /tmp/x" in " ".join(res.output.split())


def test_an_interrupt_exits_130_and_says_how_to_resume(app_with):
    res = CliRunner().invoke(app_with(KeyboardInterrupt()), ["boom"])
    assert res.exit_code == 130 and "resume with: lmleak" in " ".join(res.output.split())


def test_the_global_quiet_turns_progress_off(app_with):
    progress.set_enabled(True)
    assert CliRunner().invoke(app_with(ConfigError("x")), ["--quiet", "boom"]).exit_code == 2
    assert progress.enabled() is False


def test_the_global_q_is_the_global_quiet_and_every_command_keeps_its_own_q(app_with, tmp_path):
    """Issue 29 item 6: `lmleak -q COMMAND` was refused ("No such option: -q") though every command takes -q."""
    progress.set_enabled(True)
    assert CliRunner().invoke(app_with(ConfigError("x")), ["-q", "boom"]).exit_code == 2
    assert progress.enabled() is False
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"user_id": "u1", "text": "Write to Ann Lee <ann.lee@example.org> today."}\n')
    for args in (["-q", "probe", "build"], ["probe", "build", "-q"], ["-q", "probe", "build", "-q"]):
        progress.set_enabled(True)
        out = tmp_path / f"s{len(args)}{args[0]}.jsonl"
        res = CliRunner().invoke(build_app(), [*args, "--corpus", str(corpus), "--out", str(out)])
        assert res.exit_code == 0, res.output
        assert progress.enabled() is False and out.is_file()


def test_one_line_and_where():
    assert _one_line("  a\n\n  b  \n") == "a b" and _one_line("") == ""
    assert len(_one_line("x" * 5000)) == 2000
    try:
        raise ValueError("v")
    except ValueError as e:
        assert _where(e).startswith(" at ") and _where(e).endswith(
            f":{e.__traceback__.tb_lineno}"  # type: ignore[union-attr]
        )
    assert _where(ValueError("never raised")) == ""
