"""The CLI's options generated from a settings class (issue 34, :mod:`lmleak.cli.options`)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import typer
from typer.testing import CliRunner

from lmleak.cli.options import takes
from lmleak.errors import ConfigError
from lmleak.settings import Settings, setting
from tests.test_settings import Knobs


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @takes(settings=(Knobs, ("references",)))
    def cmd(name: str, settings: Knobs, as_json: bool = False) -> None:
        typer.echo(repr(settings))

    @app.command()
    def other() -> None:  # a second command: Typer then names them
        pass

    return app


def test_options_are_generated_from_the_fields():
    runner = CliRunner()
    res = runner.invoke(_app(), ["cmd", "x", "--shots", "2", "--no-blind", "--extrapolate", "--groups", "5"])
    assert res.exit_code == 0, res.output
    assert "Knobs(shots=2, share=0.5, groups=5, engine='local', blind=False, extrapolate=True" in res.output
    assert "references=(), windows=(1, 5))" in res.output  # skipped and cli=False fields keep defaults
    help_text = runner.invoke(_app(), ["cmd", "--help"]).output
    assert "--shots" in help_text and "Examples in the prefix." in help_text
    assert "--windows" not in help_text and "--loaded" not in help_text and "--reference" not in help_text
    bad = runner.invoke(_app(), ["cmd", "x", "--shots", "0"])
    assert bad.exit_code == 2 and "must be a whole number >= 1" in bad.output
    nan = runner.invoke(_app(), ["cmd", "x", "--share", "nan"])
    assert nan.exit_code == 2 and "--share" in nan.output


def test_a_rule_across_fields_names_the_option():
    with pytest.raises(ConfigError, match="field '--groups': groups must be at most"):
        _app().registered_commands[0].callback(name="x", shots=1, groups=11)  # type: ignore[misc]


@dataclass(frozen=True)
class Sized(Settings):
    size: int = setting(10, help="Texts drawn.", ge=1, old="--n")


def test_an_old_spelling_is_hidden_works_and_disagreeing_with_the_new_one_is_refused():
    """``setting(old=...)``: the deprecated spelling reaches the same field, is hidden from --help,
    notes its one deprecation line (naming the command), and refuses a different value beside the new one."""
    from lmleak.cli import common

    app = typer.Typer()

    @app.command()
    @takes(settings=Sized)
    def draw(ctx: typer.Context, settings: Sized) -> None:
        typer.echo(repr(settings))

    @app.command()
    def other() -> None:
        pass

    runner = CliRunner()
    common._DEPRECATED.clear()
    old = runner.invoke(app, ["draw", "--n", "3"])
    assert old.exit_code == 0 and "Sized(size=3)" in old.output, old.output
    assert common._DEPRECATED == ["`lmleak draw --n` is now `lmleak draw --size`"]
    common._DEPRECATED.clear()
    assert "Sized(size=4)" in runner.invoke(app, ["draw", "--size", "4"]).output and not common._DEPRECATED
    assert "--n" not in runner.invoke(app, ["draw", "--help"]).output
    both = runner.invoke(app, ["draw", "--n", "3", "--size", "4"])
    assert both.exit_code != 0 and isinstance(both.exception, ConfigError)
    assert "--n and --size disagree" in str(both.exception)
    assert runner.invoke(app, ["draw", "--n", "0"]).exit_code == 2  # the range holds for the old spelling
    common._DEPRECATED.clear()
