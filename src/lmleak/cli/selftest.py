"""CLI: ``lmleak selftest`` — the installed lmleak against independent computations (issue 26)."""

from __future__ import annotations

from typing import Annotated

import typer

from lmleak.cli.common import out, print_json, quiet
from lmleak.words import plural


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``selftest``."""
    app.command("selftest")(selftest_cmd)


def selftest_cmd(
    json_out: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
) -> None:
    """Check this lmleak on a tiny model against known answers (ledger, exposure, MIA formulas, DP bound, Wilson/Newcombe).

    Example: lmleak selftest

    One line per check; exit 1 if any fails. Under a minute on 2 CPU cores.
    """
    from dataclasses import asdict

    from lmleak.audit.selftest import selftest_report  # lazy: torch and transformers

    quiet(True)  # the checks' own lines only, no progress bars of the passes they run
    checks, seconds = selftest_report()
    failed = [c.name for c in checks if not c.ok]
    if json_out:
        print_json({"checks": [asdict(c) for c in checks], "failed": failed, "seconds": seconds})
    else:
        for c in checks:
            out.print(c.line(), markup=False, highlight=False, soft_wrap=True)
        verdict = f"FAILED: {', '.join(failed)}" if failed else "all passed"
        out.print(
            f"{plural(len(checks), 'check')}, {verdict} ({seconds:.1f} s)", markup=False, highlight=False
        )
    if failed:
        raise typer.Exit(1)
