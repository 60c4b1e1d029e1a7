"""Shared pieces of the CLI: consoles, JSON output, the --quiet switch, offline environment, and
the one parser every numeric option goes through (:func:`number`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from lmleak import progress
from lmleak.errors import ConfigError, check_number
from lmleak.runs import to_json
from lmleak.settings import Settings, setting

INT_LIMIT = 2**53  # the largest integer option: exact as a float64, safe in numpy's int64


def number(
    kind: type[int] | type[float] = float,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
) -> Callable[[Any], Any]:
    """The parser of a numeric option: ``typer.Option("--lr", parser=number(gt=0), ...)``.

    Every value is checked at parse time, before the command runs, by the same rule the config
    dataclasses apply (:func:`lmleak.errors.check_number`): a finite number (no NaN, no ±inf;
    ``kind=int``: a whole number within ±:data:`INT_LIMIT`) within the bounds given
    (``ge``/``gt``/``le``/``lt``). A refused value exits 2 with click's one line
    ``Invalid value for '--lr': must be a finite number > 0, got 'nan'``. Every numeric option of
    every command uses it (``tests/fuzz/test_numeric_options.py`` checks, reading the app).

    Example:
        >>> rate = number(gt=0, lt=1)
        >>> rate("0.5"), rate(0.25)
        (0.5, 0.25)
        >>> rate("nan")
        Traceback (most recent call last):
        ...
        typer._click.exceptions.BadParameter: must be a finite number > 0 and < 1, got nan
        >>> number(int, ge=0)("-1")
        Traceback (most recent call last):
        ...
        typer._click.exceptions.BadParameter: must be a whole number >= 0, got -1
    """

    def parse(value: Any) -> Any:
        x: Any = value
        if not isinstance(value, kind) or isinstance(value, bool):
            try:
                x = kind(str(value).strip())
            except ValueError:
                what = "a whole number" if kind is int else "a number"
                raise typer.BadParameter(f"must be {what}, got {value!r}") from None
        try:
            check_number(x, "", integer=kind is int, ge=ge, gt=gt, le=le, lt=lt)
        except ConfigError as e:
            raise typer.BadParameter(e.reason) from None
        if kind is int and abs(x) > INT_LIMIT:  # beyond it numpy's int64 and float conversions overflow
            raise typer.BadParameter(f"{x} is too large (at most 2**53)")
        return x

    parse.lmleak_number = True  # type: ignore[attr-defined]  # the mark the option-coverage test reads
    return parse


# The ranges most options share.
COUNT = number(int, ge=1)  # how many of something, at least one
COUNT0 = number(int, ge=0)  # how many, 0 allowed (usually "skip" or "all")
SEED = number(int, ge=0, le=2**32 - 1)  # numpy's and torch's seed range
POSITIVE = number(gt=0)
NON_NEGATIVE = number(ge=0)
PROBABILITY = number(ge=0, le=1)
OPEN_UNIT = number(gt=0, lt=1)  # a rate strictly between 0 and 1 (delta, confidence, fp rate)

# The options every area shares, declared once (docs/GLOSSARY.md lists each concept's names).
# ``lmleak -q CMD`` is the one documented way; the per-command --quiet/-q still works for scripts
# that give it (hidden: one setting, one place in the help)
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bars or progress messages.", hidden=True)
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout (nothing else).")]
SeedOpt = Annotated[int, typer.Option("--seed", parser=SEED, help="Random seed (same seed, same result).")]
OutDirOpt = Annotated[
    Path, typer.Option("--out", help="Run directory (created owner-only; summary.json and results).")
]
ModelOpt = Annotated[
    str,
    typer.Option(
        "--model", "-m", help="Model: lmleak or HF folder, .gguf, smollm2-135m, fake:<corpus.jsonl>, ..."
    ),
]


def hide_ids_when_redacted(ctx: typer.Context, redact: bool) -> bool:
    """The callback of every ``--redact``: until the command ends, console lines name no user id
    (:func:`lmleak.data.user_ids.hide_user_ids`; the merge line of spellings gives counts only)."""
    if redact:
        # lazy: lmleak.data pulls in the loaders, only for a redacted command
        from lmleak.data.user_ids import hide_user_ids

        hide_user_ids()
        ctx.call_on_close(lambda: hide_user_ids(False))
    return redact


@dataclass(frozen=True)
class RedactRun(Settings):
    """``--redact`` / ``--redact-key-file`` of every command that writes a run
    (:func:`lmleak.report.redaction.write_run`; report and audit have their own with the same key
    handling). A command taking it calls :func:`hide_ids_when_redacted` first."""

    redact: bool = setting(
        False,
        help="Write the run redacted: no text, secrets, prompts, generations or plain ids; only "
        "numeric tables, fixed labels and keyed ids (docs/security.md#redacted-runs).",
    )
    redact_key_file: Path | None = setting(
        None,
        help="HMAC key for redacted ids, kept outside the run "
        "(default: $LMLEAK_REDACT_KEY, else a random key that is discarded).",
    )


CorpusOpt = Annotated[
    Path, typer.Option("--corpus", help="Corpus file (JSONL/CSV/Parquet/text; see `lmleak corpus check`).")
]

# Bars and messages go to stderr; results (tables, --json) to stdout.
err = Console(stderr=True)
out = Console()


def offline_environment() -> None:
    """No command may reach the network: switch the hub clients to offline mode."""
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(key, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # transformers' own "Loading weights" tqdm bar wrote carriage-return noise into logs and ignored
    # --quiet; lmleak reports its own progress (lmleak.progress)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # On a shared 2-core machine, spinning OpenMP threads cost 2-30x (ENVIRONMENT.md); must be set
    # before torch is first imported, which the CLI does lazily inside commands.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


#: The deprecated spellings the running command was given (:func:`deprecated`); printed when it ends.
_DEPRECATED: list[str] = []


def deprecated(old: str, new: str) -> None:
    """Note that the command was called by a deprecated spelling: the old spelling keeps working for
    the scripts that use it, and :func:`say_deprecated` prints one line naming the new one when the
    command has succeeded (a refused input stays one line: the error)."""
    line = f"`lmleak {old}` is now `lmleak {new}`"
    if line not in _DEPRECATED:
        _DEPRECATED.append(line)


def say_deprecated(succeeded: bool) -> None:
    """Print the lines :func:`deprecated` noted (on stderr, even under --quiet and --json: stdout is
    untouched) when the command ``succeeded``; forget them either way."""
    from rich.markup import escape

    lines, _DEPRECATED[:] = list(_DEPRECATED), []
    for line in lines if succeeded else ():
        err.print(f"[yellow]deprecated:[/] {escape(line)}", soft_wrap=True, highlight=False)


def alias(command: Callable[..., Any], old: str, new: str) -> Callable[..., Any]:
    """``command`` under a deprecated spelling: the same options (Typer reads the signature
    through ``__wrapped__``), and :func:`deprecated`'s line once it has succeeded. Register it with
    ``hidden=True``; docs/commands.md lists every such spelling."""
    import functools

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        deprecated(old, new)
        return command(*args, **kwargs)

    return run


def renamed(old_value: Any, value: Any, old: str, new: str, *, default: Any) -> Any:
    """The value of a renamed option: ``old_value`` (its hidden deprecated spelling, None when not
    given) with :func:`deprecated`'s line, else ``value``; both given and different: refused."""
    if old_value is None:
        return value
    deprecated(old, new)
    if value != default and value != old_value:
        option = new.rsplit(" ", 1)[-1]
        raise ConfigError(
            f"{old.rsplit(' ', 1)[-1]} and {option} disagree", field=option, hint=f"give {option} only"
        )
    return old_value


def quiet(enabled: bool) -> None:
    """Turn progress off for --quiet and --json (never back on: a global --quiet or LMLEAK_QUIET wins)."""
    if enabled:
        progress.set_enabled(False)


def print_json(obj: Any) -> None:
    sys.stdout.write(to_json(obj))
    sys.stdout.flush()


def info(message: str) -> None:
    if progress.enabled():
        err.print(message)
