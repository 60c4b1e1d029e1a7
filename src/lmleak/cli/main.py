"""Entry point: builds the ``lmleak`` Typer app from the area modules.

Each area module exposes ``register(app, groups)`` and owns its commands; ``groups`` holds the
sub-command groups several areas share (``synth``).

Fail closed, in one place (:class:`_Group`):

- errors a user can fix (:class:`LmleakError`, and :class:`OSError` such as a path that is a file
  or not writable) print one line and exit 2; anything else (a bug) prints one line and exits 2
  too, naming only its type and place (its message may quote the data). ``lmleak --debug`` (or
  ``LMLEAK_DEBUG=1``) shows the traceback instead;
- SIGINT/SIGTERM (:class:`Interrupted`, :class:`KeyboardInterrupt`) print what was kept and the
  exact command that resumes, and exit 130;
- the umask is 0o077 from the start: every file lmleak writes is owner-only.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import click
import typer
from typer.core import TyperGroup
from typer.main import get_command_name

from lmleak import progress
from lmleak.cli.common import err, offline_environment, say_deprecated
from lmleak.cli.options import takes
from lmleak.errors import Interrupted, LmleakError
from lmleak.runs import owner_only
from lmleak.settings import Settings, setting

AREAS = [
    "lmleak.cli.data",  # synth customersim, corpus checks
    "lmleak.cli.models",  # train, eval
    "lmleak.cli.report",  # report, study snapshots|compare|hardening (paper 001)
    "lmleak.cli.pii",  # pii evaluate, dedup, redact, split (paper 002)
    "lmleak.cli.privacy",  # confidentiality (paper 002)
    "lmleak.cli.attacks",  # exposure, mia, experiment crt (paper 002 §5)
    "lmleak.cli.probe",  # probe (paper 003)
    "lmleak.cli.kart",  # kart, synth clinical (paper 004)
    "lmleak.cli.audit",  # audit, demo, gate, query
    "lmleak.cli.dpaudit",  # dp-audit bound, dp-audit run (Steinke et al. 2023)
    "lmleak.cli.extract",  # extract (Carlini et al. 2021)
    "lmleak.cli.serve",  # serve (an OpenAI-compatible server for the HTTP backend)
    "lmleak.cli.selftest",  # selftest (the installed lmleak against known answers)
    "lmleak.cli.cache",  # cache info, cache clear (the HTTP answer cache)
]

#: The panels of ``lmleak --help`` (issue 29), in the order shown.
PANELS = ("Audit and report", "Attacks", "Training", "Data and PII", "Serving and tools")

#: Every top-level command and group -> its panel, in the order ``lmleak --help`` lists them.
#: tests/cli/test_help.py fails on a command missing here, so a new command cannot go unsorted.
PANEL_OF = {
    **dict.fromkeys(("audit", "report", "study", "render", "gate", "query", "kart", "demo"), PANELS[0]),
    **dict.fromkeys(("exposure", "mia", "probe", "extract", "dp-audit"), PANELS[1]),
    **dict.fromkeys(("train", "eval", "confidentiality", "experiment"), PANELS[2]),
    **dict.fromkeys(("synth", "corpus", "pii", "dedup", "redact", "split"), PANELS[3]),
    **dict.fromkeys(("serve", "cache", "selftest"), PANELS[4]),
}


def _debug(ctx: click.Context) -> bool:
    return bool(ctx.params.get("debug")) or os.environ.get("LMLEAK_DEBUG", "") in ("1", "true", "yes")


def _resume_command() -> str:
    import shlex

    return shlex.join(["lmleak", *sys.argv[1:]])


def _one_line(text: str) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return " ".join(lines)[:2000] if lines else ""


def _where(e: BaseException) -> str:
    """`` at lmleak/x.py:12`` for the innermost frame, or ""."""
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return ""
    name = frames[-1].filename.replace(os.sep, "/")
    cut = name.rfind("/lmleak/")
    return f" at {name[cut + 1 :] if cut >= 0 else name.rsplit('/', 1)[-1]}:{frames[-1].lineno}"


def _assign_panels(app: typer.Typer) -> None:
    """Put each registered command and group in its panel of :data:`PANEL_OF` (the areas register
    commands without one: where a command is shown is decided here, in one place)."""
    for command in app.registered_commands:
        name = command.name or (get_command_name(command.callback.__name__) if command.callback else "")
        if name in PANEL_OF:
            command.rich_help_panel = PANEL_OF[name]
    for group in app.registered_groups:
        named = (group.name, group.typer_instance.info.name if group.typer_instance else None)
        name = next((n for n in named if isinstance(n, str)), "")  # unset names are placeholders
        if name in PANEL_OF:
            group.rich_help_panel = PANEL_OF[name]


def _bad_value(e: typer.BadParameter) -> typer.Exit:
    """A refused or missing option value (``lmleak.cli.common.number``: NaN, inf, out of range; a wrong
    type) as one line, exit 2, like every other input error (click's own box spans several lines)."""
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(_one_line(e.format_message()))}", soft_wrap=True)
    return typer.Exit(2)


