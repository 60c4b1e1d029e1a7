"""Progress in a CI log (issue 14): heartbeat lines when stderr is not a terminal, none with --quiet."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from lmleak import progress


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_heartbeat_fires_by_the_clock_with_stage_counts_rate_and_eta(monkeypatch):
    clock, stream = FakeClock(), io.StringIO()
    monkeypatch.setattr(progress, "_clock", clock)
    monkeypatch.setattr(progress, "_stream", stream)
    monkeypatch.setattr(progress, "_ENABLED", True)
    for _ in progress.track(range(100), description="ledger", unit="docs"):
        clock.now += 1.0  # one item a second: a line every 30 items
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[lmleak] ledger: started, 100 docs"
    assert lines[1] == "[lmleak] ledger: 30/100 docs (30%), 1.0 docs/s, ETA 1m10s"
    assert len([ln for ln in lines if "/100 docs" in ln]) == 3  # at 30, 60 and 90 s
    assert lines[-1] == "[lmleak] ledger: done, 100 docs in 1m40s"


def test_quiet_logs_nothing(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(progress, "_stream", stream)
    monkeypatch.setattr(progress, "_ENABLED", False)
    assert list(progress.track(range(5), description="x")) == list(range(5))
    with progress.stage("y"):
        pass
    assert stream.getvalue() == ""


def test_a_command_in_a_pipe_logs_plain_lines_and_quiet_silences_them(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"user_id": f"u{i % 3}", "text": f"hello number {i} here"}) + "\n" for i in range(30)
        )
    )
    base = [sys.executable, "-m", "lmleak.cli.main"]
    args = ["report", "--model", f"fake:{corpus}", "--corpus", str(corpus), "--out"]
    res = subprocess.run([*base, *args, str(tmp_path / "r1")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "[lmleak] ledger: started" in res.stderr and "[lmleak] ledger: done" in res.stderr
    assert "\x1b[" not in res.stderr  # no terminal escapes in a log
    res = subprocess.run(
        [*base, "--quiet", *args, str(tmp_path / "r2")], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    assert "[lmleak]" not in res.stderr


def test_only_the_outermost_pass_logs(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(progress, "_stream", stream)
    monkeypatch.setattr(progress, "_ENABLED", True)
    for _ in progress.track(range(3), description="outer"):
        assert list(progress.track(range(4), description="inner")) == list(range(4))
    text = stream.getvalue()
    assert "outer: started" in text and "outer: done, 3 items" in text and "inner" not in text
