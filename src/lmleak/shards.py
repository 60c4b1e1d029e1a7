"""Sharded, resumable passes over a stream of work items, locally or on Ray.

A pass cuts its input stream into shards of ``shard_size`` items, processes each shard into an
Arrow table and writes ``shard-NNNNN.parquet`` (temporary name, then rename), then records it in
``manifest.json`` (also written atomically). Rules:

- A rerun with the same ``fingerprint`` skips every shard the manifest lists as complete and
  redoes the others, so an interrupted pass (even ``kill -9``) resumes and its final result is
  identical to an uninterrupted run. A shard file not in the manifest (killed between rename and
  manifest update) is simply redone.
- A different fingerprint (other model, corpus, options) in an existing folder is an error, never
  a silent mix of two runs.
- Items are streamed: at most one shard (local) or ``2 x workers`` shards (Ray) are in memory,
  so memory stays flat as the corpus grows.
- The work function is built once per worker by a picklable ``factory`` (loading a model is
  expensive): the local engine builds it once; Ray builds it once per actor.
- SIGINT/SIGTERM during a pass (main thread): the first finishes the shard in progress, records it
  and stops with :class:`~lmleak.errors.Interrupted` (what was kept; the CLI prints the command to
  resume and exits 130); a second signal drops the shard in progress at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from lmleak.errors import ConfigError, Interrupted, RunError
from lmleak.progress import track
from lmleak.runs import atomic_write_json, secure_dir, write_parquet
from lmleak.settings import Settings, setting

T = TypeVar("T")
Work = Callable[[list[Any]], Any]  # items -> pyarrow.Table
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class ShardEngine(Settings):
    """Where a sharded pass runs: ``engine`` ``"local"`` or ``"ray"`` and Ray's settings (the
    options ``--engine``, ``--ray-address``, ``--num-workers``, ``--gpus-per-worker`` of every
    command with a sharded pass: the ledger, probing, membership scoring).

    Example:
        >>> ShardEngine("ray", num_workers=4).num_workers
        4
    """

    engine: str = setting("local", help="Where the sharded pass runs: local | ray.", choices=("local", "ray"))
    ray_address: str | None = setting(None, help="An existing Ray cluster (default: start a local Ray).")
    num_workers: int = setting(2, help="Ray model actors (one per worker or GPU).", ge=1)
    gpus_per_worker: float = setting(0.0, help="GPUs each Ray actor reserves (0: CPU).", ge=0)


class ModelWork:
    """A picklable work factory for Ray: each worker loads its own models, then maps a chunk.

    ``models`` maps keyword names to loaders (objects with ``load()``, such as
    :class:`lmleak.ledger.ledger.ModelSpec`; None passes None): only these few bytes travel to the
    actors, never the weights. The worker function is ``fn(chunk, **loaded, **kwargs)``; ``fn`` must
    be importable (a module-level function). A worker that reserved a GPU moves the models there.
    """

    def __init__(self, fn: Callable[..., Any], models: dict[str, Any], **kwargs: Any) -> None:
        self.fn, self.models, self.kwargs = fn, models, kwargs

    def __call__(self) -> Callable[[list[Any]], Any]:
        loaded = {k: None if v is None else v.load() for k, v in self.models.items()}
        if any(hasattr(m, "to_device") for m in loaded.values()):
            import torch

            if torch.cuda.is_available():  # a Ray actor that reserved a GPU sees it as cuda:0
                for m in loaded.values():
                    if m is not None and hasattr(m, "to_device"):
                        m.to_device("cuda")
        return partial(self.fn, **loaded, **self.kwargs)


class Shipped:
    """A loader that hands over an already loaded model: Ray pickles it to each actor (fine for
    small models; give a :class:`lmleak.ledger.ledger.ModelSpec` for large ones)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def load(self) -> Any:
        return self.model


