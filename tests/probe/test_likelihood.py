"""Paper 003 Eq. 2 / Eq. 4 likelihoods, against a scorer whose token probabilities are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lmleak.errors import CapabilityError
from lmleak.models.base import Capability
from lmleak.probe.likelihood import eq2_eq4, null_permutation, split_prompt, target_likelihoods


class _Tok:
    def encode(self, text: str) -> list[int]:
        return [len(w) for w in text.split()]  # one token per word


class _HalfPerToken:
    """Every continuation token has probability 1/2, so a target of n tokens has likelihood 2^-n."""

    name = "half"
    capabilities = frozenset({Capability.SCORE})
    tokenizer = _Tok()

    def __init__(self) -> None:
        self.calls: list[int] = []

    def score_ids(self, contexts, continuations):
        self.calls.append(len(contexts))
        return np.array([len(c) * math.log(0.5) for c in continuations])


def test_likelihoods_equal_the_product_and_geometric_mean_of_token_probabilities():
    prompts = ["The email of Ann is", "Bob lives at ", "x"]
    targets = ["ann@example.org", "12 Main Street", "a b c d"]
    lik, norm, lp = target_likelihoods(_HalfPerToken(), prompts, targets)
    n_tokens = [1, 3, 4]
    assert lik == pytest.approx([0.5**n for n in n_tokens])
    assert norm == pytest.approx([0.5, 0.5, 0.5])  # geometric mean per token
    assert lp == pytest.approx([n * math.log(0.5) for n in n_tokens])


def test_batches_do_not_change_the_numbers():
    prompts = [f"p{i}" for i in range(5)]
    targets = ["a " * (i + 1) for i in range(5)]
    model = _HalfPerToken()
    small = target_likelihoods(model, prompts, targets, batch=2)
    assert model.calls == [2, 2, 1]
    for a, b in zip(small, target_likelihoods(_HalfPerToken(), prompts, targets), strict=True):
        assert np.array_equal(a, b)


def test_a_model_without_scores_is_refused_before_any_work():
    class TextOnly:
        name = "api"
        capabilities = frozenset({Capability.GENERATE})

    with pytest.raises(CapabilityError):
        target_likelihoods(TextOnly(), ["p"], ["t"])


def test_eq4_of_an_empty_target_does_not_divide_by_zero():
    lik, norm = eq2_eq4(np.array([0.0, math.log(0.2)]), np.array([0, 1]))
    assert lik == pytest.approx([1.0, 0.2]) and norm == pytest.approx([1.0, 0.2])


def test_the_target_carries_its_leading_space():
    assert split_prompt("Ann's phone is  ", "  555-0101 ") == ("Ann's phone is", " 555-0101")


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10])
def test_null_pairs_every_subject_with_someone_else(n):
    for seed in range(20):
        p = null_permutation(n, seed=seed)
        assert sorted(p.tolist()) == list(range(n))
        if n >= 2:
            assert all(p[i] != i for i in range(n))
    assert np.array_equal(null_permutation(n, seed=4), null_permutation(n, seed=4))
