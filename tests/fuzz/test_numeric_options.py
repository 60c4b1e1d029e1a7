"""Bad numbers fail fast (issue 25 item 6): every numeric option of every command, read from the
Typer app (none is listed by hand), is driven with NaN, ±inf, 0, -1 and a huge value.

Each invocation must exit 0 or 2 — never 1, a traceback, "unexpected …" or a hang — and a
refused one must leave no run folder behind. NaN and ±inf for a float option must be refused by
the option itself (its name in the message), before any work. Values the option accepts are run
until the first missing input file (or an output folder that cannot be created), so the test
stays fast: it checks the validation, not the work.
"""

from __future__ import annotations

import json
import signal
import typing
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from lmleak.cli.main import app

FLOAT_VALUES = ("nan", "inf", "-inf", "0", "-1", "1e300")
INT_VALUES = ("nan", "0", "-1", str(10**18))
TIMEOUT_S = 60  # a hang fails the test (the accountant once looped forever on NaN)
# options a command needs to get going, given a path that does not exist
INPUTS = ("model", "corpus", "subject", "canaries", "members", "run", "run_dir", "config", "spec")


def _commands(cmd, path=()):
    """(path, command) for every command, and every group whose callback takes options."""
    if hasattr(cmd, "commands"):
        if path and any(getattr(p, "type_descriptor", None) is not None for p in cmd.params):
            yield path, cmd
        for name, sub in cmd.commands.items():
            yield from _commands(sub, (*path, name))
    else:
        yield path, cmd


def _kind(param) -> type | None:
    """int or float for a numeric option (also ``int | None`` and ``list[int]``), else None."""
    td = getattr(param, "type_descriptor", None)
    if td is None:
        return None
    ann = td.annotation
    for a in typing.get_args(ann) or (ann,):
        a = (typing.get_args(a) or (a,))[0] if typing.get_origin(a) is list else a
        if a in (int, float):
            return a
    return None


ROOT = typer.main.get_command(app)
CASES = [
    (path, cmd, p)
    for path, cmd in _commands(ROOT)
    for p in cmd.params
    if _kind(p) is not None and p.opts[0].startswith("-")
]
ROOT_CASES = [p for p in ROOT.params if _kind(p) is not None]


def test_the_app_has_numeric_options_to_drive():
    assert len(CASES) > 100 and ROOT_CASES  # discovery works: a broken walk would test nothing


@pytest.mark.parametrize("param", [c[2] for c in CASES] + ROOT_CASES, ids=lambda p: p.name)
def test_every_numeric_option_goes_through_the_checked_parser(param):
    parser = param.type_descriptor.parameter_info.parser
    assert getattr(parser, "lmleak_number", None), (
        f"{param.opts[0]} is parsed without lmleak.cli.common.number: declare it with "
        "typer.Option(..., parser=number(...)) (or COUNT, SEED, POSITIVE, ...)"
    )


class Hang(BaseException):  # not an Exception: the CLI's catch-all must not turn it into exit 2
    pass


def _alarm(signum, frame):
    raise Hang(f"no answer in {TIMEOUT_S} s")


def _args(cmd, skip, tmp: Path, out: Path) -> list[str]:
    """The command's other needed options: a missing file for inputs, ``out`` for the run folder."""
    args: list[str] = []
    for p in cmd.params:
        if p is skip or not p.opts or not p.opts[0].startswith("-"):
            if p is not skip and getattr(p, "required", False) and p.param_type_name == "argument":
                args.append(str(tmp / "missing" / p.name))
            continue
        kind = _kind(p)
        if p.name in ("out_dir", "out"):
            args += [p.opts[0], str(out)]
        elif kind is not None:
            if p.required:
                args += [p.opts[0], "1" if kind is int else "0.5"]
        elif p.required or (p.name in INPUTS and p.default is None and not p.is_eager):
            # an eager input (train --config) is read before every other option, by design: not given
            args += [p.opts[0], str(tmp / "missing" / f"{p.name}.jsonl")]
    return args


@pytest.fixture(autouse=True)
def _built_once(monkeypatch):
    """Invoke the one command tree built above (typer rebuilds it per call, 0.2 s each)."""
    import typer.testing

    monkeypatch.setattr(typer.testing, "_get_command", lambda _app: ROOT)


