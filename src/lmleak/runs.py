"""Run directories: atomic, owner-only outputs and the summary contract.

Rules every stage follows:
    - Outputs are written under a temporary name in the same folder and renamed when complete,
      so an interrupted run never leaves a half-written file that looks finished.
    - Run directories are created ``0o700`` and files ``0o600``: results contain training data.
    - ``summary.json`` carries ``schema_version``; a field is never renamed or redefined without
      bumping :data:`SCHEMA_VERSION`.
    - A command that writes a run directory opens it with :func:`open_run`: it holds an exclusive
      lock (``RUN/.lock``, holding the writer's pid, removed when the writer ends) so a second
      writer fails at once, and leaves
      ``RUN/.incomplete`` from its first write until its last. :func:`check_run` (used by ``gate``,
      ``render`` and ``query``) refuses a run with that marker, without a summary, or whose summary
      is older than the stage outputs it summarises: a CI gate must fail when it cannot be sure.
    - A stage that has a model or a corpus passes them to :func:`write_summary`, which records
      ``provenance`` (the model's and the corpus's fingerprints, lmleak's version: see
      :mod:`lmleak.fingerprints`) and, for a model that answers from a cache (HTTP), ``cache``.
    - A redacted run is opened with ``open_run(path, redacted=True)``: code that would keep training
      text beside the run (the HTTP answer cache) asks :func:`current_run` and keeps none.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import inspect
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from lmleak._version import __version__
from lmleak.errors import RunError
from lmleak.fingerprints import cache_record, run_provenance

F = TypeVar("F", bound=Callable[..., Any])

SCHEMA_VERSION = 1
INCOMPLETE = ".incomplete"
LOCK = ".lock"
#: Where a redacted run keeps its unredacted work while it runs (lmleak.report.redaction.private_scratch).
SCRATCH_DIR = ".redacted-scratch"
#: Files a study adds to a finished run after its summary (``lmleak report hardening``): newer than
#: the summary by design, so they do not make the run inconsistent.
ADDENDA = frozenset({"hardening.parquet"})

_held: dict[str, int] = {}  # run dirs this process holds open -> nesting depth (outermost first)
_redacted: set[str] = set()  # the held runs that are redacted


def owner_only() -> None:
    """Make every file and folder this process creates owner-only (umask 0o077): results, models,
    logs and plots hold training data. Called at CLI start and by every library writer."""
    os.umask(0o077)


def secure_dir(path: str | Path) -> Path:
    """Create ``path`` (and parents) owner-only; a file in the way is a user error, not a traceback."""
    owner_only()
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise RunError(f"{p} exists and is not a folder; give an output folder path (or remove that file)")
    for parent in p.parents:
        if parent.exists() and not parent.is_dir():
            raise RunError(f"{parent} is a file, so {p} cannot be created; give an output folder path")
    p.mkdir(parents=True, exist_ok=True)
    os.chmod(p, 0o700)
    return p


def _command() -> str:
    import shlex

    return shlex.join(["lmleak", *sys.argv[1:]]) if sys.argv and sys.argv[0] else "lmleak"


def current_run() -> tuple[Path, bool] | None:
    """The run this process is writing (the outermost one :func:`open_run` holds) and whether any run
    it holds is redacted; None when it writes none. Read from any thread.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()) / "run"
        >>> with open_run(d, redacted=True):
        ...     current_run() == (d.resolve(), True)
        True
        >>> current_run() is None
        True
    """
    held = list(_held)
    if not held:
        return None
    return Path(held[0]), any(k in _redacted for k in held)


@contextlib.contextmanager
def open_run(path: str | Path, *, redacted: bool = False) -> Iterator[Path]:
    """Open a run directory for writing: owner-only, locked against a second writer, marked incomplete
    (``.incomplete``) until the block ends without an exception; ``redacted``: see :func:`current_run`.

    Re-entrant within one process (the audit opens its run, then renders into it). A second
    process opening the same folder gets a :class:`~lmleak.errors.RunError` naming the holder's pid.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()) / "run"
        >>> with open_run(d) as run:
        ...     (run / INCOMPLETE).exists()
        True
        >>> (d / INCOMPLETE).exists(), (d / LOCK).exists()
        (False, False)
    """
    created = not Path(path).exists()
    run = secure_dir(path)
    key = str(run.resolve())
    if key in _held:
        with _reentered(key, redacted):
            yield run
        return
    fd = _lock(run)
    _remove_stale_scratch(run)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    atomic_write_json(
        run / INCOMPLETE,
        {"pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": _command()},
    )
    _held[key] = 1
    if redacted:
        _redacted.add(key)
    finished = False
    try:
        yield run
        finished = True
    finally:
        del _held[key]
        _redacted.discard(key)
        if finished:
            (run / INCOMPLETE).unlink(missing_ok=True)
        # removed while still held: a writer that opened it meanwhile sees it gone and retries
        (run / LOCK).unlink(missing_ok=True)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        if not finished and created:
            _remove_if_untouched(run)


def _remove_stale_scratch(run: Path) -> None:
    """Delete the private scratch a redacted run killed with SIGKILL left here (:data:`SCRATCH_DIR`):
    whichever command opens the run next — its resume, another redacted run, an unredacted one —
    finds and removes it first, saying so in one line (issue 33). The caller holds the run's lock,
    so no live writer is using it."""
    stale = run / SCRATCH_DIR
    if stale.exists():
        shutil.rmtree(stale, ignore_errors=True)
        print(
            f"[lmleak] {stale}: removed the private scratch of an earlier redacted run that did not finish",
            file=sys.stderr,
            flush=True,
        )


@contextlib.contextmanager
def _reentered(key: str, redacted: bool) -> Iterator[None]:
    """A nested :func:`open_run` of a run this process already holds (may mark it redacted inside)."""
    _held[key] += 1
    added = redacted and key not in _redacted
    if added:
        _redacted.add(key)
    try:
        yield
    finally:
        _held[key] -= 1
        if added:
            _redacted.discard(key)


def _lock(run: Path) -> int:
    """An open descriptor of ``run/.lock`` holding its exclusive lock (RunError when another holds it)."""
    while True:
        fd = os.open(run / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise RunError(
                    f"cannot lock {run / LOCK} ({e.strerror}); write the run to a local folder"
                ) from None
            raise RunError(
                f"{run} is being written by another lmleak process (pid {holder}); wait for it to finish "
                "or give another output folder"
            ) from None
        if _is_file_at(fd, run / LOCK):
            return fd
        os.close(fd)  # its writer removed this file as it ended, after we opened it: lock the new one


def _is_file_at(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (not removed or replaced since)."""
    try:
        at = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (at.st_dev, at.st_ino)


