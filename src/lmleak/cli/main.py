"""Entry point: builds the ``lmleak`` Typer app from the area modules.

Each area module exposes ``register(app, groups)`` and owns its commands; ``groups`` holds the
sub-command groups several areas share (``synth``). Errors a user can fix (:class:`LmleakError`)
print one line and exit with status 2 — never a traceback.
"""

from __future__ import annotations

import importlib
import os
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from lmleak.cli.common import err, offline_environment
from lmleak.errors import LmleakError

AREAS = [
    "lmleak.cli.data",  # synth customersim, corpus checks
    "lmleak.cli.models",  # train, eval
    "lmleak.cli.report",  # report (paper 001)
    "lmleak.cli.pii",  # pii evaluate, dedup, redact, split (paper 002)
    "lmleak.cli.privacy",  # confidentiality (paper 002)
    "lmleak.cli.attacks",  # exposure, mia, experiment crt (paper 002 §5)
    "lmleak.cli.probe",  # probe (paper 003)
    "lmleak.cli.kart",  # kart, synth clinical (paper 004)
    "lmleak.cli.audit",  # audit, demo, gate, query
]


class _Group(TyperGroup):
    def invoke(self, ctx: Any) -> Any:  # typer's vendored click.Context
        try:
            return super().invoke(ctx)
        except LmleakError as e:
            from rich.markup import escape

            err.print(f"[bold red]error:[/] {escape(str(e))}")
            raise typer.Exit(2) from None  # typer vendors click: only its own Exit sets the status


def build_app() -> typer.Typer:
    offline_environment()
    app = typer.Typer(
        cls=_Group,
        name="lmleak",
        help="Privacy auditing of language models: leakage reports, redacted training, PII probing, KART scenarios.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root(
        ctx: typer.Context,
        device: Annotated[
            str | None,
            typer.Option(
                "--device",
                help="Where models run: auto (a GPU when torch sees one; the default), cpu, cuda, cuda:N. "
                "Also LMLEAK_DEVICE. Training stays on the CPU.",
            ),
        ] = None,
        quiet_all: Annotated[
            bool,
            typer.Option("--quiet", help="No progress bars or progress lines, for every command (also LMLEAK_QUIET=1)."),
        ] = False,
    ) -> None:
        """Privacy auditing of language models."""
        from lmleak import progress
        from lmleak.models.device import resolve_device, use_device

        progress.set_enabled(not quiet_all and os.environ.get("LMLEAK_QUIET", "") not in ("1", "true", "yes"))
        if device is not None:
            resolve_device(device)  # a GPU asked for but absent fails before the command starts
        ctx.with_resource(use_device(device))

    groups = {"synth": typer.Typer(help="Synthesise corpora with known PII (offline, seeded).", no_args_is_help=True)}
    app.add_typer(groups["synth"], name="synth")
    for area in AREAS:
        importlib.import_module(area).register(app, groups)
    return app


app = build_app()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