class _Group(TyperGroup):
    def make_context(self, info_name: Any, args: Any, parent: Any = None, **extra: Any) -> Any:
        try:  # the global options (--max-requests) are parsed here, outside invoke
            return super().make_context(info_name, args, parent=parent, **extra)
        except typer.BadParameter as e:
            raise _bad_value(e) from None

    def list_commands(self, ctx: Any) -> list[str]:
        """The commands in :data:`PANEL_OF`'s order (so the panels come in :data:`PANELS`' order);
        any other after them, in the order registered."""
        order = {name: i for i, name in enumerate(PANEL_OF)}
        return sorted(super().list_commands(ctx), key=lambda name: order.get(name, len(order)))

    def invoke(self, ctx: Any) -> Any:  # typer's vendored click.Context
        from rich.markup import escape

        say_deprecated(False)  # a previous invocation in this process (tests) left none behind
        try:
            result = super().invoke(ctx)
            say_deprecated(True)  # an old spelling's one line, once the command has succeeded
            return result
        except typer.BadParameter as e:  # a command's option value, refused while parsing
            raise _bad_value(e) from None
        except (typer.Exit, typer.Abort, typer.TyperException, click.exceptions.Exit, click.ClickException):
            raise  # usage errors and exits keep their own status
        except (Interrupted, KeyboardInterrupt) as e:  # SIGINT/SIGTERM: what was kept, and how to resume
            kept = "completed stages and shards are kept; the run is marked incomplete"
            err.print(f"[bold yellow]{escape(str(e))}[/]" if isinstance(e, Interrupted) else
                      f"[bold yellow]interrupted[/]: {kept}", soft_wrap=True)  # fmt: skip
            err.print(f"resume with: {escape(_resume_command())}", soft_wrap=True)
            raise typer.Exit(130) from None
        except LmleakError as e:
            if _debug(ctx):
                raise
            err.print(f"[bold red]error:[/] {escape(_one_line(str(e)))}", soft_wrap=True)
            raise typer.Exit(2) from None  # typer vendors click: only its own Exit sets the status
        except BrokenPipeError:
            # stdout's reader left (`lmleak ... | head`): not the user's error, and no path to check
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            raise typer.Exit(141) from None  # 128 + SIGPIPE, as a process killed by the signal
        except OSError as e:
            if _debug(ctx):
                raise
            where = f": {e.filename}" if getattr(e, "filename", None) else ""
            err.print(
                f"[bold red]error:[/] {escape(_one_line(e.strerror or str(e)))}{escape(where)}. "
                "Fix: check the path and its permissions",
                soft_wrap=True,
            )
            raise typer.Exit(2) from None
        except Exception as e:
            if _debug(ctx):
                raise
            # the type and place only: an unexpected message may quote the data being processed
            err.print(
                f"[bold red]error:[/] unexpected {type(e).__name__}{escape(_where(e))} (a bug in lmleak or a "
                "library). Re-run with `lmleak --debug ...` for the traceback and report it",
                soft_wrap=True,
            )
            raise typer.Exit(2) from None


def _user_ids_policy(value: str | None) -> str | None:
    """``--user-ids``: ``merge`` or ``strict`` (issue 33), any case."""
    if value is None:
        return None
    if value.strip().lower() not in ("merge", "strict"):
        raise typer.BadParameter(f"--user-ids must be merge or strict, got {value!r}")
    return value.strip().lower()


