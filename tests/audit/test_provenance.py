"""``lmleak gate`` refuses a run whose model or corpus files changed since it was written (exit 2, one
line naming what changed), unless ``--allow-changed``; the full hash (``lmleak --full-hash``) sees a
change the fast fingerprint cannot."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from lmleak.audit.provenance import changed_inputs, refuse_changed_inputs
from lmleak.errors import RunError
from lmleak.fingerprints import MIB
from lmleak.runs import write_summary
from tests.test_fingerprints import _flip

TEXTS = ["my name is ada and my phone is 555 0100", "thank you for the call today", "the weather is nice"]


@pytest.fixture
def files(tmp_path):
    """A tiny GPT folder (its weights padded past 3 MiB so that the middle of the file exists) and a corpus."""
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    tok = build_tokenizer(TEXTS, kind="word", vocab_size=60)
    model = save_small_model(
        new_small_gpt(len(tok), SmallGPTConfig(n_positions=16, n_embd=16, n_layer=1, n_head=2), seed=1),
        tok,
        tmp_path / "model",
    )
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"user_id": f"u{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    return model, corpus


def _cli(*args):
    from lmleak.cli.main import app

    return CliRunner().invoke(app, list(map(str, args)))


def test_gate_refuses_a_run_whose_model_changed_and_allow_changed_overrides(files, tmp_path):
    model, corpus = files
    run = tmp_path / "run"
    res = _cli("report", "--model", model, "--corpus", corpus, "--out", run, "--json")
    assert res.exit_code == 0, res.output
    prov = json.loads((run / "summary.json").read_text())["provenance"]
    assert prov["model"]["hash"] == "fast" and prov["corpus"]["size"] == corpus.stat().st_size
    assert _cli("gate", run, "--max-unique", 1000).exit_code == 0
    _flip(
        model / "model.safetensors", os.path.getsize(model / "model.safetensors") - 1
    )  # a weight's last byte
    res = _cli("gate", run, "--max-unique", 1000)
    assert res.exit_code == 2 and "measured other files than the ones it names now" in res.output
    assert "changed model.safetensors" in res.output and "Traceback" not in res.output
    res = _cli("gate", run, "--max-unique", 1000, "--allow-changed")
    assert res.exit_code == 0 and "changed since the run (allowed by --allow-changed)" in res.output


def test_gate_refuses_a_changed_corpus_and_a_removed_model(files, tmp_path):
    model, corpus = files
    write_summary(tmp_path, {"unique_sequences": 0}, model=str(model), corpus=corpus)
    assert changed_inputs(tmp_path) == []
    corpus.write_text(corpus.read_text() + json.dumps({"user_id": "u9", "text": "more"}) + "\n")
    (model / "config.json").unlink()
    changes = changed_inputs(tmp_path)
    assert len(changes) == 2 and "removed config.json" in changes[0] and changes[1].startswith("corpus: ")
    with pytest.raises(RunError, match="pass --allow-changed"):
        refuse_changed_inputs(tmp_path)
    said = []
    assert refuse_changed_inputs(tmp_path, allow_changed=True, echo=said.append) == changes and len(said) == 2


def test_the_full_hash_sees_a_change_in_the_middle_of_a_large_weight_file(files, tmp_path):
    """A byte in the middle of a weight file larger than 2 MiB, the file's size kept: the fast
    fingerprint (first and last MiB) cannot see it, the full one recorded by --full-hash does."""
    model, corpus = files
    big = model / "extra.bin"
    big.write_bytes(os.urandom(3 * MIB))
    fast, full = tmp_path / "fast", tmp_path / "full"
    for run, flag in ((fast, []), (full, ["--full-hash"])):
        res = _cli(*flag, "report", "--model", model, "--corpus", corpus, "--out", run, "--json")
        assert res.exit_code == 0, res.output
    recorded = json.loads((full / "summary.json").read_text())["provenance"]["model"]
    import hashlib

    by_name = {f["name"]: f for f in recorded["files"]}
    assert (
        recorded["hash"] == "full"
        and by_name["extra.bin"]["sha256"] == hashlib.sha256(big.read_bytes()).hexdigest()
    )
    _flip(big, int(1.5 * MIB))
    assert changed_inputs(fast) == []  # documented limit of the fast fingerprint
    assert "changed extra.bin" in changed_inputs(full)[0]


def test_an_api_model_has_nothing_to_check_and_a_run_without_provenance_is_refused(tmp_path):
    api = {"backend": "http", "hash": "probe", "fingerprint": "abc", "server": "http://127.0.0.1:9/v1"}
    (tmp_path / "summary.json").write_text(json.dumps({"provenance": {"models": {"api": api}}}))
    assert changed_inputs(tmp_path) == []
    # issue 33: a summary with no provenance passed the gate unchecked; now it is refused
    (tmp_path / "summary.json").write_text(json.dumps({"unique_sequences": 1}))
    assert changed_inputs(tmp_path)[0].startswith("provenance: the summary records none")
    res = _cli("gate", tmp_path, "--max-unique", 5)
    assert res.exit_code == 2 and "provenance: the summary records none" in " ".join(res.output.split())
    res = _cli("gate", tmp_path, "--max-unique", 5, "--allow-changed")
    assert res.exit_code == 0 and "allowed by --allow-changed" in res.output


@pytest.mark.parametrize(
    "prov, expected",
    [
        ({"model": {"spec": "/m", "hash": "md5", "fingerprint": "x"}}, "model /m: unknown hash kind 'md5'"),
        ({"corpus": {"path": "/c", "hash": "crc32", "sha256": "x"}}, "corpus: /c: unknown hash kind 'crc32'"),
        (
            {"corpus": {"path": "/c", "size": None, "sha256": None, "note": "not a file: not hashed"}},
            "corpus: /c was not fingerprinted (not a file: not hashed)",
        ),
        ({"lmleak_version": "0.1"}, "provenance: it records neither a model nor a corpus"),
        (
            {"model": {"spec": "/m", "hash": None, "path": "/m"}},
            "model /m: /m was recorded without a fingerprint",
        ),
    ],
)
def test_provenance_that_fingerprints_nothing_or_an_unknown_kind_is_refused(tmp_path, prov, expected):
    (tmp_path / "summary.json").write_text(json.dumps({"unique_sequences": 1, "provenance": prov}))
    assert any(line.startswith(expected) for line in changed_inputs(tmp_path)), changed_inputs(tmp_path)
    with pytest.raises(RunError, match="cannot show that it did"):
        refuse_changed_inputs(tmp_path)


def _folder_corpus(root):
    for i, text in enumerate(TEXTS):
        (root / f"u{i}").mkdir(parents=True)
        (root / f"u{i}" / "doc.txt").write_text(text)
    return root


def test_an_edited_corpus_folder_and_a_new_user_folder_fail_the_gate_one_line_per_change(files, tmp_path):
    model, _ = files
    corpus = _folder_corpus(tmp_path / "corpus")
    run = tmp_path / "run"
    res = _cli("report", "--model", model, "--corpus", corpus, "--out", run, "--json")
    assert res.exit_code == 0, res.output
    rec = json.loads((run / "summary.json").read_text())["provenance"]["corpus"]
    assert rec["hash"] == "manifest" and rec["files"] == 3 and len(rec["sha256"]) == 64
    assert [f["path"] for f in rec["manifest"]] == ["u0/doc.txt", "u1/doc.txt", "u2/doc.txt"]
    assert _cli("gate", run, "--max-unique", 1000).exit_code == 0
    (corpus / "u1" / "doc.txt").write_text(TEXTS[1] + " and one more line")
    (corpus / "u9").mkdir()
    (corpus / "u9" / "new.txt").write_text("a new person")
    changes = changed_inputs(run)
    assert len(changes) == 2
    assert changes[0] == f"corpus: {corpus.resolve()}/u9/new.txt added"
    assert changes[1].startswith(f"corpus: {corpus.resolve()}/u1/doc.txt changed (size 28 -> 46, sha256 ")
    res = _cli("gate", run, "--max-unique", 1000)
    assert res.exit_code == 2 and "u1/doc.txt changed" in " ".join(res.output.split())
    res = _cli("gate", run, "--max-unique", 1000, "--allow-changed")
    lines = [ln for ln in res.output.splitlines() if "allowed by --allow-changed" in ln]
    assert res.exit_code == 0 and len(lines) == 2, res.output


def test_the_folder_manifest_hashes_each_file_once_and_matches_the_obvious_digest(tmp_path, monkeypatch):
    import hashlib

    from lmleak import fingerprints

    root = tmp_path / "many"
    for i in range(300):
        (root / f"user-{i % 30:02d}").mkdir(parents=True, exist_ok=True)
        (root / f"user-{i % 30:02d}" / f"{i:03d}.txt").write_text(f"document {i} " * (1 + i % 7))
    calls = []
    real = fingerprints.sha256_file
    monkeypatch.setattr(fingerprints, "sha256_file", lambda p: calls.append(p) or real(p))
    rec = fingerprints.corpus_record(root)
    assert rec["files"] == 300 and len(calls) == 300  # linear: each file read once
    assert fingerprints.corpus_record(root) == rec and len(calls) == 300  # and not again in the process
    # the slow obvious digest: walk, read each file whole, hash the sorted rows
    rows = sorted(
        [f.relative_to(root).as_posix(), f.stat().st_size, hashlib.sha256(f.read_bytes()).hexdigest()]
        for f in root.rglob("*")
        if f.is_file()
    )
    assert rec["sha256"] == hashlib.sha256(json.dumps(rows).encode()).hexdigest()
    assert rec["size"] == sum(r[1] for r in rows)


def test_an_audit_records_every_models_fingerprint_and_the_gate_checks_them(files, tmp_path):
    from lmleak.audit.config import load_config
    from lmleak.audit.runner import run_audit
    from lmleak.fingerprints import files_fingerprint

    model, corpus = files
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(
        f"models:\n  - name: tiny\n    path: {model}\ncorpus:\n  path: {corpus}\nout: {tmp_path / 'run'}\n"
        "analyses:\n  report: {k: [1]}\n  mia: null\n  probe: null\n"
    )
    run = run_audit(load_config(cfg))
    summary = json.loads((run / "summary.json").read_text())
    rec = summary["provenance"]["models"]["tiny"]
    assert rec["fingerprint"] == files_fingerprint(model)["fingerprint"] and rec["device"] == "cpu"
    stage = json.loads((run / "models" / "tiny" / "report" / "summary.json").read_text())
    assert stage["provenance"]["model"]["fingerprint"] == rec["fingerprint"]
    assert stage["provenance"]["corpus"] == summary["provenance"]["corpus"]
    assert changed_inputs(run) == []
    # the report's footer shows them, as computed independently here
    import hashlib
    import re

    footer = re.search(r'<div id="provenance">(.*?)</div>', (run / "report.html").read_text(), re.S).group(1)
    assert f"fingerprint {files_fingerprint(model)['fingerprint'][:16]} (fast)" in footer
    assert f"sha256 {hashlib.sha256(corpus.read_bytes()).hexdigest()[:16]}" in footer
    assert "model tiny · TorchCausalLM on cpu, float32 · fingerprint" in footer
    _flip(model / "model.safetensors", 100)
    assert [c.split(":")[0] for c in changed_inputs(run)] == ["model tiny"]


def test_a_redacted_stage_summary_keeps_the_provenance_hashes_and_drops_the_paths():
    from lmleak.report.redaction import Redactor, redact_json

    prov = {
        "model": {"spec": "/home/ada/model", "backend": "TorchCausalLM", "device": "cpu", "dtype": "float32",
                  "hash": "fast", "fingerprint": "ab" * 32, "files": [{"name": "model.bin", "size": 3, "head_tail_sha256": "cd" * 32}]},
        "corpus": {"path": "/home/ada/corpus.jsonl", "size": 10, "sha256": "ef" * 32},
    }  # fmt: skip
    out = redact_json({"provenance": prov}, Redactor(b"k" * 32, "test"))["provenance"]
    assert out["model"]["fingerprint"] == "ab" * 32 and out["corpus"]["sha256"] == "ef" * 32
    assert out["model"]["files"][0]["head_tail_sha256"] == "cd" * 32 and out["model"]["dtype"] == "float32"
    assert out["model"]["spec"] is None and out["corpus"]["path"] is None  # paths are not kept


def test_a_redacted_copy_without_paths_is_said_not_re_checked_and_not_refused(tmp_path):
    """A redacted stage's summary keeps the hashes and drops the paths: the gate cannot re-hash, says
    so in one line, and does not refuse (the old gate skipped it without a word)."""
    prov = {
        "model": {"spec": None, "hash": "fast", "fingerprint": "ab", "path": None},
        "corpus": {"path": None, "hash": "manifest", "sha256": "cd", "files": 3, "manifest": None},
    }
    (tmp_path / "summary.json").write_text(
        json.dumps({"unique_sequences": 1, "redacted": True, "provenance": prov})
    )
    said = []
    assert refuse_changed_inputs(tmp_path, echo=said.append) == []
    assert said == [
        "not re-checked: model model: recorded without its path (a redacted run keeps none), so not re-checked",
        "not re-checked: corpus: recorded without its path (a redacted run keeps none), so not re-checked",
    ]
