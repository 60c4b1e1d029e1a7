"""Device choice (lmleak.models.device): names, precedence, errors — what runs without a GPU."""

from __future__ import annotations

import pytest
import torch

from lmleak.errors import ConfigError
from lmleak.models.device import ENV, check_device_name, requested_device, resolve_device, use_device

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU errors")


@pytest.mark.parametrize(
    ("name", "norm"), [("auto", "auto"), ("CPU", "cpu"), (" cuda ", "cuda"), ("cuda:3", "cuda:3")]
)
def test_device_names_are_normalised(name, norm):
    assert check_device_name(name) == norm


@pytest.mark.parametrize("name", ["gpu", "cuda:", "cuda:x", "tpu", ""])
def test_unknown_device_names_say_what_is_accepted(name):
    with pytest.raises(ConfigError, match="use auto, cpu, cuda, cuda:N or mps"):
        check_device_name(name)


def test_precedence_argument_then_block_then_environment_then_auto(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert requested_device() == "auto"
    monkeypatch.setenv(ENV, "cuda:1")
    assert requested_device() == "cuda:1"
    with use_device("cpu"):
        assert requested_device() == "cpu"
        with use_device(None):  # None changes nothing
            assert requested_device() == "cpu"
        assert requested_device("cuda") == "cuda"
    assert requested_device() == "cuda:1"


def test_auto_is_the_cpu_without_a_gpu(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert resolve_device() == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"


@no_cuda
def test_asking_for_a_missing_gpu_fails_before_loading(tmp_path):
    from lmleak.models.loading import load_model

    with pytest.raises(ConfigError, match="sees no CUDA GPU.*--device cpu"):
        resolve_device("cuda")
    # the folder does not even exist: the device check comes first
    with pytest.raises(ConfigError, match="sees no CUDA GPU"):
        load_model(str(tmp_path / "missing"), device="cuda")


@no_cuda
def test_cli_device_option_and_audit_config_key(tmp_path):
    from typer.testing import CliRunner

    from lmleak.audit.config import parse_config
    from lmleak.cli.main import app

    r = CliRunner().invoke(app, ["--device", "gpu", "kart", "review"])
    assert r.exit_code == 2 and "unknown device 'gpu'" in r.output
    r = CliRunner().invoke(
        app,
        [
            "--device",
            "cuda",
            "exposure",
            "--model",
            str(tmp_path),
            "--canaries",
            str(tmp_path / "c.jsonl"),
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert r.exit_code == 2 and "sees no CUDA GPU" in " ".join(r.output.split())
    assert not (tmp_path / "run").exists()
    r = CliRunner().invoke(app, ["--device", "cpu", "kart", "review"])
    assert r.exit_code == 0, r.output
    assert requested_device() in ("auto", "cpu")  # the option's block ended with the command
    base = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]}
    assert parse_config({**base, "device": "cuda:0"}).device == "cuda:0"
    with pytest.raises(ConfigError, match="a.yaml: field 'device': unknown device"):
        parse_config({**base, "device": "gpu0"}, path="a.yaml")