@contextmanager
def ray_session(engine: ShardEngine | None) -> Iterator[None]:
    """Start a local Ray (or connect to ``ray_address``) for the passes inside, and shut it down
    afterwards if this call started it; nothing for the local engine. Several passes of one
    command (probing: one per target type) then share one Ray start-up."""
    if engine is None or engine.engine != "ray":
        yield
        return
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--engine ray needs the 'ray' package",
            field="--engine",
            hint="pip install ray, or use --engine local",
        ) from None
    started = not ray.is_initialized()
    _init_ray(engine.ray_address, engine.num_workers)
    try:
        yield
    finally:
        if started and ray.is_initialized():
            ray.shutdown()


def _init_ray(ray_address: str | None, num_workers: int) -> None:
    import ray

    if not ray.is_initialized():
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if ray_address:
            ray.init(address=ray_address, log_to_driver=False)
        else:
            ray.init(
                num_cpus=num_workers, include_dashboard=False, log_to_driver=False, configure_logging=False
            )


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


@contextlib.contextmanager
def stop_requests() -> Iterator[list[int]]:
    """While active, SIGINT/SIGTERM append to the yielded list instead of killing the process; a
    second signal raises :class:`KeyboardInterrupt` (drop the work in progress). Outside the main
    thread (where handlers cannot be set) the list simply stays empty."""
    stop: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: Any) -> None:
        if stop:
            raise KeyboardInterrupt
        stop.append(signum)
        sys.stderr.write("lmleak: stopping after the current shard (signal again to drop it)\n")
        sys.stderr.flush()

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def shard_path(out_dir: Path, index: int) -> Path:
    return out_dir / f"shard-{index:05d}.parquet"


class Manifest:
    """The record of which shards of a pass are complete."""

    def __init__(self, out_dir: Path, fingerprint: str, shard_size: int) -> None:
        self.path = out_dir / MANIFEST
        self.fingerprint = fingerprint
        self.shard_size = shard_size
        self.shards: dict[str, dict[str, int]] = {}
        self.complete = False
        if self.path.exists():
            data = json.loads(self.path.read_text())
            if data.get("fingerprint") != fingerprint or data.get("shard_size") != shard_size:
                raise RunError(
                    f"{out_dir} holds a pass with other settings (fingerprint {data.get('fingerprint')!r}, "
                    f"shard size {data.get('shard_size')}); use a new output folder or delete this one"
                )
            self.shards = dict(data.get("shards", {}))
            self.complete = bool(data.get("complete", False))

    def done(self, index: int, out_dir: Path) -> bool:
        return f"{index:05d}" in self.shards and shard_path(out_dir, index).exists()

    def record(self, index: int, items: int, rows: int) -> None:
        self.shards[f"{index:05d}"] = {"items": items, "rows": rows}
        self.save()

    def save(self) -> None:
        atomic_write_json(
            self.path,
            {
                "fingerprint": self.fingerprint,
                "shard_size": self.shard_size,
                "complete": self.complete,
                "shards": self.shards,
            },
        )


def _write_shard(out_dir: Path, index: int, table: Any) -> int:
    write_parquet(table, shard_path(out_dir, index))  # a temporary name, then the rename
    return int(table.num_rows)


