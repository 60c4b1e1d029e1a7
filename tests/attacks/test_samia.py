"""SaMIA (Kaneko et al. 2024): the n-gram recall against hand computations and an obvious oracle, the
prefix cut, and the attack on a memorising fake model against a null one, text-only."""

from __future__ import annotations

import math

import numpy as np
import pytest
from faker import Faker

from lmleak.attacks.membership import MembershipSettings, evaluate_membership, text_scores
from lmleak.attacks.mia_methods import MethodOptions, parse_methods
from lmleak.attacks.samia import (
    SamiaSettings,
    rouge_n_recall,
    samia_cost,
    samia_score,
    samia_scores,
    split_prefix,
)
from lmleak.errors import CapabilityError, ConfigError
from lmleak.models.base import Capability
from lmleak.models.blackbox import TextOnly
from lmleak.models.fake import FakeLM

FAST = SamiaSettings(samples=3, max_new_tokens=6)


def _texts(n: int, seed: int) -> list[str]:
    fake = Faker()
    Faker.seed(seed)
    return [fake.sentence(nb_words=12) for _ in range(n)]


def _oracle_recall(candidate: list[str], reference: list[str], n: int) -> float:
    """ROUGE-N recall by hand: match each reference n-gram against a not-yet-used candidate one."""
    ref = [tuple(reference[i : i + n]) for i in range(len(reference) - n + 1)]
    pool = [tuple(candidate[i : i + n]) for i in range(len(candidate) - n + 1)]
    hits = 0
    for g in ref:
        if g in pool:
            pool.remove(g)
            hits += 1
    return hits / len(ref) if ref else math.nan


def test_rouge_n_recall_equals_the_hand_computation():
    cand = "the cat sat on the mat".split()
    ref = "the cat lay on the mat the end".split()
    # unigrams: the x3 (candidate has 2), cat, lay, on, mat, end -> 2 + 1 + 0 + 1 + 1 + 0 = 5 of 8
    assert rouge_n_recall(cand, ref, 1) == 5 / 8
    # bigrams: (the cat) (on the) (the mat) of the reference's 7
    assert rouge_n_recall(cand, ref, 2) == 3 / 7
    assert math.isnan(rouge_n_recall(cand, ["one"], 2)) and rouge_n_recall([], ref, 1) == 0.0


def test_rouge_n_recall_equals_an_obvious_oracle_on_random_words():
    rng = np.random.default_rng(0)
    words = list("abcde")
    for _ in range(200):
        cand = [str(w) for w in rng.choice(words, rng.integers(0, 9))]
        ref = [str(w) for w in rng.choice(words, rng.integers(1, 9))]
        for n in (1, 2):
            want, got = _oracle_recall(cand, ref, n), rouge_n_recall(cand, ref, n)
            assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want)


def test_the_prefix_is_the_first_int_share_of_the_words_and_the_score_averages_the_samples():
    assert split_prefix("a b c d e", 0.5) == (["a", "b"], ["c", "d", "e"])  # int(2.5) = 2, as the authors
    assert split_prefix("one", 0.5) == ([], ["one"])
    assert samia_score(["c d x", "e"], ["c", "d", "e"]) == pytest.approx((2 / 3 + 1 / 3) / 2)


def test_a_memorising_model_separates_members_and_a_null_model_does_not():
    texts = _texts(56, seed=5)
    mem, non, other = texts[:16], texts[16:32], texts[32:]
    opts = MethodOptions(methods=("samia",), samia=FAST)
    sizes = MembershipSettings(num_per_side=16, group_size=0, blind=False, n_boot=300)
    leak = evaluate_membership(FakeLM.from_texts(mem, alpha=1e-4), mem, non, sizes, options=opts)
    null = evaluate_membership(FakeLM.from_texts(other, alpha=1e-4), mem, non, sizes, options=opts)
    row = leak.metrics.set_index("feature").loc["samia"]
    assert row["auc"] > 0.8 and row["auc_ci"][0] > 0.5
    lo, hi = null.metrics.set_index("feature").loc["samia"]["auc_ci"]
    assert lo <= 0.5 <= hi
    plo, phi = leak.placebo["samia"]["auc_ci"]
    assert plo <= 0.5 <= phi  # the placebo (non-members split in two) covers chance


def test_samia_needs_only_generation_and_counts_its_cost():
    texts = _texts(8, seed=2) + ["lonely"]  # one word: no prefix at share 0.5, so not sent
    text_only = TextOnly(FakeLM.from_texts(texts[:4], alpha=1e-4))
    with pytest.raises(CapabilityError, match="needs 'score'"):
        text_scores(text_only, texts, options=MethodOptions(methods=("perplexity",)))
    sc = text_scores(text_only, texts, options=MethodOptions(methods=("samia",), samia=FAST))
    assert set(sc) == {
        "samia",
        "samia_requests",
        "samia_cached",
        "samia_generated_tokens",
        "samia_generated_words",
    }
    assert math.isnan(sc["samia"][-1]) and np.isfinite(sc["samia"][:-1]).all()
    import pandas as pd

    cost = samia_cost(pd.DataFrame(sc), FAST)
    assert cost["samia_requests"] == 1 and cost["samia_samples"] == 8 * 3  # one batched generate call
    assert cost["samia_generated_words"] <= cost["samia_generated_tokens"] <= 8 * 3 * 6  # word tokenizer
    again = samia_scores(text_only, texts, FAST, seed=0)
    assert np.array_equal(again.scores, sc["samia"], equal_nan=True)  # seeded: the same samples


def test_settings_are_checked_and_all_leaves_the_costly_text_only_method_out():
    with pytest.raises(ConfigError, match="samia_ngram"):
        SamiaSettings(ngram=3)
    with pytest.raises(ConfigError, match="samia_prefix_share"):
        SamiaSettings(prefix_share=1.0)
    assert "samia" not in parse_methods(["all"]) and parse_methods(["samia"]) == ("samia",)


def test_over_the_chat_tier_each_text_is_one_request_of_n_samples():
    from lmleak.models.http import HTTPModel
    from lmleak.serve import serving

    texts = _texts(6, seed=4)
    with serving(FakeLM.from_texts(texts, alpha=1e-4), tier="chat", name="m") as server:
        model = HTTPModel(f"{server.url}?cache=off&tier=chat#m")
        r = samia_scores(model, texts, SamiaSettings(samples=2, max_new_tokens=4))
    assert model.capabilities == {Capability.GENERATE} and r.requests == 6 and r.cached == 0
    assert all(len(s) == 2 for s in r.samples) and np.isfinite(r.scores).all()
    assert np.isnan(r.generated_tokens).all()  # the server's tokenizer: not counted (a request a sample)
