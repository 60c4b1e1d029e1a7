"""DP training health checks: a run whose adapters are frozen by mistake stops with one line, after the
first N steps; under --no-health-checks it finishes and train.json says what was wrong; the weight
change, clipped share and noise-to-signal ratio are recorded against hand computations."""

from __future__ import annotations

import json
import math

import pytest
import torch

from lmleak.errors import RunError
from lmleak.train.config import TrainConfig
from lmleak.train.finetune import finetune
from lmleak.train.health import HealthMonitor, HealthSettings
from lmleak.train.trainer import train_model
from tests.train.test_trainer import tiny_corpus
from tests.train.tiny_llama import ft_config


def _freeze_adapters(monkeypatch):
    """The Opacus #820 mistake: the LoRA adapters do not require gradients (e.g. a PEFT model loaded
    without is_trainable=True); something else, here the final norm, still trains."""
    from lmleak.train import finetune as ft_module

    real = ft_module.prepare_model

    def frozen(module, config):
        model, info = real(module, config)
        for name, p in model.named_parameters():
            p.requires_grad_(name.endswith("model.norm.weight"))
        return model, info

    monkeypatch.setattr(ft_module, "prepare_model", frozen)


def test_a_dp_fine_tune_whose_adapters_are_frozen_stops_after_the_first_steps(
    llama_dir, corpus, tmp_path, monkeypatch
):
    _freeze_adapters(monkeypatch)
    cfg = ft_config(llama_dir, "dp", epochs=3, health_check_steps=2)
    with pytest.raises(RunError, match=r"after 2 steps: the LoRA adapters have not moved") as e:
        finetune(corpus, tmp_path / "ft", cfg, progress=False)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "ft" / "adapter_model.safetensors").exists()  # nothing saved as if it were fine


def test_without_health_checks_the_frozen_run_finishes_and_says_so(llama_dir, corpus, tmp_path, monkeypatch):
    _freeze_adapters(monkeypatch)
    cfg = ft_config(llama_dir, "dp", epochs=1, max_steps=2, health_checks=False, health_check_steps=1)
    finetune(corpus, tmp_path / "ft", cfg, progress=False)
    health = json.loads((tmp_path / "ft" / "train.json").read_text())["health"]
    assert health["enforced"] is False and health["passed"] is False
    assert health["early"]["moved_tensors"] == 0 and health["early"]["watched"] == "LoRA adapters"
    assert any("have not moved" in w for w in health["warnings"])


def test_a_healthy_small_model_records_change_clipping_and_noise(tmp_path):
    cfg = TrainConfig(
        mode="dp",
        noise_multiplier=0.5,
        tokenizer_from_private=True,
        epochs=2,
        batch_size=4,
        seq_len=16,
        vocab_size=50,
        n_embd=16,
        n_head=2,
        n_layer=1,
        health_check_steps=2,
        max_grad_norm=0.01,
    )
    train_model(tiny_corpus(8, 2), tmp_path, cfg, progress=False)
    health = json.loads((tmp_path / "train.json").read_text())["health"]
    assert health["passed"] and health["early"]["steps"] == 2 and health["final"]["steps"] > 2
    final = health["final"]
    assert final["moved_tensors"] == final["watched_tensors"] > 0 and final["weight_change"] > 0
    assert final["clipped_share"] == 1.0  # C = 0.01: every user's gradient is clipped
    assert final["noise_to_signal"] > 1


def test_a_small_model_that_cannot_move_or_drowns_in_noise_stops(tmp_path):
    common = dict(
        mode="dp",
        noise_multiplier=1.0,
        tokenizer_from_private=True,
        epochs=1,
        batch_size=4,
        seq_len=16,
        vocab_size=50,
        n_embd=16,
        n_head=2,
        n_layer=1,
        health_check_steps=1,
    )
    with pytest.raises(RunError, match="trainable weights have not moved"):
        train_model(tiny_corpus(8, 2), tmp_path / "a", TrainConfig(lr=0.0, **common), progress=False)
    with pytest.raises(RunError, match="noise drowns the signal"):
        train_model(
            tiny_corpus(8, 2), tmp_path / "b", TrainConfig(max_noise_to_signal=1.0, **common), progress=False
        )


def test_the_monitor_against_hand_numbers():
    w = torch.nn.Parameter(torch.tensor([3.0, 4.0]))
    mon = HealthMonitor([("w", w)], HealthSettings(enforce=False, max_noise_to_signal=5.0), what="weights")
    with torch.no_grad():
        w += torch.tensor([0.0, 1.0])
    log = [
        {"units": 2.0, "clipped": 1.0, "signal_norm": 1.0, "noise_norm": 4.0},
        {"units": 0.0, "clipped": 0.0, "signal_norm": 0.0, "noise_norm": 4.0},  # nobody sampled: not a ratio
        {"units": 2.0, "clipped": 2.0, "signal_norm": 0.5, "noise_norm": 4.0},
        {"units": 4.0, "clipped": 0.0, "signal_norm": 2.0, "noise_norm": 4.0},
    ]
    rec = mon.check("final", 4, log)
    assert rec["weight_change"] == 1.0 and rec["weight_norm_start"] == 5.0 and rec["moved_tensors"] == 1
    assert rec["clipped_share"] == 3 / 8 and rec["noise_to_signal"] == 4.0  # median of 4, 8, 2
    assert rec["passed"] and math.isclose(rec["noise_to_signal"], 4.0)
    mon.settings = HealthSettings(enforce=False, max_noise_to_signal=3.0)
    assert not mon.check("final", 4, log)["passed"] and mon.warnings
