"""Progress of long passes, in a terminal and in a CI log.

Library code wraps its loops in :func:`track` and its multi-step work in :func:`stage`. Where the
output goes decides the form:

- stderr is a terminal: a Rich progress bar per loop;
- stderr is a file or a pipe (CI logs, ``nohup``, ``| tee``): plain lines, one when a pass starts,
  one at least every :data:`INTERVAL` seconds while it runs, one when it ends, e.g.::

      [lmleak] ledger: started, 1,520 docs
      [lmleak] ledger: 612/1,520 docs (40%), 10.2 docs/s, ETA 1m29s
      [lmleak] ledger: done, 1,520 docs in 2m31s

The CLI turns both off with ``--quiet`` / ``--json`` (:func:`set_enabled`); so does ``LMLEAK_QUIET=1``.
Lines go to stderr, so ``--json`` output on stdout stays clean. The clock is injectable
(``_clock``, which tests replace) so the heartbeat is tested without sleeping.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")
#: Seconds between two progress lines in a log (``LMLEAK_PROGRESS_INTERVAL`` overrides it).
INTERVAL = 30.0
_ENABLED = os.environ.get("LMLEAK_QUIET", "") not in ("1", "true", "yes")
_clock: Callable[[], float] = time.monotonic
_stream: TextIO | None = None  # None: sys.stderr at the time of writing (pytest swaps it)
_depth = 0  # tracked passes in progress (in a log, only the outermost one writes lines)


def set_enabled(enabled: bool) -> None:
    global _ENABLED
    _ENABLED = enabled


def enabled() -> bool:
    return _ENABLED


def set_stream(stream: TextIO | None) -> None:
    """Write plain progress lines to ``stream`` (None: stderr)."""
    global _stream
    _stream = stream


def _interval() -> float:
    try:
        return float(os.environ.get("LMLEAK_PROGRESS_INTERVAL", INTERVAL))
    except ValueError:
        return INTERVAL


def _out() -> TextIO:
    return _stream if _stream is not None else sys.stderr


def _is_terminal() -> bool:
    return _stream is None and sys.stderr.isatty()


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``.

    Example:
        >>> format_duration(42.4), format_duration(185), format_duration(3725)
        ('42s', '3m05s', '1h02m')
    """
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def progress_line(description: str, done: int, total: int | None, elapsed: float, unit: str = "items") -> str:
    """One heartbeat line: stage, done/total, share, rate and ETA (when the total is known).

    Example:
        >>> progress_line("ledger", 612, 1520, 60.0, "docs")
        '[lmleak] ledger: 612/1,520 docs (40%), 10.2 docs/s, ETA 1m29s'
        >>> progress_line("scoring", 10, None, 4.0)
        '[lmleak] scoring: 10 items, 2.5 items/s'
        >>> progress_line("ledger", 2, 7, 100.0, "shards")
        '[lmleak] ledger: 2/7 shards (28%), 50s each, ETA 4m10s'
    """
    rate = done / elapsed if elapsed > 0 else 0.0
    # slow passes (a shard a minute) read better as time per item than as 0.0 items/s
    speed = f"{rate:.1f} {unit}/s" if rate >= 0.1 or rate == 0 else f"{format_duration(1 / rate)} each"
    if total:
        eta = format_duration((total - done) / rate) if rate > 0 else "?"
        return (
            f"[lmleak] {description}: {done:,}/{total:,} {unit} ({100 * done // total}%), {speed}, ETA {eta}"
        )
    return f"[lmleak] {description}: {done:,} {unit}, {speed}"


def log(message: str) -> None:
    """A plain line on stderr (when progress is on); the stage messages of long commands."""
    if _ENABLED:
        print(f"[lmleak] {message}", file=_out(), flush=True)


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Log the start and end (with its duration) of a step that has no loop of its own to track."""
    t0 = _clock()
    if _ENABLED and not _is_terminal():
        log(f"{name}: started")
    yield
    if _ENABLED and not _is_terminal():
        log(f"{name}: done in {format_duration(_clock() - t0)}")


def track(
    iterable: Iterable[T], *, total: int | None = None, description: str = "working", unit: str = "items"
) -> Iterator[T]:
    """Iterate with progress: a Rich bar on a terminal, heartbeat lines in a log, nothing when disabled."""
    if not _ENABLED:
        yield from iterable
        return
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    if _is_terminal():
        yield from _rich(iterable, total, description)
        return
    global _depth
    if _depth > 0:  # a loop inside a tracked pass (a shard's items): the outer pass reports for both
        yield from iterable
        return
    _depth += 1
    try:
        yield from _logged(iterable, total, description, unit)
    finally:
        _depth -= 1


def _logged(iterable: Iterable[T], total: int | None, description: str, unit: str) -> Iterator[T]:
    beat = _Heartbeat(description, total, unit)
    log(f"{description}: started" + (f", {total:,} {unit}" if total else ""))
    beat.start()
    try:
        for item in iterable:
            yield item
            beat.tick()
    finally:
        beat.stop()
    log(f"{description}: done, {beat.done:,} {unit} in {format_duration(_clock() - beat.t0)}")


class _Heartbeat:
    """Prints a progress line when :data:`INTERVAL` has passed since the last one: checked at every
    item, and by a background thread while one item takes long (a shard of a slow pass)."""

    def __init__(self, description: str, total: int | None, unit: str) -> None:
        self.description, self.total, self.unit = description, total, unit
        self.interval = _interval()
        self.done = 0
        self.t0 = self.last = _clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if _clock is time.monotonic:  # a test's injected clock drives the beats through tick() alone
            self._thread = threading.Thread(target=self._run, name="lmleak-progress", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(min(self.interval, 5.0)):
            self.beat()

    def tick(self) -> None:
        with self._lock:
            self.done += 1
        self.beat()

    def beat(self) -> None:
        with self._lock:
            now = _clock()
            if now - self.last < self.interval:
                return
            self.last = now
            line = progress_line(self.description, self.done, self.total, now - self.t0, self.unit)
        print(line, file=_out(), flush=True)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)


def _rich(iterable: Iterable[T], total: int | None, description: str) -> Iterator[T]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

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
