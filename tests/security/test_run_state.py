"""Run state (issue 16, item 1): a run is marked incomplete from its first write to its last, and
`gate`, `render` and `query` refuse an incomplete or inconsistent run with exit 2 and one line."""

from __future__ import annotations

import fcntl
import os

import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.errors import RunError
from lmleak.runs import INCOMPLETE, LOCK, check_run, open_run, write_parquet, write_summary


@pytest.fixture()
def report_run(tmp_path):
    """A finished leakage report of a bigram model (no torch), written by the real run_report."""
    from lmleak.data.corpus import Corpus, Document
    from lmleak.models.fake import FakeLM
    from lmleak.report.leakage import ReportConfig, run_report

    texts = [f"user {i} code {i * 7919 % 1000} and the word {i % 3}" for i in range(8)]
    run = tmp_path / "run"
    run_report(
        FakeLM.from_texts(texts, order=2),
        Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)]),
        run,
        ReportConfig(k=(1,)),
    )
    return run


def _gate(run):
    return CliRunner().invoke(app, ["gate", str(run), "--max-unique", "100000"])


def _assert_refused(res, *words):
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), res.output
    assert "Traceback" not in res.output
    for w in words:
        assert w in res.output


def test_a_finished_run_passes_and_leaves_no_marker(report_run):
    assert not (report_run / INCOMPLETE).exists() and not (report_run / LOCK).exists()
    assert check_run(report_run) == report_run
    assert _gate(report_run).exit_code == 0


def test_an_interrupted_rerun_fails_the_gate_although_the_old_summary_is_there(report_run):
    old_summary = (report_run / "summary.json").read_text()
    with pytest.raises(KeyboardInterrupt), open_run(report_run):  # the re-run stops after its first write
        write_parquet(__import__("pandas").DataFrame({"x": [1]}), report_run / "occurrences.parquet")
        raise KeyboardInterrupt
    assert (report_run / INCOMPLETE).exists()
    assert (report_run / "summary.json").read_text() == old_summary  # what the old gate read and passed
    res = _gate(report_run)
    _assert_refused(res, "incomplete", "re-run")
    # render and query refuse it too
    _assert_refused(CliRunner().invoke(app, ["render", str(report_run)]), "incomplete")
    _assert_refused(CliRunner().invoke(app, ["query", str(report_run), "SELECT 1"]), "incomplete")
    assert not (report_run / "report.html").exists()


def test_a_marker_in_a_nested_stage_makes_the_whole_run_incomplete(report_run):
    stage = report_run / "models" / "m" / "report"
    stage.mkdir(parents=True)
    (stage / INCOMPLETE).write_text("{}")
    with pytest.raises(RunError, match="incomplete.*models/m/report"):
        check_run(report_run)


def test_a_missing_summary_is_refused(report_run):
    (report_run / "summary.json").unlink()
    _assert_refused(_gate(report_run), "no summary.json", "re-run")


def test_a_stage_output_newer_than_the_summary_is_refused(report_run):
    summary = report_run / "summary.json"
    seqs = report_run / "sequences.parquet"
    t = summary.stat().st_mtime_ns
    os.utime(seqs, ns=(t + 10**9, t + 10**9))  # the write that followed never rewrote the summary
    _assert_refused(_gate(report_run), "inconsistent", "sequences.parquet")
    os.utime(seqs, ns=(t - 10**9, t - 10**9))
    assert _gate(report_run).exit_code == 0


def test_a_failed_write_keeps_the_marker_and_a_finished_one_removes_it(tmp_path):
    run = tmp_path / "r"
    with pytest.raises(ValueError), open_run(run):
        (run / "partial.parquet").write_bytes(b"x")
        raise ValueError("boom")
    assert (run / INCOMPLETE).exists()
    with open_run(run):
        write_summary(run, {"stage": "x"})
    assert not (run / INCOMPLETE).exists()
    check_run(run)


def test_a_second_writer_fails_at_once_naming_the_holder(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    fd = os.open(run / LOCK, os.O_RDWR | os.O_CREAT, 0o600)  # another process holds the run
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b"424242\n")
        with pytest.raises(RunError, match="pid 424242"):
            with open_run(run):
                pass
    finally:
        os.close(fd)
    with open_run(run):  # released: the next writer gets it
        with open_run(run):  # re-entrant within one process (the audit renders into its own run)
            pass


def test_a_nested_stage_summary_newer_than_the_run_summary_is_refused(report_run):
    stage = report_run / "models" / "m" / "exposure"
    write_summary(stage, {"stage": "exposure"})
    t = (report_run / "summary.json").stat().st_mtime_ns
    os.utime(
        stage / "summary.json", ns=(t + 10**9, t + 10**9)
    )  # a stage re-ran; the audit summary was not rewritten
    with pytest.raises(RunError, match=r"inconsistent: models/m/exposure/summary.json is newer"):
        check_run(report_run)
    (report_run / "hardening.parquet").touch()  # a study added to a finished run is not a stage output
    os.utime(stage / "summary.json", ns=(t - 10**9, t - 10**9))
    check_run(report_run)


def test_a_run_folder_a_refused_command_created_is_removed_and_an_existing_one_is_kept(tmp_path):
    import pytest

    from lmleak.runs import open_run

    fresh = tmp_path / "fresh"
    with pytest.raises(ValueError), open_run(fresh):
        raise ValueError("refused before the first output")
    assert not fresh.exists()  # nothing half-written left behind
    written = tmp_path / "written"
    with pytest.raises(ValueError), open_run(written) as run:
        (run / "partial.parquet").write_bytes(b"x")
        raise ValueError("failed after writing")
    assert (written / ".incomplete").exists()  # kept, and marked: gate/render/query refuse it
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(ValueError), open_run(existing):
        raise ValueError("refused")
    assert existing.is_dir()  # a folder the user made is never removed
