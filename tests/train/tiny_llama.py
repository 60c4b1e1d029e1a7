"""A tiny Llama base model and fine-tuning settings for the fine-tuning tests (2 layers, width 64)."""

from __future__ import annotations

import torch

from lmleak.train.finetune import FinetuneConfig


def make_tiny_llama(path, texts, *, tied: bool = True, seed: int = 0):
    """A 2-layer, width-64 Llama folder (config.json, safetensors, tokenizer) with a small word vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from lmleak.models.small import build_tokenizer

    tok = build_tokenizer(texts, kind="word", vocab_size=80)
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=128,
        tie_word_embeddings=tied,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    LlamaForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def ft_config(base, mode="plain", **kw):
    kw.setdefault("lora", 4)
    kw.setdefault("seq_len", 16)
    kw.setdefault("batch_size", 4)
    kw.setdefault("epochs", 1)
    kw.setdefault("lr", 5e-3)
    if mode not in ("plain", "nodp"):
        kw.setdefault("noise_multiplier", 1.0)
    return FinetuneConfig(base=str(base), mode=mode, **kw)


def base_tok(lm):
    """The tokenizer wrapper the fine-tuning code encodes with."""
    from lmleak.train.prepare import BaseTokenizer

    return BaseTokenizer(lm.tokenizer)
