"""``lmleak --help`` in panels, and every command's help: one sentence, then an example that runs.

Each command's and group's help opens with a paragraph of one sentence (what the command list shows),
then a paragraph of ``Example: lmleak ...`` lines. Each example is parsed as the command line it is:
it must reach the command whose help shows it (or, for a group, one of its commands) and parse there
with every required option given and no unknown one (the command itself is not run).
"""

from __future__ import annotations

import inspect
import re
import shlex
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from lmleak.cli.main import PANEL_OF, PANELS, build_app

#: abbreviations that end in a full stop inside a sentence
_ABBREVIATIONS = re.compile(r"(?:\bet al|\be\.g|\bi\.e|\bvs|\bProp|\bThm|\bFigs?|\bEq|\bSec|\bcf|\bno)\.$")


def _commands() -> list[tuple[tuple[str, ...], Any]]:
    """Every command and group below the root, with its path (``("probe", "run")``)."""
    out = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(cmd, "commands", {}).items():
            out.append(((*path, name), sub))
            walk(sub, (*path, name))

    walk(typer.main.get_command(build_app()), ())
    return out


def _paragraphs(help_text: str | None) -> list[str]:
    text = inspect.cleandoc(help_text or "")
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def sentences(paragraph: str) -> int:
    """Sentences in a paragraph: a full stop, ! or ? followed by a space and a capital (or the end),
    not after an abbreviation such as "et al." or "Prop.".

    >>> sentences("Canary exposure (Carlini et al. 2019; paper 002 §5.1): the rank of each canary.")
    1
    >>> sentences("Check the answers. Under a minute.")
    2
    """
    text = " ".join(paragraph.split())
    count = 0
    for m in re.finditer(r"[.!?](?=\s+[A-Z(`\"']|$)", text):
        if not _ABBREVIATIONS.search(text[: m.end()]):
            count += 1
    return count


def help_problems(path: tuple[str, ...], help_text: str | None) -> list[str]:
    """What is wrong with a command's help: the first paragraph is not one sentence, or the second
    is not ``Example: lmleak <path> ...`` lines."""
    name = " ".join(path)
    paras = _paragraphs(help_text)
    problems = []
    if not paras or sentences(paras[0]) != 1 or not paras[0].endswith((".", "?", "!")):
        problems.append(f"lmleak {name}: the help must open with one sentence, got {paras[:1]}")
    elif "\n" in paras[0]:  # the command list shows the line breaks: one line reads whole
        problems.append(f"lmleak {name}: the opening sentence must be one line")
    lines = paras[1].splitlines() if len(paras) > 1 else []
    if not lines or not all(line.startswith("Example: lmleak ") for line in lines):
        problems.append(f"lmleak {name}: the second paragraph must be 'Example: lmleak {name} ...' lines")
    return problems


def examples(help_text: str | None) -> list[list[str]]:
    """The argument lists of the help's ``Example: lmleak ...`` lines (without ``lmleak``)."""
    paras = _paragraphs(help_text)
    lines = paras[1].splitlines() if len(paras) > 1 else []
    return [
        shlex.split(line.removeprefix("Example: lmleak ")) for line in lines if line.startswith("Example:")
    ]


def _parse(root: Any, argv: list[str]) -> tuple[str, ...]:
    """Follow ``argv`` down the command tree and parse the rest at the command it reaches (raises a
    usage error on an unknown or missing option); returns the path reached."""
    cmd, path, rest = root, (), list(argv)
    while rest and rest[0] in getattr(cmd, "commands", {}):
        cmd, path, rest = cmd.commands[rest[0]], (*path, rest[0]), rest[1:]
    cmd.make_context(" ".join(("lmleak", *path)), rest)
    return path


def _command_at(root: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        root = root.commands[name]
    return root


@pytest.fixture(scope="module")
def commands():
    return _commands()


def test_every_top_level_command_sits_in_a_panel_and_every_panel_is_used(commands):
    top = {path[0] for path, _ in commands}
    assert top == set(PANEL_OF), "give each command a panel in lmleak.cli.main.PANEL_OF"
    assert set(PANEL_OF.values()) == set(PANELS)
    for path, cmd in commands:
        if len(path) == 1:
            assert cmd.rich_help_panel == PANEL_OF[path[0]], path


def test_lmleak_help_shows_the_panels_in_order_with_each_command_under_its_own(commands):
    out = CliRunner().invoke(build_app(), ["--help"], env={"COLUMNS": "200"}).stdout
    titles = re.findall(r"╭─ (.+?) ─", out)
    assert titles == ["Options", *PANELS]  # no catch-all "Commands" panel
    where = {}
    panel = None
    for line in out.splitlines():
        title = re.match(r"╭─ (.+?) ─", line)
        if title:
            panel = title.group(1)
        row = re.match(r"│ ([a-z][a-z-]*) ", line)
        if row and panel in PANELS:
            where[row.group(1)] = panel
    assert where == PANEL_OF


def test_every_command_help_opens_with_one_sentence_then_an_example(commands):
    problems = [p for path, cmd in commands for p in help_problems(path, cmd.help)]
    assert not problems, "\n".join(problems)


def test_every_example_reaches_its_command_and_parses_there(commands):
    root = typer.main.get_command(build_app())
    bad = []
    for path, cmd in commands:
        for argv in examples(cmd.help):
            try:
                reached = _parse(root, argv)
            except Exception as e:  # a usage error: an unknown option, a missing required one
                bad.append(f"lmleak {shlex.join(argv)}: {type(e).__name__}: {e}")
                continue
            # one command may sit at two paths (lmleak kart experiment = lmleak experiment kart)
            if reached[: len(path)] != path and _command_at(root, reached).help != cmd.help:
                bad.append(f"lmleak {' '.join(path)} shows an example of lmleak {' '.join(reached)}")
    assert not bad, "\n".join(bad)


def test_the_help_checks_catch_planted_violations():
    root = typer.main.get_command(build_app())
    assert help_problems(("x",), "Does a thing. And another.\n\nExample: lmleak x") == [
        "lmleak x: the help must open with one sentence, got ['Does a thing. And another.']"
    ]
    assert help_problems(("x",), "Does a thing (Carlini et al. 2019).\n\nRuns it.") == [
        "lmleak x: the second paragraph must be 'Example: lmleak x ...' lines"
    ]
    assert help_problems(("x",), "Does a thing, e.g. this.\n\nExample: lmleak x --y 1") == []
    with pytest.raises(Exception, match="No such option"):
        _parse(root, ["exposure", "--model", "m", "--canaries", "c", "--out", "o", "--bogus"])
    assert help_problems(("x",), "Does a thing\nover two lines.\n\nExample: lmleak x") == [
        "lmleak x: the opening sentence must be one line"
    ]
    with pytest.raises(Exception, match="Missing parameter: canaries"):
        _parse(root, ["exposure", "--model", "m"])
    assert _parse(root, ["probe", "run", "--model", "m", "--subjects", "s.jsonl", "--out", "o"]) == (
        "probe",
        "run",
    )
