"""CLI commands of this area (registered by :mod:`lmleak.cli.main`)."""

from __future__ import annotations

import typer


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add this area's commands to ``app`` (none yet)."""
