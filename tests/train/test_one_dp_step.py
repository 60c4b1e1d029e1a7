"""The small models and the fine-tunes take the same DP-SGD step (:class:`lmleak.train.dpsgd.PrivateStep`):
each run's ε is the accountant's for the (σ, q, steps) its sampler implies, to 1e-9 (issue 34: the
training loops share one DP step, and the accounting must not move)."""

from __future__ import annotations

import json
import math

import pytest

from lmleak.train.accounting import epsilon_opacus, noise_for_epsilon
from lmleak.train.config import TrainConfig
from lmleak.train.finetune import finetune
from lmleak.train.trainer import train_model
from tests.train.tiny_llama import ft_config


def expected_accounting(model_dir, unit: str, batch_size: int, epochs: int) -> tuple[float, int]:
    """(q, steps) from the data the run recorded: q = 1 / ceil(units / batch), epochs / q steps."""
    info = json.loads((model_dir / "train.json").read_text())
    n = len(info["train_users"]) if unit == "user" else info["num_train_sequences"]
    steps_per_epoch = max(1, math.ceil(n / max(1, min(batch_size, n))))
    return 1 / steps_per_epoch, epochs * steps_per_epoch


def assert_accounted(privacy, q: float, steps: int, noise_multiplier: float) -> None:
    assert privacy["sample_rate"] == q and privacy["accounted_steps"] == steps == privacy["steps"]
    assert privacy["noise_multiplier"] == noise_multiplier
    oracle = epsilon_opacus(noise_multiplier, q, steps, privacy["delta"], privacy["accountant"])
    assert privacy["epsilon"] == pytest.approx(oracle, rel=0, abs=1e-9)


@pytest.mark.parametrize(("arch", "unit"), [("gpt", "user"), ("gpt", "sequence"), ("lstm", "sequence")])
def test_a_small_models_epsilon_is_the_accountants_for_its_sampler(corpus, tmp_path, arch, unit):
    cfg = TrainConfig(
        arch=arch,
        mode="dp",
        epochs=2,
        batch_size=4,
        seq_len=16,
        vocab_size=60,
        n_embd=16,
        n_head=2,
        n_layer=1,
        noise_multiplier=1.0,
        privacy_unit=unit,
        health_checks=False,
        tokenizer_from_private=True,
    )
    res = train_model(corpus, tmp_path, cfg, progress=False)
    assert res.privacy["privacy_unit"] == unit
    assert_accounted(res.privacy, *expected_accounting(tmp_path, unit, 4, 2), noise_multiplier=1.0)


@pytest.mark.parametrize("unit", ["user", "sequence"])
def test_a_fine_tunes_epsilon_is_the_accountants_for_its_sampler(llama_dir, corpus, tmp_path, unit):
    cfg = ft_config(llama_dir, "dp", privacy_unit=unit, health_checks=False)
    res = finetune(corpus, tmp_path, cfg, progress=False)
    assert res.privacy["privacy_unit"] == unit
    assert_accounted(res.privacy, *expected_accounting(tmp_path, unit, 4, 1), noise_multiplier=1.0)


@pytest.mark.slow  # ~25 s: two target-epsilon noise searches and their runs
def test_a_target_epsilon_gives_the_same_noise_to_a_small_model_and_a_fine_tune(llama_dir, corpus, tmp_path):
    """σ from a target ε follows one rule (make_private_with_epsilon's) in both trainers."""
    small = TrainConfig(
        mode="dp",
        epochs=2,
        batch_size=4,
        seq_len=16,
        vocab_size=60,
        n_embd=16,
        n_head=2,
        n_layer=1,
        target_epsilon=4.0,
        health_checks=False,
        tokenizer_from_private=True,
    )
    runs = [
        (train_model(corpus, tmp_path / "small", small, progress=False), tmp_path / "small"),
        (
            finetune(
                corpus,
                tmp_path / "ft",
                ft_config(
                    llama_dir, "dp", noise_multiplier=None, target_epsilon=4.0, epochs=2, health_checks=False
                ),
                progress=False,
            ),
            tmp_path / "ft",
        ),
    ]
    for res, folder in runs:
        q, steps = expected_accounting(folder, "user", 4, 2)
        sigma = noise_for_epsilon(4.0, 1e-5, q, 2, "poisson", "prv")
        assert_accounted(res.privacy, q, steps, noise_multiplier=sigma)
        assert res.privacy["epsilon"] <= 4.0 + 1e-6
