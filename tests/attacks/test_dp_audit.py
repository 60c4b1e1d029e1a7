"""One-run DP audit (Steinke, Nasr & Jagielski 2023): the bound against hand computations and
direct scipy oracles, its monotonicity and the guessing rule (the CLI: ``cli/test_dpaudit.py``; the audit
run end to end: ``audit/test_dp_audit.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import binom

from lmleak.attacks.dp_audit import (
    audit_scores,
    count_correct,
    epsilon_lower_bound,
    guess_membership,
    make_canaries,
    p_value,
)
from lmleak.errors import ConfigError


def _eps_oracle(r: int, v: int, confidence: float) -> float:
    """δ = 0 by root finding on scipy's binomial tail: P[Binomial(r, e^ε/(1+e^ε)) >= v] = 1 - c."""
    f = lambda eps: binom.sf(v - 1, r, 1 / (1 + math.exp(-eps))) - (1 - confidence)  # noqa: E731
    if f(0.0) >= 0:
        return 0.0
    return brentq(f, 0.0, 50.0, xtol=1e-10)


def test_all_guesses_right_gives_the_closed_form_bound():
    # v = r: q^r = 1 - c, so q = 0.05^(1/10) = 0.74113 and ε = ln(q / (1 - q)) = 1.05187
    q = 0.05 ** (1 / 10)
    assert epsilon_lower_bound(1000, 10, 10, 0.0, 0.95) == pytest.approx(math.log(q / (1 - q)), abs=1e-6)
    assert epsilon_lower_bound(1000, 10, 10, 0.0, 0.95) == pytest.approx(1.05187, abs=1e-5)


@pytest.mark.parametrize(
    ("r", "v", "c"),
    [(100, 80, 0.95), (100, 60, 0.95), (1000, 700, 0.99), (50, 49, 0.9), (20, 15, 0.95), (500, 260, 0.95)],
)
def test_the_delta_zero_bound_matches_root_finding_on_scipys_binomial_tail(r, v, c):
    assert epsilon_lower_bound(10_000, r, v, 0.0, c) == pytest.approx(_eps_oracle(r, v, c), abs=1e-5)


def test_the_delta_term_matches_a_hand_computation():
    # r = 2, v = 2, ε = ln 3 so q = 3/4: P[W >= 2] = 9/16; P[W = 1] = 6/16, P[W = 0] = 1/16;
    # α = max(6/16 / 1, (6/16 + 1/16) / 2) = 6/16; p = 9/16 + 2 m δ 6/16 with m = 10, δ = 0.01
    assert p_value(10, 2, 2, math.log(3), 0.01) == pytest.approx(9 / 16 + 2 * 10 * 0.01 * 6 / 16)
    # a slow loop over i for a bigger case
    m, r, v, eps, delta = 500, 40, 31, 0.7, 1e-4
    q = math.exp(eps) / (1 + math.exp(eps))
    alpha = max(sum(binom.pmf(v - j, r, q) for j in range(1, i + 1)) / i for i in range(1, v + 1))
    assert p_value(m, r, v, eps, delta) == pytest.approx(
        binom.sf(v - 1, r, q) + 2 * m * delta * alpha, rel=1e-12
    )


def test_a_positive_delta_weakens_the_bound():
    assert (
        epsilon_lower_bound(1000, 100, 80, 1e-3)
        < epsilon_lower_bound(1000, 100, 80, 1e-5)
        < epsilon_lower_bound(1000, 100, 80, 0.0)
    )


def test_the_bound_grows_with_correct_guesses():
    bounds = [epsilon_lower_bound(1000, 100, v, 1e-5, 0.95) for v in range(40, 101, 5)]
    assert all(a <= b for a, b in zip(bounds, bounds[1:], strict=False))
    assert bounds[-1] > bounds[0]


def test_the_bound_falls_as_the_confidence_asked_for_rises():
    bounds = [epsilon_lower_bound(1000, 100, 85, 1e-5, c) for c in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999)]
    assert all(a > b for a, b in zip(bounds, bounds[1:], strict=False))


def test_half_right_proves_nothing():
    assert epsilon_lower_bound(1000, 100, 50) == 0.0
    assert epsilon_lower_bound(1000, 1000, 500, 1e-5) == 0.0
    assert epsilon_lower_bound(1000, 100, 52) == 0.0  # P[Bin(100, 1/2) >= 52] = 0.38: chance explains it
    assert epsilon_lower_bound(1000, 0, 0) == 0.0


def test_at_the_bound_the_p_value_sits_at_the_significance_level():
    eps = epsilon_lower_bound(1000, 200, 150, 1e-5, 0.95)
    assert p_value(1000, 200, 150, eps, 1e-5) < 0.05 <= p_value(1000, 200, 150, eps + 1e-5, 1e-5)


def test_impossible_counts_are_refused_with_the_field():
    with pytest.raises(ConfigError, match="v <= r <= m"):
        epsilon_lower_bound(10, 20, 5)
    with pytest.raises(ConfigError, match="confidence"):
        epsilon_lower_bound(10, 5, 5, confidence=1.0)


def test_guesses_split_the_extremes_and_abstain_in_the_middle():
    scores = [0.3, 2.0, -1.0, 0.0, 5.0, 1.0]
    g = guess_membership(scores, 4)
    assert g.tolist() == [0, 1, -1, -1, 1, 0]
    assert count_correct(g, [True, True, False, True, True, False]) == (4, 3)


def test_a_perfect_separation_of_many_canaries_gives_a_large_bound():
    rng = np.random.default_rng(0)
    included = rng.random(400) < 0.5
    scores = np.where(included, 1.0, 0.0) + rng.random(400) * 0.1
    rec = audit_scores(scores, included, r=100, delta=1e-5)
    assert rec["v"] == rec["r"] == 100
    assert rec["epsilon_lower_bound"] == pytest.approx(epsilon_lower_bound(400, 100, 100, 1e-5), abs=1e-9)
    assert rec["epsilon_lower_bound"] > 2.5
    random_scores = rng.random(400)
    assert audit_scores(random_scores, included, r=100)["epsilon_lower_bound"] < 1.0


def test_canaries_are_distinct_seeded_and_about_half_included():
    a, b = make_canaries(500, seed=3), make_canaries(500, seed=3)
    assert a == b
    assert len({c["secret"] for c in a}) == 500
    assert 200 < sum(c["included"] for c in a) < 300


def test_bound_from_counts_is_the_bound_with_its_inputs_in_the_json_order():
    from dataclasses import asdict

    from lmleak.attacks.dp_audit import bound_from_counts

    b = bound_from_counts(1000, 100, 80, 1e-5, 0.9)
    assert asdict(b) == {
        "m": 1000,
        "r": 100,
        "v": 80,
        "delta": 1e-5,
        "confidence": 0.9,
        "epsilon_lower_bound": epsilon_lower_bound(1000, 100, 80, 1e-5, 0.9),
    }
    assert list(asdict(b)) == ["m", "r", "v", "delta", "confidence", "epsilon_lower_bound"]
    with pytest.raises(ConfigError):
        bound_from_counts(10, 20, 1)
