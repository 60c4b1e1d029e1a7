"""Fixtures shared by the probe tests."""

from __future__ import annotations

import pytest

from lmleak.models.torch_causal import TorchCausalLM


@pytest.fixture()
def tiny(tiny_gpt2, id_tokenizer):
    """The conftest's 2-layer GPT-2 behind the torch backend (token ids written as numbers)."""
    return TorchCausalLM(tiny_gpt2, id_tokenizer, name="tiny", max_length=64)
