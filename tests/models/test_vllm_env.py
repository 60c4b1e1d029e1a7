"""Where lmleak finds vLLM and the folders it hands to vLLM: no vLLM needed for any of it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lmleak.errors import ModelError
from lmleak.models.vllm_env import main, strip_quantization, vllm_model_dir, vllm_python, write_vllm_dir


def test_vllm_python_prefers_the_explicit_interpreter_then_the_venv(monkeypatch, tmp_path):
    venv = tmp_path / "venv"
    monkeypatch.setenv("VLLM_VENV", str(venv))
    monkeypatch.delenv("LMLEAK_VLLM_PYTHON", raising=False)
    assert vllm_python() is None  # the venv has no bin/python yet
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    assert vllm_python() == venv / "bin" / "python"
    monkeypatch.setenv("LMLEAK_VLLM_PYTHON", str(tmp_path / "other-python"))
    assert vllm_python() == tmp_path / "other-python"  # named explicitly: taken as given, even if absent


def test_vllm_python_defaults_to_dot_venv_vllm_in_the_current_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("LMLEAK_VLLM_PYTHON", raising=False)
    monkeypatch.delenv("VLLM_VENV", raising=False)
    monkeypatch.chdir(tmp_path)
    assert vllm_python() is None
    (tmp_path / ".venv-vllm" / "bin").mkdir(parents=True)
    (tmp_path / ".venv-vllm" / "bin" / "python").write_text("")
    assert vllm_python() == Path(".venv-vllm/bin/python")


def test_vllm_dir_strips_quantization(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "config.json").write_text(
        json.dumps({"model_type": "llama", "quantization_config": {"quant_method": "gguf"}})
    )
    (src / "model.safetensors").write_bytes(b"weights")
    out = write_vllm_dir(src, tmp_path / "out")
    assert json.loads((out / "config.json").read_text()) == {"model_type": "llama"}
    assert (out / "model.safetensors").read_bytes() == b"weights"
    assert json.loads((src / "config.json").read_text())["quantization_config"]  # the source is untouched
    assert strip_quantization({"a": 1}) == {"a": 1}


def test_vllm_model_dir(tmp_path, monkeypatch):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    assert vllm_model_dir(plain) == plain
    quant = tmp_path / "quant"
    quant.mkdir()
    (quant / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "gguf"}}))
    monkeypatch.setenv("LMLEAK_CACHE", str(tmp_path / "cache"))
    copy = vllm_model_dir(quant)
    assert copy != quant and "quantization_config" not in json.loads((copy / "config.json").read_text())
    with pytest.raises(ModelError, match="Hugging Face model folder"):
        vllm_model_dir("fake:corpus.jsonl")


def test_write_vllm_dir_keeps_an_existing_copy_and_refuses_a_non_hf_folder(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "config.json").write_text(json.dumps({"model_type": "llama", "quantization_config": {}}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "config.json").write_text('{"kept": true}')
    assert write_vllm_dir(src, out) == out and json.loads((out / "config.json").read_text()) == {"kept": True}
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="no config.json"):
        write_vllm_dir(tmp_path / "empty", tmp_path / "out2")
    assert not (tmp_path / "out2").exists()


def test_the_copy_is_readable_and_leaves_no_temporary_folder(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "config.json").write_text(json.dumps({"model_type": "llama"}))
    out = write_vllm_dir(src, tmp_path / "cache" / "m-vllm")
    assert os.stat(out).st_mode & 0o777 == 0o755
    assert [p.name for p in out.parent.iterdir()] == ["m-vllm"]


def test_a_gguf_quantised_folder_is_copied_once_per_path(tmp_path, monkeypatch):
    monkeypatch.setenv("LMLEAK_CACHE", str(tmp_path / "cache"))
    quant = tmp_path / "quant"
    quant.mkdir()
    (quant / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "gguf"}}))
    first, again = vllm_model_dir(quant), vllm_model_dir(str(quant))
    assert first == again and first.name.startswith("quant-") and first.name.endswith("-vllm")
    other = tmp_path / "q2" / "quant"
    other.mkdir(parents=True)
    (other / "config.json").write_text((quant / "config.json").read_text())
    assert vllm_model_dir(other) != first  # same folder name elsewhere: its own copy


def test_main_needs_a_command(capsys):
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2 and "smollm2-dir" in capsys.readouterr().err