def _remove_if_untouched(run: Path) -> None:
    """A run folder this call created and in which nothing but the lock and the marker was written
    (the command was refused before its first output) is removed: a refused command leaves nothing."""
    with contextlib.suppress(OSError):
        if set(os.listdir(run)) <= {LOCK, INCOMPLETE}:
            for name in (LOCK, INCOMPLETE):
                (run / name).unlink(missing_ok=True)
            run.rmdir()


def writes_run(arg: str = "out_dir") -> Callable[[F], F]:
    """Decorate a function that writes a run directory (its argument ``arg``): the call runs inside
    :func:`open_run` on it (nothing happens when the argument is None).

    Example:
        >>> import tempfile, pathlib
        >>> @writes_run("out")
        ... def stage(out):
        ...     return (pathlib.Path(out) / INCOMPLETE).exists()
        >>> stage(pathlib.Path(tempfile.mkdtemp()) / "r")
        True
    """

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            path = sig.bind_partial(*args, **kwargs).arguments.get(arg)
            if path is None:
                return fn(*args, **kwargs)
            with open_run(path):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _stage_outputs(run: Path) -> Iterator[Path]:
    """What a run's summary is computed from: its Parquet tables and the summaries of nested stages."""
    for f in run.rglob("*"):
        if any(part.startswith(".") for part in f.relative_to(run).parts) or f.name in ADDENDA:
            continue  # temporary files of a write in progress; the lock and marker; study addenda
        if f.suffix == ".parquet" or (f.name == "summary.json" and f.parent != run):
            yield f


def check_run(run_dir: str | Path, *, name: str = "summary.json") -> Path:
    """Refuse (:class:`~lmleak.errors.RunError`) a run that is incomplete or inconsistent.

    Incomplete: a write started and did not finish (``.incomplete`` here or in a nested stage), or
    there is no summary. Inconsistent: a stage output is newer than the summary (a later write
    stopped before it rewrote the summary). Returns the run directory.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> with open_run(d):
        ...     _ = write_summary(d, {"stage": "demo"})
        >>> check_run(d) == d
        True
        >>> _ = (d / INCOMPLETE).write_text("{}")
        >>> check_run(d)
        Traceback (most recent call last):
        ...
        lmleak.errors.RunError: ... is incomplete: ...
    """
    run = Path(run_dir)
    if not run.is_dir():
        raise RunError(f"{run} is not a run directory; pass the folder a command wrote (its --out)")
    for marker in sorted(run.rglob(INCOMPLETE)):
        try:
            info = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info = {}
        info = info if isinstance(info, dict) else {}
        where = "" if marker.parent == run else f" (in {marker.parent.relative_to(run)})"
        when = f" started {info['started']}" if info.get("started") else ""
        cmd = f" ({info['command']})" if info.get("command") else ""
        raise RunError(
            f"{run} is incomplete: a write{where}{when} did not finish, so its results cannot be trusted; "
            f"re-run the command that writes it{cmd}"
        )
    summary = run / name
    if not summary.is_file():
        raise RunError(f"{run} has no {name}: the run did not finish; re-run the command that writes it")
    written = summary.stat().st_mtime_ns
    for f in _stage_outputs(run):
        if f.stat().st_mtime_ns > written:
            raise RunError(
                f"{run} is inconsistent: {f.relative_to(run)} is newer than {name} (a later write stopped "
                "before it finished); re-run the command that writes it"
            )
    return run


