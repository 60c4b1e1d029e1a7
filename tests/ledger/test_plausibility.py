"""A corpus perplexity above the vocabulary size stops the ledger as invalid, on every backend (issue 33).
Over HTTP (a wrong tokenizer behind a server without /tokenize): tests/models/test_http.py."""

from __future__ import annotations

import numpy as np
import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.errors import ModelError
from lmleak.ledger.ledger import build_ledger
from lmleak.ledger.plausibility import UNIFORM_SLACK, check_better_than_uniform, vocabulary_size
from lmleak.models.base import Capability, TokenStats

TEXTS = ["one two three four", "five six seven", "eight nine ten eleven twelve"]


class _Tokenizer:
    bos_id = 1
    vocab_size = 100

    def encode(self, text):
        return [10 + len(w) for w in text.split()]


class _Scorer:
    """An in-process model that scores every token at ``-nats``."""

    name = "scorer"
    capabilities = frozenset({Capability.SCORE})
    max_length = 64
    tokenizer_source = "given"  # a tokenizer given apart from the model (tokenizer=DIR): it can be wrong

    def __init__(self, nats):
        self.nats = nats
        self.tokenizer = _Tokenizer()

    def token_stats(self, seqs):
        return [
            TokenStats(
                np.ones(len(s), np.int32),
                np.full(len(s), -self.nats, np.float32),
                np.zeros(len(s), np.float32),
            )
            for s in seqs
        ]


def test_a_perplexity_above_the_vocabulary_stops_an_in_process_ledger_too(tmp_path):
    """A model that scores each token at -3 ln V nats (perplexity V^3) stops the ledger, naming the
    perplexity, the vocabulary and the fix; at -ln V (uniform guessing exactly) it passes."""
    corpus = Corpus([Document("u", f"d{i}", t) for i, t in enumerate(TEXTS)])
    with pytest.raises(
        ModelError, match=r"corpus perplexity 1,000,000 is above the vocabulary size \(100 tokens"
    ):
        build_ledger(_Scorer(3 * np.log(100)), corpus, tmp_path / "bad")
    assert build_ledger(_Scorer(np.log(100)), corpus, tmp_path / "uniform").num_docs == len(TEXTS)


def test_the_limit_is_the_slack_times_the_largest_known_vocabulary():
    """The oracle: exp(-mean logprob) against UNIFORM_SLACK x the largest of the tokenizer's, the output
    layer's and a server's vocabulary size; unknown log-probabilities (a top-k black box) pass."""
    model = _Scorer(0.0)
    model.module = type("M", (), {"config": type("C", (), {"vocab_size": 128})()})()
    model.tokenizer_source = "given"  # a tokenizer given apart from the model: it can be the wrong one
    assert vocabulary_size(model) == 128
    edge = np.log(UNIFORM_SLACK * 128)
    check_better_than_uniform(np.full(10, -edge + 1e-6), model)
    with pytest.raises(ModelError, match="worse than uniform guessing"):
        check_better_than_uniform(np.full(10, -edge - 1e-3), model)
    check_better_than_uniform(np.full(10, np.nan), model)
    assert vocabulary_size(object()) is None


def test_a_right_model_that_never_saw_a_few_tokens_is_not_stopped():
    """A redacted or CRT model read on raw text: 90 % of tokens predicted well (-1 nat), the digits and
    names it never saw at -50 nats. The corpus perplexity is far above V (e^5.9 = 365 > 150), but the
    typical (median) token is at e^1, so the model is the right one and the ledger is kept; a wrong
    tokenizer misreads every token and is stopped."""
    model = _Scorer(0.0)
    lp = np.r_[np.full(90, -1.0), np.full(10, -50.0)]
    assert np.exp(-lp.mean()) > UNIFORM_SLACK * 100 and np.exp(-np.median(lp)) < UNIFORM_SLACK * 100
    check_better_than_uniform(lp, model)
    with pytest.raises(ModelError, match=r"so is the typical token's \(403, the median\)"):
        check_better_than_uniform(np.full(100, -6.0), model)


def test_an_in_process_model_with_its_own_tokenizer_worse_than_uniform_is_warned_not_stopped(capsys):
    """A model read with the tokenizer saved beside its weights cannot have another model's: a DP or
    CRT model that learnt nothing (the quick demo's CRT model) is said on stderr, and its ledger kept;
    the same scores through a tokenizer given apart from the model stop."""
    model = _Scorer(0.0)
    model.tokenizer_source = None  # read with the tokenizer saved beside its weights
    check_better_than_uniform(np.full(100, -6.0), model)
    assert "worse than uniform guessing" in capsys.readouterr().err
    model.tokenizer_source = "/models/b"
    with pytest.raises(ModelError, match=r"The tokenizer \(/models/b\) is not the model's"):
        check_better_than_uniform(np.full(100, -6.0), model)
