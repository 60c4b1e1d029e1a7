"""A fine-tune's records: train.json, privacy.json and the checkpoint that resumes an interrupted run."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from lmleak.errors import ConfigError
from lmleak.train.finetune import finetune
from tests.train.tiny_llama import ft_config


def test_an_interrupted_run_resumes_to_the_uninterrupted_result(llama_dir, corpus, tmp_path):
    cfg = ft_config(llama_dir, "dp", epochs=2)
    whole = finetune(corpus, tmp_path / "whole", cfg, progress=False)

    class Stop(Exception):
        pass

    def stop_after_first(epoch, model):
        if epoch == 1:
            raise Stop

    with pytest.raises(Stop):
        finetune(corpus, tmp_path / "cut", cfg, progress=False, on_epoch_end=stop_after_first)
    assert (tmp_path / "cut" / "checkpoint" / "state.pt").is_file()
    with pytest.raises(ConfigError, match="different run"):
        finetune(corpus, tmp_path / "cut", ft_config(llama_dir, "dp", epochs=2, lr=1e-4), progress=False)
    resumed = finetune(corpus, tmp_path / "cut", cfg, progress=False)
    assert json.loads((tmp_path / "cut" / "train.json").read_text())["resumed_after_epoch"] == 1
    assert not (tmp_path / "cut" / "checkpoint").exists()
    a = load_file(tmp_path / "whole" / "adapter_model.safetensors")
    b = load_file(tmp_path / "cut" / "adapter_model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    for key in ("epsilon", "noise_draws", "accounted_steps", "steps"):
        assert whole.privacy[key] == resumed.privacy[key]
    assert [h["train_loss"] for h in whole.history] == [h["train_loss"] for h in resumed.history]
