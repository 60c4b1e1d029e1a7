"""The sharded pass engine: resumes exactly, refuses mixed settings, Ray equals local."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lmleak.errors import RunError
from lmleak.shards import ShardEngine, read_shards, run_sharded, shard_path


def square_factory():
    def work(items):
        return pa.table({"x": items, "y": [i * i for i in items]})

    return work


class Exploding:
    """Work that fails on a given item, to simulate an interruption mid-pass."""

    def __init__(self, fail_at: int) -> None:
        self.fail_at = fail_at

    def __call__(self):
        def work(items):
            if self.fail_at in items:
                raise KeyboardInterrupt
            return pa.table({"x": items, "y": [i * i for i in items]})

        return work


def test_a_pass_writes_every_item_once_in_order(tmp_path):
    run_sharded(range(23), square_factory, tmp_path, fingerprint="f", shard_size=5)
    t = read_shards(tmp_path)
    assert t.column("x").to_pylist() == list(range(23))
    assert sorted(p.name for p in tmp_path.glob("shard-*.parquet")) == [
        f"shard-{i:05d}.parquet" for i in range(5)
    ]


def test_an_interrupted_pass_resumes_and_redoes_only_missing_shards(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        run_sharded(range(23), Exploding(12), tmp_path, fingerprint="f", shard_size=5)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert sorted(manifest["shards"]) == ["00000", "00001"] and not manifest["complete"]
    with pytest.raises(RunError, match="incomplete"):
        read_shards(tmp_path)
    first = shard_path(tmp_path, 0).stat().st_mtime_ns
    run_sharded(range(23), square_factory, tmp_path, fingerprint="f", shard_size=5)
    assert shard_path(tmp_path, 0).stat().st_mtime_ns == first  # skipped, not rewritten
    assert read_shards(tmp_path).column("y").to_pylist() == [i * i for i in range(23)]


def test_a_shard_file_missing_from_the_manifest_is_redone(tmp_path):
    run_sharded(range(10), square_factory, tmp_path, fingerprint="f", shard_size=5)
    data = json.loads((tmp_path / "manifest.json").read_text())
    del data["shards"]["00001"]
    data["complete"] = False
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    run_sharded(range(10), square_factory, tmp_path, fingerprint="f", shard_size=5)
    assert read_shards(tmp_path).num_rows == 10


def test_other_settings_in_the_same_folder_are_refused(tmp_path):
    run_sharded(range(10), square_factory, tmp_path, fingerprint="f", shard_size=5)
    with pytest.raises(RunError, match="other settings"):
        run_sharded(range(10), square_factory, tmp_path, fingerprint="g", shard_size=5)


def test_no_temporary_files_remain(tmp_path):
    run_sharded(range(7), square_factory, tmp_path, fingerprint="f", shard_size=3)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_ray_engine_gives_the_same_result_as_local(tmp_path):
    ray = pytest.importorskip("ray")
    import sys

    from ray import cloudpickle

    # this test module is not importable on Ray workers: ship its functions by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    local = run_sharded(range(40), square_factory, tmp_path / "local", fingerprint="f", shard_size=7)
    try:
        run_sharded(
            range(40),
            square_factory,
            tmp_path / "ray",
            fingerprint="f",
            shard_size=7,
            engine=ShardEngine("ray", num_workers=2),
        )
    finally:
        ray.shutdown()
    assert read_shards(tmp_path / "ray").equals(read_shards(local))
