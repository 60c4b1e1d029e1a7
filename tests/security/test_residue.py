"""No private residue, ever (issue 33): a redacted run killed with SIGKILL at any point leaves no PII
value, no plain user or doc id and no decodable token ids in ``$TMPDIR`` or in the run; its private
scratch lives inside the run, owner-only, and the resume (or the next run) removes it.

The kills are deterministic: ``LMLEAK_TEST_SIGKILL_AT`` names the point at which the process sends
itself SIGKILL (:func:`lmleak.report.redaction.sigkill_at`), which skips every ``finally`` as a power
cut or the OOM killer would.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lmleak.report.redaction import SCRATCH_DIR, SIGKILL_ENV, private_scratch, remove_stale_scratch
from tests.security.test_redaction import KEY, _scan
from tests.security.test_redaction import corpus as corpus  # noqa: F401  (the synthetic corpus fixture)

SRC = Path(__file__).resolve().parents[2] / "src"


def _lmleak(args: list[str], tmpdir: Path, kill_at: str | None) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(SRC),
        "TMPDIR": str(tmpdir),
        "LMLEAK_REDACT_KEY": KEY,
        "LMLEAK_QUIET": "1",
        "HF_HUB_OFFLINE": "1",
    }
    env.pop(SIGKILL_ENV, None)
    if kill_at:
        env[SIGKILL_ENV] = kill_at
    cmd = [sys.executable, "-c", "from lmleak.cli.main import main; main()", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def _tmp_files(tmpdir: Path) -> list[Path]:
    return [p for p in tmpdir.rglob("*") if p.is_file()]


def _no_token_ids(run: Path) -> list[str]:
    """Parquet files of the run that could hold token ids: any but the two redacted tables (whose
    integer columns tests/security/test_redaction.py decodes with a BPE tokenizer) and the per-user
    table (keyed ids and numbers; a standalone report writes it as the audit does, issue 34), or any
    with a ``token_ids`` column (a ledger shard)."""
    import pyarrow.parquet as pq

    found = []
    for f in run.rglob("*.parquet"):
        rel = f.relative_to(run).as_posix()
        if (
            rel not in ("occurrences.parquet", "sequences.parquet", "users.parquet")
            or "token_ids" in pq.read_schema(f).names
        ):
            found.append(rel)
    return found


@pytest.mark.parametrize("point", ["redacted-scratch", "redacted-ledger", "redacted-tables"])
def test_a_redacted_report_killed_at_any_point_leaves_no_pii_and_the_resume_cleans_up(
    corpus, tmp_path, point
):
    root, corpus_path, secrets, ids = corpus
    tmpdir, run = tmp_path / "tmp", tmp_path / "run"
    tmpdir.mkdir()
    args = ["report", "--model", f"fake:{corpus_path}", "--corpus", str(corpus_path), "--out", str(run)]
    args += ["--k", "1", "--k", "3", "--redact"]
    killed = _lmleak(args, tmpdir, point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (run / ".incomplete").exists()  # it really died mid-run
    assert _tmp_files(tmpdir) == []  # nothing under $TMPDIR, decodable or not
    assert _scan(run, None, [*secrets, *ids], killed.stdout + killed.stderr) == {}
    assert _no_token_ids(run) == []
    scratch = run / SCRATCH_DIR
    if scratch.exists():
        assert stat.S_IMODE(scratch.stat().st_mode) == 0o700
        assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in scratch.rglob("*"))
    resumed = _lmleak(args, tmpdir, None)
    assert resumed.returncode == 0, resumed.stderr
    assert not scratch.exists() and not (run / ".incomplete").exists()
    assert _tmp_files(tmpdir) == []
    assert _scan(run, None, [*secrets, *ids], resumed.stdout + resumed.stderr) == {}
    assert _no_token_ids(run) == []


@pytest.mark.slow
def test_a_redacted_report_killed_after_training_its_leave_out_model_leaves_no_ids(corpus, tmp_path):
    """The leave-out public model is trained on the corpus into the run's scratch: its records name
    users by keyed ids, and the resume deletes it."""
    root, corpus_path, secrets, ids = corpus
    tmpdir, run = tmp_path / "tmp", tmp_path / "run"
    tmpdir.mkdir()
    args = ["report", "--model", f"fake:{corpus_path}", "--corpus", str(corpus_path), "--out", str(run)]
    args += ["--k", "1", "--redact", "--public-model", "leave-out"]
    killed = _lmleak(args, tmpdir, "redacted-leave-out")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (run / SCRATCH_DIR / "leave-out-model").exists()  # the model is there, owner-only
    assert _tmp_files(tmpdir) == []
    assert _scan(run, None, ids, killed.stdout + killed.stderr) == {}
    resumed = _lmleak(args, tmpdir, None)
    assert resumed.returncode == 0, resumed.stderr
    assert not (run / SCRATCH_DIR).exists()


def test_a_killed_standalone_redacted_run_keeps_its_scratch_in_the_run_owner_only_until_the_resume(
    corpus, tmp_path
):
    """``mia --redact`` runs the command into the run's scratch (texts and all): after a SIGKILL that
    scratch is inside the run, 0700 / 0600, nothing is under $TMPDIR, and the resume deletes it first."""
    root, corpus_path, secrets, ids = corpus
    tmpdir, run = tmp_path / "tmp", tmp_path / "run"
    tmpdir.mkdir()
    members = tmp_path / "members.txt"
    members.write_text("hello there\nmy order is late\n")
    non = tmp_path / "non.txt"
    non.write_text("the weather is nice\nsee you soon\n")
    args = ["mia", "--model", f"fake:{corpus_path}", "--members", str(members), "--non-members", str(non)]
    args += ["--out", str(run), "--redact"]
    killed = _lmleak(args, tmpdir, "redacted-produced")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    scratch = run / SCRATCH_DIR
    assert scratch.is_dir() and stat.S_IMODE(scratch.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in scratch.rglob("*"))
    assert _tmp_files(tmpdir) == []
    resumed = _lmleak(args, tmpdir, None)
    assert resumed.returncode == 0, resumed.stderr
    assert not scratch.exists() and (run / "summary.json").exists()
    assert _scan(run, None, ["hello there", "the weather is nice"], "") == {}


def test_the_scratch_is_owner_only_inside_the_run_and_a_stale_one_is_removed_first(tmp_path):
    run = tmp_path / "run"
    stale = run / SCRATCH_DIR / "run"
    stale.mkdir(parents=True)
    (stale / "ledger.parquet").write_text("alice@example.org")
    with private_scratch(run) as scratch:
        assert scratch == run / SCRATCH_DIR and not (scratch / "run").exists()  # the stale one is gone
        assert stat.S_IMODE(scratch.stat().st_mode) == 0o700
        (scratch / "f").write_text("x")
        assert stat.S_IMODE((scratch / "f").stat().st_mode) == 0o600
    assert not (run / SCRATCH_DIR).exists()
    assert remove_stale_scratch(run) is False


def test_any_command_that_opens_the_run_next_removes_a_stale_scratch(tmp_path, capsys):
    """Not only a redacted resume: an unredacted run into the folder removes it too (it holds the lock)."""
    from lmleak.runs import open_run

    run = tmp_path / "run"
    (run / SCRATCH_DIR / "run").mkdir(parents=True)
    (run / SCRATCH_DIR / "run" / "texts.jsonl").write_text('{"text": "alice@example.org"}')
    with open_run(run):
        assert not (run / SCRATCH_DIR).exists()
    assert "removed the private scratch of an earlier redacted run" in capsys.readouterr().err


def test_the_in_memory_ledger_equals_the_ledger_written_to_disk(corpus, tmp_path):
    """The redacted run's ledger (never written) against the on-disk pass of an unredacted run: the
    same documents, ids, token ids, ranks and log-probabilities, for a batch size that splits the
    corpus unevenly."""
    import numpy as np

    from lmleak.data.loaders import load_corpus
    from lmleak.ledger.ledger import build_ledger
    from lmleak.models.loading import load_model
    from lmleak.report.redaction import memory_ledger

    root, corpus_path, secrets, ids = corpus
    model, docs = load_model(f"fake:{corpus_path}"), load_corpus(corpus_path)
    disk = build_ledger(model, docs, tmp_path / "run", shard_size=5, k=3)
    mem = memory_ledger(model, docs, k=3, shard_size=7)
    assert (mem.doc_ids, mem.user_ids, mem.k_available) == (disk.doc_ids, disk.user_ids, disk.k_available)
    for name in ("offsets", "token_ids", "ranks", "logprobs", "top1_logprobs"):
        a, b = getattr(mem, name), getattr(disk, name)
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), name
    assert mem.meta["num_tokens"] == disk.meta["num_tokens"] and mem.meta["overlap"] == disk.meta["overlap"]
