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
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from lmleak.errors import RunError
from lmleak.progress import track
from lmleak.runs import atomic_write_json, secure_dir

T = TypeVar("T")
Work = Callable[[list[Any]], Any]  # items -> pyarrow.Table
MANIFEST = "manifest.json"


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


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
            {"fingerprint": self.fingerprint, "shard_size": self.shard_size, "complete": self.complete, "shards": self.shards},
        )


def _write_shard(out_dir: Path, index: int, table: Any) -> int:
    import pyarrow.parquet as pq

    final = shard_path(out_dir, index)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    os.chmod(tmp, 0o600)
    os.replace(tmp, final)
    return int(table.num_rows)


def run_sharded(
    items: Iterable[Any],
    factory: Callable[[], Work],
    out_dir: str | Path,
    *,
    fingerprint: str,
    shard_size: int = 256,
    engine: str = "local",
    ray_address: str | None = None,
    num_workers: int = 2,
    num_gpus_per_worker: float = 0.0,
    total_items: int | None = None,
    description: str = "pass",
) -> Path:
    """Process ``items`` shard by shard into ``out_dir``; returns ``out_dir`` once complete.

    Args:
        items: the work items, streamed (documents, prompts, candidates...).
        factory: picklable zero-argument callable returning the work function (items -> Arrow table).
        fingerprint: identifies model + data + options; must match to resume.
        engine: ``"local"`` (in-process) or ``"ray"`` (one actor per worker; a local Ray is started
            when ``ray_address`` is None and none is running).
    """

    if shard_size < 1:
        raise ValueError("shard_size must be >= 1")
    out = secure_dir(out_dir)
    manifest = Manifest(out, fingerprint, shard_size)
    if manifest.complete:
        return out
    total = None if total_items is None else -(-total_items // shard_size)
    shards = enumerate(_chunks(items, shard_size))
    if engine == "local":
        work: Work | None = None
        for index, chunk in track(shards, total=total, description=description, unit="shards"):
            if manifest.done(index, out):
                continue
            if work is None:
                work = factory()
            rows = _write_shard(out, index, work(chunk))
            manifest.record(index, len(chunk), rows)
    elif engine == "ray":
        _run_ray(shards, factory, out, manifest, ray_address, num_workers, num_gpus_per_worker, total, description)
    else:
        raise ValueError(f"unknown engine {engine!r}; use 'local' or 'ray'")
    manifest.complete = True
    manifest.save()
    return out


def _run_ray(
    shards: Iterator[tuple[int, list[Any]]],
    factory: Callable[[], Work],
    out: Path,
    manifest: Manifest,
    ray_address: str | None,
    num_workers: int,
    num_gpus: float,
    total: int | None,
    description: str,
) -> None:
    import ray


    if not ray.is_initialized():
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if ray_address:
            ray.init(address=ray_address, log_to_driver=False)
        else:
            ray.init(num_cpus=num_workers, include_dashboard=False, log_to_driver=False, configure_logging=False)

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


def run_rows(
    items: list[Any],
    work: Callable[[list[Any]], list[dict[str, Any]]],
    out_dir: str | Path,
    *,
    fingerprint: str,
    shard_size: int,
    description: str = "pass",
) -> list[dict[str, Any]]:
    """A resumable local pass whose work maps a shard of items to one row (dict) per result.

    The rows of every shard are kept in ``out_dir`` as :func:`run_sharded` keeps them, so a rerun
    after an interruption redoes only the incomplete shards; returns all rows in item order. Each
    shard is read back on its own (column types may differ between shards: a column all None in one
    shard and float in another). A folder holding a pass with another fingerprint (other model,
    items or options) is a stale cache of this pass's own making and is replaced.
    """
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    old = Path(out_dir) / MANIFEST
    if old.exists():
        data = json.loads(old.read_text())
        if data.get("fingerprint") != fingerprint or data.get("shard_size") != shard_size:
            shutil.rmtree(out_dir)

    def factory() -> Work:
        return lambda chunk: pa.Table.from_pylist(work(chunk))

    out = run_sharded(items, factory, out_dir, fingerprint=fingerprint, shard_size=shard_size,
                      total_items=len(items), description=description)
    data = json.loads((out / MANIFEST).read_text())
    rows: list[dict[str, Any]] = []
    for i in sorted(data["shards"]):
        rows.extend(pq.read_table(shard_path(out, int(i))).to_pylist())
    return rows