def _invoke(argv: list[str]):
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    try:
        return CliRunner().invoke(app, argv)
    except Hang as e:
        pytest.fail(f"lmleak {' '.join(argv)}: {e}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _check(res, argv: list[str], value: str, opt: str, kind: type) -> None:
    said = " ".join(res.output.split())
    where = f"lmleak {' '.join(argv)}"
    assert res.exit_code in (0, 2), f"{where}: exit {res.exit_code}: {said[-600:]} {res.exception!r}"
    assert "Traceback" not in res.output and "unexpected" not in said and "a bug in lmleak" not in said, (
        f"{where}: {said[-600:]}"
    )
    if res.exit_code == 2:  # one clear line, like every input error
        assert len(res.output.strip().splitlines()) == 1, f"{where}: {res.output}"
    if kind is float and value in ("nan", "inf", "-inf"):
        assert res.exit_code == 2 and opt in said, f"{where}: {value} not refused by {opt}: {said[-400:]}"


@pytest.mark.parametrize(
    ("path", "cmd", "param"), CASES, ids=[f"{' '.join(c[0])}:{c[2].opts[0]}" for c in CASES]
)
def test_bad_numbers_exit_0_or_2_at_once_and_leave_nothing_behind(path, cmd, param, tmp_path):
    kind = _kind(param)
    (tmp_path / "a-file").write_text("")
    for value in FLOAT_VALUES if kind is float else INT_VALUES:
        # with inputs to read, a refusal must not create the run folder; without any (synth,
        # experiments), the run folder sits under a file, so accepted values stop at once
        needs_input = any(
            (q.required and q.name not in ("out_dir", "out") and _kind(q) is None)
            or (q.name in INPUTS and q.default is None)
            for q in cmd.params
        )
        out = tmp_path / f"out-{value}" if needs_input else tmp_path / "a-file" / "out"
        argv = [*path, *_args(cmd, param, tmp_path, out), param.opts[0], value]
        res = _invoke(argv)
        _check(res, argv, value, param.opts[0], kind)
        if res.exit_code == 2 and needs_input:
            assert not out.exists(), f"lmleak {' '.join(argv)}: refused but left {out}"


@pytest.mark.parametrize("param", ROOT_CASES, ids=lambda p: p.opts[0])
def test_global_numeric_options_are_checked_too(param):
    for value in INT_VALUES:
        argv = [param.opts[0], value, "dp-audit", "bound", "--m", "10", "--r", "2", "--v", "1"]
        res = _invoke(argv)
        _check(res, argv, value, param.opts[0], _kind(param))
        if value in ("nan", "0", "-1"):
            assert res.exit_code == 2 and param.opts[0] in " ".join(res.output.split())


# ------------------------------------------------------------------ the cases the issue names
@pytest.fixture()
def corpus(tmp_path):
    """A real corpus: without the checks, these commands would train on it."""
    rows = [
        {"user_id": f"u{i % 6}", "text": f"hello my name is user {i} and my id is {100000 + i}"}
        for i in range(30)
    ]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["dp-audit", "run", "--r", "100", "--m", "8", "--noise-multiplier", "1"],
            "field '--r': must be a whole number >= 0 and <= 8",  # issue 34: the error names the option
        ),
        (["dp-audit", "run", "--confidence", "1.5"], "'--confidence'"),
        (["dp-audit", "run", "--noise-multiplier", "nan"], "'--noise-multiplier'"),
        (["train", "--mode", "dp", "--noise-multiplier", "nan"], "'--noise-multiplier'"),
        (["train", "--mode", "dp", "--target-epsilon", "inf"], "'--target-epsilon'"),
    ],
    ids=["r>m", "confidence", "dp-audit-nan-noise", "train-nan-noise", "train-inf-epsilon"],
)
def test_the_issues_cases_are_refused_before_training_and_leave_nothing(argv, says, corpus, tmp_path):
    out = tmp_path / "run"
    argv = [*argv, "--corpus", str(corpus), "--out", str(out)]
    res = _invoke(argv)
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and says in said, said
    assert not out.exists()  # no run folder, no trained model


def test_probe_run_refuses_a_negative_limit(tmp_path):
    res = _invoke(
        [
            "probe",
            "run",
            "--model",
            "m",
            "--subjects",
            "s.jsonl",
            "--out",
            str(tmp_path / "o"),
            "--limit",
            "-1",
        ]
    )
    assert res.exit_code == 2 and "'--limit'" in " ".join(res.output.split())
