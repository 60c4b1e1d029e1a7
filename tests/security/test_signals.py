"""SIGINT/SIGTERM during a long command (issue 16, item 8): the shard in progress is finished (or, on
a second signal, dropped), what was kept and the exact command to resume are printed, exit 130, and
resuming gives the same result as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")

# A real lmleak CLI with one extra command: a resumable pass of 6 one-item shards. Shard 1 is slow
# (SLOW seconds) so the test can signal while it is in progress; every shard announces itself.
SCRIPT = """
import sys, time
from pathlib import Path
from lmleak.cli.main import app
from lmleak.shards import fingerprint_of, run_rows

SLOW = float(sys.argv.pop())

@app.command("slowpass")
def slowpass(out: Path) -> None:
    def work(chunk):
        print(f"shard {chunk[0]}", flush=True)
        time.sleep(SLOW if chunk[0] == 1 else 0.0)
        return [{"i": i, "square": i * i} for i in chunk]

    rows = run_rows(list(range(6)), work, out, fingerprint=fingerprint_of("squares"), shard_size=1)
    print("rows", [r["square"] for r in rows], flush=True)

app()
"""


def _start(tmp_path, out, slow):
    script = tmp_path / "cli.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": SRC, "LMLEAK_QUIET": "1"}
    return subprocess.Popen(
        [sys.executable, str(script), "slowpass", str(out), str(slow)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for(proc, line):
    seen = []
    for got in proc.stdout:
        seen.append(got.strip())
        if got.strip() == line:
            return seen
    raise AssertionError(f"{line!r} never printed; got {seen}")


def _kept(out):
    return sorted(json.loads((out / "manifest.json").read_text())["shards"])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_finishes_the_shard_in_progress_prints_what_was_kept_and_how_to_resume(tmp_path, sig):
    out = tmp_path / "pass"
    proc = _start(tmp_path, out, slow=1.0)
    _wait_for(proc, "shard 1")  # shard 0 is kept, shard 1 is in progress
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "shard 2" not in stdout  # nothing after the shard in progress
    assert _kept(out) == ["00000", "00001"]  # the shard in progress was finished and recorded
    assert "2 of 6 shards kept in " + str(out) in stderr
    assert f"resume with: lmleak slowpass {out}" in stderr
    assert "Traceback" not in stderr

    resumed = _start(tmp_path, out, slow=0.0)
    stdout, stderr = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, stderr
    assert [line for line in stdout.splitlines() if line.startswith("shard")] == [
        "shard 2",
        "shard 3",
        "shard 4",
        "shard 5",
    ]
    assert "rows [0, 1, 4, 9, 16, 25]" in stdout  # identical to an uninterrupted run


def test_a_second_signal_drops_the_shard_in_progress(tmp_path):
    out = tmp_path / "pass"
    proc = _start(tmp_path, out, slow=60.0)
    _wait_for(proc, "shard 1")
    proc.send_signal(signal.SIGINT)
    assert "stopping after the current shard" in proc.stderr.readline()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert _kept(out) == ["00000"]
    assert "1 of 6 shards kept" in stderr and f"resume with: lmleak slowpass {out}" in stderr
    assert not (out / "shard-00001.parquet").exists()