UserIdsOpt = Annotated[
    str | None,
    typer.Option(
        "--user-ids",
        help="Spellings of one user id after normalisation (case, spaces, NFKC, zero-width characters): "
        "merge them into one person and say so (the default), or strict: refuse them (exit 2). "
        "Also LMLEAK_USER_IDS.",
        callback=_user_ids_policy,
    ),
]


@dataclass(frozen=True)
class GlobalOptions(Settings):
    """The options of ``lmleak`` itself, given before the command."""

    device: str | None = setting(
        None,
        help="Where models run: auto (a GPU when torch sees one; the default), cpu, cuda, cuda:N. "
        "Also LMLEAK_DEVICE. Training stays on the CPU.",
    )
    quiet: bool = setting(
        False, help="No progress bars or progress lines, for every command (also LMLEAK_QUIET=1).", short="-q"
    )
    debug: bool = setting(
        False, help="Show the full traceback of an error instead of one line (also LMLEAK_DEBUG=1)."
    )
    max_requests: int | None = setting(
        None,
        help="For models behind an HTTP API (--model http://HOST:PORT/v1#MODEL): "
        "stop (exit 2) after this many requests; cached answers do not count.",
        ge=1,
    )
    tokenizer: str | None = setting(
        None,
        help="For models behind an HTTP API: the served model's tokenizer (its "
        "folder); default: the server's /tokenize.",
    )
    # issue 25: where the HTTP answer cache lives, and how model files are fingerprinted in provenance
    cache_dir: str | None = setting(
        None,
        help="For models behind an HTTP API: keep the answer cache in this folder, shared between runs "
        "(default: inside the run; it holds training text; 'off': no cache; a redacted run keeps none).",
    )
    full_hash: bool = setting(
        False,
        help="Record the full SHA-256 of every model file in the run's provenance (default: a fast "
        "fingerprint of sizes, headers and each file's first and last MiB).",
    )


@takes(options=GlobalOptions)
def _root(ctx: typer.Context, options: GlobalOptions, user_ids: UserIdsOpt = None) -> None:
    """Privacy auditing of language models."""
    owner_only()
    # lazy: lmleak.models.device imports numpy (and torch when it looks for a GPU)
    from lmleak.models.device import resolve_device, use_device

    o = options
    progress.set_enabled(not o.quiet and os.environ.get("LMLEAK_QUIET", "") not in ("1", "true", "yes"))
    if o.device is not None:
        resolve_device(o.device)  # a GPU asked for but absent fails before the command starts
    ctx.with_resource(use_device(o.device))
    if o.max_requests is not None or o.tokenizer is not None or o.cache_dir is not None:
        # lazy: lmleak.models.http imports httpx, only when an HTTP option is given
        from lmleak.models.http import use_http_options

        ctx.with_resource(
            use_http_options(max_requests=o.max_requests, tokenizer=o.tokenizer, cache=o.cache_dir)
        )
    if o.full_hash:
        from lmleak.fingerprints import use_full_hash

        ctx.with_resource(use_full_hash())
    if user_ids is not None:
        from lmleak.data.user_ids import use_user_id_policy

        ctx.with_resource(use_user_id_policy(user_ids))


def build_app() -> typer.Typer:
    """The root app: the global options, the synth group and every area's commands."""
    offline_environment()
    owner_only()  # before any command writes: results, models, logs and plots hold training data
    app = typer.Typer(
        cls=_Group,
        name="lmleak",
        help="Privacy auditing of language models: leakage reports, redacted training, PII probing, KART scenarios.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    app.callback()(_root)
    groups = {
        "synth": typer.Typer(
            help="Synthesise corpora with known PII (offline, seeded).\n\n"
            "Example: lmleak synth customersim --out data --users 50 --canaries 10",
            no_args_is_help=True,
        )
    }
    app.add_typer(groups["synth"], name="synth")
    for area in AREAS:
        importlib.import_module(area).register(app, groups)
    _assign_panels(app)
    return app


app = build_app()


def _terminate_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM takes the Ctrl-C path: say what was kept, exit 130


def main() -> None:
    import signal

    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    app()


if __name__ == "__main__":
    main()
