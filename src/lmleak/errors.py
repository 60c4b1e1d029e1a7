"""The exception tree of lmleak.

Every error a user can cause by what they pass in derives from :class:`LmleakError`, so the CLI
can print it as one clear message (never a traceback) and exit with status 2::

    LmleakError
    ├── InputError            bad user input: a file, line/row, field and the fix
    │   ├── CorpusError       a corpus file or row that cannot be read
    │   ├── ConfigError       a YAML/JSON config, scenario or option that is invalid
    │   └── DataFileError     subjects, canaries, secrets or other side files
    ├── ModelError            a model that cannot be found or loaded safely
    ├── CapabilityError       a model lacks the access an attack needs (raised before any work)
    ├── RunError              a run directory that is incomplete, inconsistent or locked by a writer
    └── Interrupted           SIGINT/SIGTERM stopped a long command; says what was kept (exit 130)

Bugs in lmleak itself are ordinary Python exceptions and keep their tracebacks.
"""

from __future__ import annotations

from pathlib import Path


class LmleakError(Exception):
    """Base of every error lmleak raises for something the user can fix."""


class InputError(LmleakError):
    """Invalid user input, located as precisely as possible.

    The message reads ``<path>:<line>: field '<field>': <reason>. Fix: <hint>`` with the parts that
    are known.

    Example:
        >>> str(InputError("text is empty", path="c.jsonl", line=3, field="text", hint="drop the row"))
        "c.jsonl:3: field 'text': text is empty. Fix: drop the row"
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.reason = reason
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        field = f"field '{self.field}': " if self.field else ""
        stop = "" if self.reason.endswith((".", "?", "!")) else "."  # no "?." after "Did you mean 'x'?"
        hint = f"{stop} Fix: {self.hint}" if self.hint else ""
        return f"{where}{field}{self.reason}{hint}"


class CorpusError(InputError):
    """A corpus file or row that cannot be read."""


class ConfigError(InputError):
    """An invalid config, scenario or option."""


class DataFileError(InputError):
    """An invalid side file: subjects, canaries, secrets, members lists."""


class ModelError(LmleakError):
    """A model that cannot be found, recognised or loaded safely."""


class CapabilityError(LmleakError):
    """A model lacks a capability (access level) that an attack requires."""


class RunError(LmleakError):
    """A run directory that is missing results, is inconsistent, or is being written by another process."""


class Interrupted(LmleakError):
    """SIGINT/SIGTERM stopped a resumable pass between shards (or dropped the shard in progress).

    The message says what was kept and where; the CLI adds the command that resumes and exits 130.

    Example:
        >>> str(Interrupted("run/ledger", kept=3, total=10, description="ledger"))
        'interrupted: ledger stopped with 3 of 10 shards kept in run/ledger; the others are redone on resume'
    """

    def __init__(
        self, out_dir: str | Path, *, kept: int, total: int | None, description: str = "pass"
    ) -> None:
        self.out_dir = str(out_dir)
        self.kept = kept
        self.total = total
        of = f" of {total}" if total is not None else ""
        super().__init__(
            f"interrupted: {description} stopped with {kept}{of} {'shard' if (total or kept) == 1 else 'shards'} "
            f"kept in {out_dir}; "
            "the others are redone on resume"
        )


def did_you_mean(word: str, choices: list[str] | tuple[str, ...] | set[str]) -> str:
    """A " Did you mean 'x'?" suffix for the closest choice, or "" when nothing is close.

    Example:
        >>> did_you_mean("knowlege", ["knowledge", "target"])
        " Did you mean 'knowledge'?"
    """
    import difflib

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""


def check_number(
    value: object,
    field: str,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    integer: bool = False,
    hint: str | None = None,
) -> None:
    """Raise :class:`ConfigError` unless ``value`` is a finite number (a whole one with ``integer``)
    within the bounds given: the one range check of every option (the CLI's parser
    ``lmleak.cli.common.number``) and of every config dataclass's ``__post_init__``.

    NaN fails every comparison, so it is refused even where no bound is given.

    Example:
        >>> check_number(0.5, "confidence", gt=0, lt=1)
        >>> check_number(float("nan"), "noise_multiplier", gt=0)
        Traceback (most recent call last):
        ...
        lmleak.errors.ConfigError: field 'noise_multiplier': must be a finite number > 0, got nan
        >>> check_number(100, "r", le=8, integer=True, hint="r <= m")
        Traceback (most recent call last):
        ...
        lmleak.errors.ConfigError: field 'r': must be a whole number <= 8, got 100. Fix: r <= m
    """
    import math
    import numbers

    bounds = [(op, b) for op, b in ((">=", ge), (">", gt), ("<=", le), ("<", lt)) if b is not None]
    what = ("a whole number" if integer else "a finite number") + "".join(
        f"{' and' if i else ''} {op} {b:g}" for i, (op, b) in enumerate(bounds)
    )
    if not isinstance(value, numbers.Integral if integer else numbers.Real) or isinstance(value, bool):
        raise ConfigError(f"must be {what}, got {value!r}", field=field, hint=hint)
    try:
        x = float(value)
    except OverflowError:  # an int beyond any float
        x = math.inf
    ok = math.isfinite(x) and all(
        {">=": x >= b, ">": x > b, "<=": x <= b, "<": x < b}[op] for op, b in bounds
    )
    if not ok:
        raise ConfigError(f"must be {what}, got {value!r}", field=field, hint=hint)
