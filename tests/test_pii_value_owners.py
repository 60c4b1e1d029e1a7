"""tools/pii_value_owners.py sorts headline leaked-PII sequences into personal, shared and fragment
values and counts people both ways; checked here against a run small enough to count by hand."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "pii_value_owners.py"
sys.path.insert(0, str(ROOT / "tools"))

import pii_value_owners  # noqa: E402


def test_the_tools_doctests_pass():
    result = doctest.testmod(pii_value_owners)
    assert result.attempted >= 3 and result.failed == 0


def test_a_hand_counted_run_gives_the_hand_counts(tmp_path):
    # a (member) and h (held out) each write their own address; both quote the list's address
    docs = [
        ("a", "From: Ann <ann7@example.org>\nTo: list@example.org\nhello"),
        ("b", "From: Bo <bo@example.com>\nTo: list@example.org\nhi"),
        ("h", "From: Hal <hal3@example.com>\nTo: list@example.org\nyo"),
    ]
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"user_id": u, "text": t}) + "\n" for u, t in docs)
    )
    model = tmp_path / "model"
    model.mkdir()
    (model / "holdout.json").write_text(json.dumps({"held_out_users": ["h"]}))
    report = tmp_path / "run" / "models" / "m" / "report"
    report.mkdir(parents=True)
    rows = [
        # k = 1: a's whole address (personal); h's sequence holds only the list's address (shared)
        (1, "Ann <ann7@example.org>\nTo:", ["a"], True),
        (1, "m>\nTo: list@example.org", ["h"], True),
        # k = 3: the tail of a's address only (fragment); a row that is not headline is ignored
        (3, "7@example.org>\nTo", ["a"], True),
        (3, "hal3@example.com", ["h"], False),
    ]
    pd.DataFrame(rows, columns=["k", "text", "user_ids", "pii_headline"]).to_parquet(
        report / "sequences.parquet"
    )
    out = subprocess.run(
        [sys.executable, str(TOOL), str(tmp_path / "run"), "--corpus", str(tmp_path / "corpus.jsonl"),
         "--holdout", str(model)],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    ).stdout  # fmt: skip
    lines = out.splitlines()
    assert "people: 3 (1 held out)" in lines[0]
    assert lines[1] == "k=1: 2 headline sequences: personal 1, shared 1, fragment 0"
    assert lines[2].startswith(
        "  people affected (the report): members 1 of 2, held-out 1 of 1; excess -0.500"
    )
    assert lines[3].startswith(
        "  people with a personal value: members 1 of 2, held-out 0 of 1; excess 0.500"
    )
    assert lines[4] == "k=3: 1 headline sequences: personal 0, shared 0, fragment 1"
    assert lines[5].startswith(
        "  people affected (the report): members 1 of 2, held-out 0 of 1; excess 0.500"
    )
    assert lines[6].startswith(
        "  people with a personal value: members 0 of 2, held-out 0 of 1; excess 0.000"
    )


def test_a_folder_that_is_not_an_audit_run_exits_2_with_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, str(TOOL), str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {tmp_path}: expected one model's report/sequences.parquet, found 0; give a one-model audit run"
    ]
