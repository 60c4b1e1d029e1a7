"""Black-box views: API hardening abstains, the text-only view offers nothing but generation."""

from __future__ import annotations

import numpy as np
import pytest

from lmleak.errors import CapabilityError
from lmleak.models.base import Capability, require
from lmleak.models.blackbox import TextOnly, TopKOnly
from lmleak.models.fake import FakeLM

TEXTS = ["my id is 123456", "my id is 654321", "the order arrived late today"]


def test_hardened_api_returns_nothing_below_the_top1_threshold_and_answers_above():
    inner = FakeLM.from_texts(TEXTS)
    prefixes = [inner.tokenizer.encode(t) for t in ["my id", "the order arrived"]]
    truth = inner.top_k(prefixes, 1)
    p1 = [float(np.exp(lps[0])) for _, lps in truth]
    # a threshold between the two prefixes' top-1 probabilities: one answers, the other abstains
    lo, hi = sorted(p1)
    assert lo < hi
    api = TopKOnly(inner, 1, min_top1_prob=(lo + hi) / 2)
    out = api.top_k(prefixes, 1)
    for (ids, lps), (tid, _), p in zip(out, truth, p1, strict=True):
        if p < (lo + hi) / 2:
            assert len(ids) == 0 and len(lps) == 0
        else:
            np.testing.assert_array_equal(ids, tid)
    # the same abstention shows in the ranks the leakage report uses: k + 1 = "nothing returned"
    seq = inner.tokenizer.encode("the order arrived late today")
    ranks = api.topk_ranks([seq])[0]
    assert ranks.min() >= 1 and ranks.max() <= 2


def test_text_only_view_generates_but_refuses_scores():
    inner = FakeLM.from_texts(TEXTS)
    view = TextOnly(inner)
    assert view.capabilities == frozenset({Capability.GENERATE})
    assert view.generate(["my id"], max_new_tokens=3) == inner.generate(["my id"], max_new_tokens=3)
    assert not hasattr(view, "token_stats") and not hasattr(view, "top_k")
    with pytest.raises(CapabilityError, match="score"):
        require(view, Capability.SCORE, attack="loss-based membership")


def test_topk_view_offers_no_scores():
    api = TopKOnly(FakeLM.from_texts(TEXTS), 3)
    assert not hasattr(api, "token_stats") and not hasattr(api, "score_text")
    with pytest.raises(CapabilityError):
        require(api, Capability.SCORE)