def run_sharded(
    items: Iterable[Any],
    factory: Callable[[], Work],
    out_dir: str | Path,
    *,
    fingerprint: str,
    shard_size: int = 256,
    engine: ShardEngine | None = None,
    total_items: int | None = None,
    description: str = "pass",
) -> Path:
    """Process ``items`` shard by shard into ``out_dir``; returns ``out_dir`` once complete.

    Args:
        items: the work items, streamed (documents, prompts, candidates...).
        factory: picklable zero-argument callable returning the work function (items -> Arrow table).
        fingerprint: identifies model + data + options; must match to resume.
        engine: where it runs (None: in-process); :class:`ShardEngine` ``"ray"``: one actor per
            worker, a local Ray started when its ``ray_address`` is None and none is running.
    """

    if shard_size < 1:
        raise ValueError("shard_size must be >= 1")
    out = secure_dir(out_dir)
    manifest = Manifest(out, fingerprint, shard_size)
    if manifest.complete:
        return out
    total = None if total_items is None else -(-total_items // shard_size)
    shards = enumerate(_chunks(items, shard_size))
    with stop_requests() as stop:
        try:
            if engine is None or engine.engine == "local":
                _run_local(shards, factory, out, manifest, total, description, stop)
            else:
                _run_ray(shards, factory, out, manifest, engine, total, description, stop)
        except KeyboardInterrupt:
            if not stop:
                raise  # not from a signal during this pass: leave it as it is
            # the second signal: the shard in progress is dropped
        if stop:
            raise Interrupted(out, kept=len(manifest.shards), total=total, description=description)
    manifest.complete = True
    manifest.save()
    return out


def _run_ray(
    shards: Iterator[tuple[int, list[Any]]],
    factory: Callable[[], Work],
    out: Path,
    manifest: Manifest,
    engine: ShardEngine,
    total: int | None,
    description: str,
    stop: list[int] | None = None,
) -> None:
    import ray

    num_workers, num_gpus = engine.num_workers, engine.gpus_per_worker
    _init_ray(engine.ray_address, num_workers)

    @ray.remote(num_cpus=1, num_gpus=num_gpus)
    class ShardWorker:
        def __init__(self, factory: Callable[[], Work]) -> None:
            import torch

            torch.set_num_threads(1)
            self.work = factory()

        def process(self, chunk: list[Any]) -> Any:
            return self.work(chunk)

    workers = [ShardWorker.remote(factory) for _ in range(num_workers)]  # type: ignore[attr-defined]  # ray.remote
    pending: dict[Any, tuple[int, int]] = {}
    free = list(range(num_workers))
    busy: dict[Any, int] = {}

    def drain(block_until: int) -> None:
        while len(pending) > block_until:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            index, n_items = pending.pop(ref)
            free.append(busy.pop(ref))
            rows = _write_shard(out, index, ray.get(ref))
            manifest.record(index, n_items, rows)

    for index, chunk in track(shards, total=total, description=description, unit="shards"):
        if stop:
            break  # stop submitting; the shards in flight are finished and kept below
        if manifest.done(index, out):
            continue
        if not free:
            drain(len(pending) - 1)
        w = free.pop()
        ref = workers[w].process.remote(chunk)
        pending[ref] = (index, len(chunk))
        busy[ref] = w
    drain(0)


def read_shards(out_dir: str | Path) -> Any:
    """All complete shards of a pass, concatenated in shard order, as one Arrow table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    manifest_path = out / MANIFEST
    if not manifest_path.exists():
        raise RunError(f"{out} has no {MANIFEST}; the pass has not run")
    data = json.loads(manifest_path.read_text())
    if not data.get("complete"):
        raise RunError(f"the pass in {out} is incomplete; rerun the same command to resume it")
    tables = [pq.read_table(shard_path(out, int(i))) for i in sorted(data["shards"])]
    return pa.concat_tables(tables) if tables else pa.table({})


def fingerprint_of(*parts: Any) -> str:
    """A short stable hash of ``parts`` (their ``repr``), for :func:`run_rows`' resume check.

    Example:
        >>> fingerprint_of("model", [1, 2]) == fingerprint_of("model", [1, 2]) != fingerprint_of("model", [2, 1])
        True
    """
    import hashlib

    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode("utf-8", "surrogatepass") + b"\x00")
    return h.hexdigest()[:24]


def _run_local(
    shards: Iterable[tuple[int, list[Any]]],
    factory: Callable[[], Work],
    out: Path,
    manifest: Manifest,
    total: int | None,
    description: str,
    stop: list[int],
) -> None:
    """The local engine: the shards not done yet, in order, in this process (the work built once, lazily)."""
    work: Work | None = None
    for index, chunk in track(shards, total=total, description=description, unit="shards"):
        if stop:
            break
        if manifest.done(index, out):
            continue
        if work is None:
            work = factory()
        rows = _write_shard(out, index, work(chunk))
        manifest.record(index, len(chunk), rows)


def run_rows(
    items: list[Any],
    work: Callable[[list[Any]], list[dict[str, Any]]],
    out_dir: str | Path,
    *,
    fingerprint: str,
    shard_size: int,
    description: str = "pass",
    engine: ShardEngine | None = None,
    factory: Callable[[], Callable[[list[Any]], list[dict[str, Any]]]] | None = None,
) -> list[dict[str, Any]]:
    """A resumable pass whose work maps a shard of items to one row (dict) per result.

    The rows of every shard are kept in ``out_dir`` as :func:`run_sharded` keeps them, so a rerun
    after an interruption redoes only the incomplete shards; returns all rows in item order. Each
    shard is read back on its own (column types may differ between shards: a column all None in one
    shard and float in another). A folder holding a pass with another fingerprint (other model,
    items or options) is a stale cache of this pass's own making and is replaced.

    ``engine`` of kind ``"ray"`` runs the shards on Ray actors; each builds its work once with
    ``factory`` (picklable, e.g. :class:`ModelWork`), which must compute what ``work`` computes.
    The shards and their order are the same as the local engine's, so the rows are too. The
    fingerprint does not depend on the engine: a pass interrupted on one resumes on the other.
    """
    _drop_stale_pass(out_dir, fingerprint, shard_size)
    eng = engine or ShardEngine()
    if eng.engine == "ray" and factory is None:
        raise ValueError("engine 'ray' needs a picklable factory")
    rows_of = factory if eng.engine == "ray" and factory is not None else (lambda: work)
    out = run_sharded(
        items,
        _RowsFactory(rows_of),
        out_dir,
        fingerprint=fingerprint,
        shard_size=shard_size,
        total_items=len(items),
        description=description,
        engine=eng,
    )
    return _read_rows(out)


def _drop_stale_pass(out_dir: str | Path, fingerprint: str, shard_size: int) -> None:
    """Remove ``out_dir`` when it holds a pass with another fingerprint or shard size (a stale cache)."""
    import shutil

    old = Path(out_dir) / MANIFEST
    if old.exists():
        data = json.loads(old.read_text())
        if data.get("fingerprint") != fingerprint or data.get("shard_size") != shard_size:
            shutil.rmtree(out_dir)


def _read_rows(out: Path) -> list[dict[str, Any]]:
    """Every shard's rows, in shard order, each shard read on its own (its column types may differ)."""
    import pyarrow.parquet as pq

    data = json.loads((out / MANIFEST).read_text())
    rows: list[dict[str, Any]] = []
    for i in sorted(data["shards"]):
        rows.extend(pq.read_table(shard_path(out, int(i))).to_pylist())
    return rows


class _RowsFactory:
    """Rows of a :func:`run_rows` work function as an Arrow table (picklable, for Ray actors)."""

    def __init__(self, factory: Callable[[], Callable[[list[Any]], list[dict[str, Any]]]]) -> None:
        self.factory = factory

    def __call__(self) -> Work:
        rows_of = self.factory()
        return lambda chunk: rows_table(rows_of(chunk))


def rows_table(rows: list[dict[str, Any]]) -> Any:
    """Rows (dicts) as an Arrow table with the union of their keys, first-seen order.

    ``pyarrow.Table.from_pylist`` takes its columns from the first row alone, so a key that the
    first row lacks (an e-mail metric when a phone probe comes first) would be dropped silently.

    Example:
        >>> rows_table([{"a": 1}, {"a": 2, "b": True}]).to_pylist()
        [{'a': 1, 'b': None}, {'a': 2, 'b': True}]
    """
    import pyarrow as pa

    keys = list(dict.fromkeys(k for r in rows for k in r))
    return pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows])
