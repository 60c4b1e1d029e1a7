"""The CLI's options generated from a settings class (issue 34, :mod:`lmleak.cli.options`)."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from lmleak.cli.options import takes
from lmleak.errors import ConfigError
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
