"""Perplexity and top-k accuracy against a stub model whose token statistics are chosen by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.models.base import TokenStats
from lmleak.models.evaluation import evaluate_model


class _Chars:
    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text.replace(" ", "")]  # one token per non-space character


class _Stub:
    """Token i of every document has probability 1/(i+2) and rank i+1."""

    tokenizer = _Chars()

    def __init__(self) -> None:
        self.batches: list[int] = []

    def token_stats(self, seqs):
        self.batches.append(len(seqs))
        out = []
        for ids in seqs:
            i = np.arange(len(ids))
            out.append(
                TokenStats(i + 1, np.log(1.0 / (i + 2)).astype(np.float32), np.zeros(len(ids), np.float32))
            )
        return out


def test_perplexities_and_accuracies_equal_a_hand_computation():
    corpus = Corpus([Document("u", "a", "ab cd"), Document("u", "b", "xyz"), Document("v", "c", "q")])
    model = _Stub()
    m = evaluate_model(model, corpus, ks=(1, 2), batch_docs=2)
    assert model.batches == [2, 1]
    # tokens: 4 + 3 + 1 = 8; probabilities 1/2..1/5, 1/2..1/4, 1/2
    nll = -sum(math.log(1 / (i + 2)) for n in (4, 3, 1) for i in range(n))
    assert m["tokens"] == 8 and m["words"] == 4  # "ab cd" has two words
    assert m["perplexity"] == pytest.approx(math.exp(nll / 8), rel=1e-6)
    assert m["perplexity_per_word"] == pytest.approx(math.exp(nll / 4), rel=1e-6)
    assert m["top1_accuracy"] == pytest.approx(3 / 8)  # the first token of each document
    assert m["top2_accuracy"] == pytest.approx(5 / 8)  # the first two of "abcd" and "xyz", and "q"


def test_an_empty_corpus_divides_by_one():
    m = evaluate_model(_Stub(), Corpus([]), ks=(1,))
    assert m == {
        "perplexity": 1.0,
        "perplexity_per_word": 1.0,
        "tokens": 0.0,
        "words": 0.0,
        "top1_accuracy": 0.0,
    }
