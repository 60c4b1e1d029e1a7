"""Every error a user can cause exits 2 with one line (issue 16, item 5); `--debug` shows tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _one_line_error(res, *words):
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), res.output
    assert "Traceback" not in res.output
    for w in words:
        assert w in res.output, res.output


def _env():
    return {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "LMLEAK_QUIET": "1",
    }


def test_out_pointing_at_an_existing_file(tmp_path):
    target = tmp_path / "taken.txt"
    target.write_text("keep me")
    res = CliRunner().invoke(app, ["synth", "customersim", "--out", str(target), "--users", "2"])
    _one_line_error(res, str(target))
    assert target.read_text() == "keep me"
    res = CliRunner().invoke(app, ["synth", "customersim", "--out", str(target / "sub"), "--users", "2"])
    _one_line_error(res, str(target))


def test_a_truncated_safetensors_model(tmp_path):
    pytest.importorskip("torch")
    from transformers import GPT2Config, GPT2LMHeadModel

    model_dir = tmp_path / "model"
    GPT2LMHeadModel(
        GPT2Config(
            vocab_size=64, n_positions=32, n_embd=16, n_layer=1, n_head=2, bos_token_id=1, eos_token_id=2
        )
    ).save_pretrained(model_dir, safe_serialization=True)
    weights = model_dir / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"text": "1 2 3", "user_id": "u"}) + "\n")
    res = CliRunner().invoke(app, ["eval", "--model", str(model_dir), "--corpus", str(corpus)])
    _one_line_error(res, str(model_dir))


def test_two_writers_of_one_run_directory_the_second_exits_at_once(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"text": "hello there", "user_id": "u"}) + "\n")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    cfg = tmp_path / "audit.yaml"
    cfg.write_text("out: run\ncorpus: {path: corpus.jsonl}\nmodels: [{name: m, path: model}]\n")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom lmleak.runs import open_run\n"
            "with open_run(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(60)\n",
            str(tmp_path / "run"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        res = CliRunner().invoke(app, ["audit", str(cfg)])
        _one_line_error(res, f"pid {holder.pid}", "another lmleak process")
    finally:
        holder.kill()
        holder.wait()
    assert not (tmp_path / "run" / "models").exists()  # the second writer touched nothing


def test_an_unexpected_exception_is_one_line_and_debug_shows_the_traceback(tmp_path, monkeypatch):
    import lmleak.audit.gate

    def broken(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(lmleak.audit.gate, "gate_run", broken)  # what `lmleak gate` calls
    res = CliRunner().invoke(app, ["gate", str(tmp_path), "--max-unique", "1"])
    _one_line_error(res, "unexpected RuntimeError at ", "test_errors_exit2.py:", "--debug")
    assert (
        "kaboom" not in res.output
    )  # an unexpected message may quote the data; only type and place are shown
    res = CliRunner().invoke(app, ["--debug", "gate", str(tmp_path), "--max-unique", "1"])
    assert isinstance(res.exception, RuntimeError) and res.exit_code != 2


def test_debug_prints_the_traceback_of_a_user_error_in_a_real_process(tmp_path):
    args = [sys.executable, "-m", "lmleak.cli.main", "gate", str(tmp_path / "missing"), "--max-unique", "1"]
    plain = subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=120)
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert len(plain.stderr.strip().splitlines()) == 1 and "not a run directory" in plain.stderr
    debug = subprocess.run(
        args[:3] + ["--debug"] + args[3:], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert debug.returncode != 0 and "Traceback (most recent call last)" in debug.stderr
    assert "RunError" in debug.stderr


def test_a_model_folder_asking_for_remote_code_never_runs_it(tmp_path):
    pytest.importorskip("transformers")
    model_dir = tmp_path / "evil"
    model_dir.mkdir()
    marker = tmp_path / "code-ran"
    (model_dir / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\n")
    (model_dir / "config.json").write_text(
        json.dumps(
            {
                "model_type": "evil",
                "architectures": ["EvilModel"],
                "auto_map": {
                    "AutoConfig": "modeling_evil.EvilConfig",
                    "AutoModelForCausalLM": "modeling_evil.EvilModel",
                },
            }
        )
    )
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"text": "1 2 3", "user_id": "u"}) + "\n")
    res = CliRunner().invoke(app, ["eval", "--model", str(model_dir), "--corpus", str(corpus)])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert not marker.exists()


def test_a_reader_that_leaves_early_is_not_reported_as_a_path_error():
    # regression: `lmleak train --help | head` printed "error: Broken pipe. Fix: check the path and
    # its permissions" (exit 2); a closed stdout now ends the command quietly with 141 (128 + SIGPIPE)
    args = [sys.executable, "-m", "lmleak.cli.main", "audit", "--example"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    p.stdout.close()  # before the interpreter has started: its first write meets a closed pipe
    _, stderr = p.communicate(timeout=120)
    assert p.returncode == 141, stderr
    assert stderr.decode().strip() == ""
