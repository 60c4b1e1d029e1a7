"""Run directories: atomic owner-only writes, strict JSON, and the complete/consistent check."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pandas as pd
import pytest

from lmleak.errors import RunError
from lmleak.runs import (
    INCOMPLETE,
    SCHEMA_VERSION,
    atomic_write_json,
    check_run,
    open_run,
    read_summary,
    to_json,
    write_parquet,
    write_summary,
)


def test_json_is_strict_and_numpy_values_become_python_values():
    text = to_json(
        {"a": np.float32(0.5), "b": [float("nan"), np.inf], "c": np.array([[1, 2]]), "d": np.int64(3)}
    )
    assert json.loads(text) == {"a": 0.5, "b": [None, None], "c": [[1, 2]], "d": 3}
    assert "NaN" not in text and "Infinity" not in text


def test_writes_are_owner_only_and_leave_no_temporary_file(tmp_path):
    p = atomic_write_json(tmp_path / "sub" / "x.json", {"k": 1})
    assert json.loads(p.read_text()) == {"k": 1}
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    assert sorted(f.name for f in p.parent.iterdir()) == ["x.json"]


def test_summary_round_trip_puts_the_schema_first(tmp_path):
    write_summary(tmp_path, {"stage": "report", "auc": 0.5})
    s = read_summary(tmp_path)
    assert list(s)[:2] == ["schema_version", "lmleak_version"] and s["schema_version"] == SCHEMA_VERSION
    assert s["auc"] == 0.5
    with pytest.raises(RunError, match="does not exist"):
        read_summary(tmp_path / "nope")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(RunError, match="not valid JSON"):
        read_summary(tmp_path, name="broken.json")


def test_check_run_refuses_an_unfinished_a_missing_and_an_inconsistent_run(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(RunError, match="not a run directory"):
        check_run(run)
    with open_run(run):
        assert (run / INCOMPLETE).exists()  # marked while the write is in progress
        write_parquet(pd.DataFrame({"x": [1, 2]}), run / "rows.parquet")
        write_summary(run, {"stage": "demo"})
    assert not (run / INCOMPLETE).exists()
    assert check_run(run) == run
    # a later write rewrote a table but stopped before the summary
    later = (run / "summary.json").stat().st_mtime_ns + 10**9
    os.utime(run / "rows.parquet", ns=(later, later))
    with pytest.raises(RunError, match="inconsistent"):
        check_run(run)
    (run / "summary.json").unlink()
    with pytest.raises(RunError, match="no summary.json"):
        check_run(run)
    (run / INCOMPLETE).write_text(json.dumps({"command": "lmleak report"}))
    with pytest.raises(RunError, match="incomplete.*lmleak report"):
        check_run(run)


def test_the_lock_is_removed_when_a_run_ends_finished_or_not(tmp_path):
    """Issue 29 item 6: a finished audit left its `.lock` behind."""
    import fcntl

    from lmleak.runs import LOCK, open_run

    run = tmp_path / "r"
    with open_run(run):
        with open_run(run):  # re-entrant: the inner block keeps the lock
            pass
        assert (run / LOCK).is_file()
        fd = os.open(run / LOCK, os.O_RDWR)
        with pytest.raises(BlockingIOError):  # held against a second writer
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)
        (run / "out.txt").write_text("x")
    assert not (run / LOCK).exists()
    with pytest.raises(ValueError), open_run(run):
        raise ValueError("a failed write keeps its marker, not its lock")
    assert not (run / LOCK).exists() and (run / ".incomplete").exists()


def test_a_writer_that_opened_a_lock_its_holder_removed_locks_the_new_one(tmp_path, monkeypatch):
    """The race the removal opens: B opens RUN/.lock, A ends (removes the file, unlocks), B locks the
    removed file. B must notice and lock the file at the path, or a third writer C would run beside it."""
    import fcntl

    from lmleak import runs

    run = tmp_path / "r"
    run.mkdir()
    stale = os.open(run / runs.LOCK, os.O_RDWR | os.O_CREAT, 0o600)  # what B opened before A ended
    os.unlink(run / runs.LOCK)  # A ended
    real_open, calls = os.open, []

    def open_once_stale(path, *args, **kwargs):
        calls.append(str(path))
        return (
            stale if len(calls) == 1 and str(path).endswith(runs.LOCK) else real_open(path, *args, **kwargs)
        )

    monkeypatch.setattr(runs.os, "open", open_once_stale)
    with runs.open_run(run):
        monkeypatch.setattr(runs.os, "open", real_open)
        assert sum(c.endswith(runs.LOCK) for c in calls) == 2  # retried once
        fd = os.open(run / runs.LOCK, os.O_RDWR)  # C: the file at the path is the one held
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)
    assert not (run / runs.LOCK).exists()
