"""Model preparation for fine-tuning: LoRA targets, precision rules, untied embeddings under DP."""

from __future__ import annotations

import json

import pytest
import torch

from lmleak.errors import ConfigError
from lmleak.train.finetune import finetune
from lmleak.train.prepare import default_targets, resolve_precision
from tests.train.tiny_llama import ft_config


def test_default_targets_by_architecture(tiny_gpt2):
    from transformers import LlamaConfig, LlamaForCausalLM

    assert default_targets(tiny_gpt2) == ["c_attn"]
    llama = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=32,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
        )
    )
    assert default_targets(llama) == ["q_proj", "v_proj"]
    llama.config.model_type = "unknown-arch"  # fallback: every Linear inside attention
    assert default_targets(llama) == ["k_proj", "o_proj", "q_proj", "v_proj"]


def test_unknown_lora_target_is_a_config_error(llama_dir, corpus, tmp_path):
    with pytest.raises(ConfigError, match="lora_targets"):
        finetune(corpus, tmp_path / "x", ft_config(llama_dir, lora_targets=("nope_proj",)), progress=False)


def test_precision_rules_and_their_cpu_fallback(monkeypatch):
    assert resolve_precision("auto", "cpu").dtype is None
    assert resolve_precision("fp16", "cpu").name == "fp32"
    assert resolve_precision("bf16", "cpu").dtype == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_precision("auto", "cuda").dtype == torch.bfloat16
    assert resolve_precision("fp16", "cuda").name == "fp32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    fallback = resolve_precision("auto", "cuda:0")
    assert fallback.dtype is None and "no bf16" in fallback.reason


def test_full_dp_fine_tune_unties_embeddings_and_reloads(llama_dir, corpus, tmp_path):
    from lmleak.models.loading import load_model

    out = tmp_path / "full"
    res = finetune(
        corpus, out, ft_config(llama_dir, "dp", full=True, lr=1e-3, epochs=2, max_steps=3), progress=False
    )
    assert res.history[0]["tokens"] > 0
    assert res.privacy["trainable"] == "all weights" and res.privacy["clipping"] == "opacus hooks"
    assert res.privacy["accounted_steps"] == res.privacy["noise_draws"] == 3
    info = json.loads((out / "train.json").read_text())
    assert info["model"]["untied_embeddings"] is True
    lm = load_model(out)
    assert lm.base == str(llama_dir.resolve())
    assert (
        lm.module.get_output_embeddings().weight.data_ptr()
        != lm.module.get_input_embeddings().weight.data_ptr()
    )
