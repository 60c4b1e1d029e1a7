"""models.base: capabilities and require(), the score records, and the shared scoring helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lmleak.errors import CapabilityError
from lmleak.models.base import (
    Capability,
    SpanScore,
    TokenStats,
    continuation_logprobs,
    count_words,
    require,
    score_text_by_ids,
)


class _Model:
    def __init__(self, *caps: Capability, name: str = "m") -> None:
        self.capabilities, self.name = frozenset(caps), name


def test_require_passes_when_every_capability_is_granted():
    require(_Model(Capability.SCORE, Capability.TOP_K), Capability.SCORE, Capability.TOP_K)
    require(_Model())  # nothing needed, nothing granted


def test_require_names_what_is_missing_and_what_is_granted():
    with pytest.raises(CapabilityError) as e:
        require(_Model(Capability.TOP_K, Capability.GENERATE, name="api"), Capability.SCORE, Capability.TOP_K)
    msg = str(e.value)
    assert msg.startswith(
        "this attack needs 'score' access, but model 'api' grants only 'generate', 'top_k'."
    )
    with pytest.raises(CapabilityError, match="mia needs 'score', 'embeddings' access.*grants only nothing"):
        require(_Model(name="bare"), Capability.SCORE, Capability.EMBEDDINGS, attack="mia")


def test_a_model_without_capabilities_grants_nothing():
    with pytest.raises(CapabilityError, match="grants only nothing"):
        require(object(), Capability.GENERATE)


def test_span_score_perplexities_follow_their_definitions():
    s = SpanScore(logprob=-6.0, num_tokens=3, num_words=2)
    assert s.perplexity_per_token == pytest.approx(math.exp(2.0))
    assert s.perplexity_per_word == pytest.approx(math.exp(3.0))
    assert SpanScore(-1.0, 0, 0).perplexity_per_token == pytest.approx(math.e)  # no division by zero


def test_token_stats_length_is_its_number_of_tokens():
    st = TokenStats(np.ones(5, dtype=np.int32), np.zeros(5, np.float32), np.zeros(5, np.float32))
    assert len(st) == 5


def test_count_words_is_whitespace_words():
    assert count_words("") == 0 and count_words("a\tb\n c ") == 3


def test_continuation_logprobs_matches_a_loop():
    rng = np.random.default_rng(0)
    stats, contexts, expected = [], [], []
    for n in (1, 4, 9):
        lp = rng.normal(size=n).astype(np.float32)
        ctx = list(range(int(rng.integers(0, n))))
        stats.append(TokenStats(np.ones(n, np.int32), lp, np.zeros(n, np.float32)))
        contexts.append(ctx)
        total = 0.0
        for i in range(len(ctx), n):
            total += float(lp[i])
        expected.append(total)
    got = continuation_logprobs(stats, contexts)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12)


class _IdScorer:
    """Scores each continuation as minus its number of tokens; records what it was asked."""

    class tokenizer:  # noqa: N801 - stands for an instance attribute
        @staticmethod
        def encode(text: str) -> list[int]:
            return [len(w) for w in text.split()]

    def __init__(self) -> None:
        self.calls: list[tuple[list[list[int]], list[list[int]]]] = []

    def score_ids(self, ctx, cont):
        self.calls.append((ctx, cont))
        return [-float(len(c)) for c in cont]


def test_score_text_by_ids_encodes_scores_and_counts_words():
    scorer = _IdScorer()
    out = score_text_by_ids(scorer, ["my id is", ""], ["123 456", "hello"])
    assert scorer.calls == [([[2, 2, 2], []], [[3, 3], [5]])]
    assert out == [SpanScore(-2.0, 2, 2), SpanScore(-1.0, 1, 1)]


def test_every_backend_names_its_start_token_and_summaries_record_it():
    from lmleak.models.base import SCORING_CONVENTION, scoring_convention
    from lmleak.models.blackbox import TextOnly, TopKOnly
    from lmleak.models.fake import FakeLM

    lm = FakeLM.from_texts(["my id is 12", "hello there"])
    for m in (lm, TopKOnly(lm, 2), TextOnly(lm)):
        assert m.bos_token_id == lm.tokenizer.bos_id
        assert scoring_convention(m) == {
            "bos_token_id": lm.tokenizer.bos_id,
            "scoring_convention": SCORING_CONVENTION,
        }
    # the start token is the one every scored row begins with: scoring after it by hand agrees
    ids = lm.tokenizer.encode("my id is 12")
    first = lm.next_logprobs([[]])[0][ids[0]]
    assert lm.token_stats([ids])[0].logprobs[0] == pytest.approx(first, abs=1e-5)
    assert scoring_convention(object()) == {"bos_token_id": None, "scoring_convention": SCORING_CONVENTION}
