"""Progress bars for long passes, shared by the library and the CLI.

Library code wraps its loops in :func:`track`; the CLI turns bars off with ``--quiet``/``--json``
(:func:`set_enabled`). Bars go to stderr, so ``--json`` output on stdout stays clean.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
_ENABLED = True


def set_enabled(enabled: bool) -> None:
    global _ENABLED
    _ENABLED = enabled


def enabled() -> bool:
    return _ENABLED


def track(iterable: Iterable[T], *, total: int | None = None, description: str = "working") -> Iterator[T]:
    """Iterate with a Rich progress bar on stderr (a plain iterator when disabled or not a TTY-less test)."""
    if not _ENABLED:
        yield from iterable
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(description, total=total)
        for item in iterable:
            yield item
            bar.advance(task)