def _finish(tmp: Path, path: Path) -> Path:
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write text to ``path`` via a temporary file and a rename; owner-only permissions."""
    path = Path(path)
    owner_only()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    return _finish(tmp, path)


def _jsonable(obj: Any) -> Any:
    """NaN/inf become null (JSON has no NaN); numpy scalars become Python numbers, numpy arrays (the
    list columns of Parquet tables) lists, dates ISO strings.

    Example:
        >>> import numpy as np
        >>> _jsonable({"a": np.array([1, 2]), "b": [np.float32(0.5), float("nan")], "c": {"d": np.int64(3)}})
        {'a': [1, 2], 'b': [0.5, None], 'c': {'d': 3}}
    """
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and getattr(obj, "ndim", 0) >= 1:
        return [_jsonable(v) for v in obj.tolist()]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 1) == 0:
        obj = obj.item()
    if hasattr(obj, "isoformat") and callable(obj.isoformat):
        return obj.isoformat()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def to_json(obj: Any) -> str:
    """Strict JSON (no NaN), indented, keys in insertion order."""
    return json.dumps(_jsonable(obj), indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, to_json(obj))


def write_parquet(df: Any, path: str | Path) -> Path:
    """Write a pandas DataFrame or pyarrow Table to Parquet atomically, owner-only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    owner_only()
    path.parent.mkdir(parents=True, exist_ok=True)
    table = df if isinstance(df, pa.Table) else pa.Table.from_pandas(df, preserve_index=False)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    return _finish(tmp, path)


def write_summary(
    run_dir: str | Path,
    summary: dict[str, Any],
    *,
    name: str = "summary.json",
    model: Any = None,
    corpus: Any = None,
) -> Path:
    """Write ``summary.json`` with ``schema_version`` and the lmleak version first.

    ``model`` (a loaded model or its spec) and ``corpus`` (a loaded corpus or its file), when the
    stage has them, add ``provenance`` (:func:`lmleak.fingerprints.run_provenance`) and, for a model
    that answers from a cache, ``cache: {hits, misses, fingerprint, ...}``, to ``summary`` itself (so
    a stage that returns its summary returns what the file holds), and for a model behind an API
    ``tokenizer_verified`` (whether its tokenizer was checked against the server's ``/tokenize``); a
    summary that already holds one of these keys keeps its own.

    Example:
        >>> import tempfile, pathlib, json
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> corpus = d / "c.jsonl"
        >>> _ = corpus.write_text('{"text": "hi"}\\n')
        >>> s = json.loads(write_summary(d, {"stage": "demo"}, corpus=corpus).read_text())
        >>> s["provenance"]["corpus"]["size"], s["provenance"]["lmleak_version"] == __version__
        (15, True)
    """

    if model is not None or corpus is not None:
        summary.setdefault("provenance", run_provenance(model=model, corpus=corpus))
        cache = cache_record(model)
        if cache is not None:
            summary.setdefault("cache", cache)
        verified = getattr(model, "tokenizer_verified", None)
        if isinstance(verified, bool):  # a model behind an API read through a local tokenizer or its own
            summary.setdefault("tokenizer_verified", verified)
    full = {"schema_version": SCHEMA_VERSION, "lmleak_version": __version__, **summary}
    return atomic_write_json(Path(run_dir) / name, full)


def read_summary(run_dir: str | Path, *, name: str = "summary.json") -> dict[str, Any]:
    p = Path(run_dir) / name
    if not p.exists():
        raise RunError(f"{p} does not exist; run the stage that writes it first")
    try:
        return dict(json.loads(p.read_text(encoding="utf-8")))
    except json.JSONDecodeError as e:
        raise RunError(f"{p} is not valid JSON ({e}); rerun the stage that writes it") from e
