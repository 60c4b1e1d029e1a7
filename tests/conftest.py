"""Shared fixtures. The whole suite runs offline: hub look-ups are switched off before any import."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny_gpt2():
    """A randomly initialised 2-layer GPT-2 with a 64-token vocabulary (seeded)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=64, n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=1, eos_token_id=2)
    return GPT2LMHeadModel(cfg).eval()


class IdTokenizer:
    """Token ids written as decimal words: "5 7 9" <-> [5, 7, 9]."""

    vocab_size = 64
    bos_id = 1
    eos_id = 2
    pad_id = 0

    def encode(self, text: str) -> list[int]:
        return [int(w) for w in text.split()]

    def decode(self, ids) -> str:
        return " ".join(str(int(i)) for i in ids)


@pytest.fixture(scope="session")
def id_tokenizer():
    return IdTokenizer()
