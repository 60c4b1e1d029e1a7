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
    canaries_needed,
    correct_at_precision,
    count_correct,
    epsilon_lower_bound,
    guess_membership,
    make_canaries,
    max_certifiable_epsilon,
    p_value,
    plan_audit,
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
    from lmleak.attacks.fdp_audit import GDP_ASSUMPTION, fdp_bound

    b = bound_from_counts(1000, 100, 80, 1e-5, 0.9)
    f = fdp_bound(1000, 100, 80, 1e-5, 0.9)
    assert asdict(b) == {
        "m": 1000,
        "r": 100,
        "v": 80,
        "delta": 1e-5,
        "confidence": 0.9,
        "epsilon_lower_bound": epsilon_lower_bound(1000, 100, 80, 1e-5, 0.9),
        "epsilon_lower_bound_fdp": f.epsilon_lower_bound_fdp,
        "mu_lower_bound": f.mu_lower_bound,
        "fdp_assumption": GDP_ASSUMPTION,
        "fdp_note": None,
    }
    # the existing keys first, in their order; the f-DP bound beside them
    assert list(asdict(b))[:6] == ["m", "r", "v", "delta", "confidence", "epsilon_lower_bound"]
    with pytest.raises(ConfigError):
        bound_from_counts(10, 20, 1)


# ------------------------------------------------------------------------- planning (issue 27, item 7)


@pytest.mark.parametrize("m", [10, 100, 1000, 5000])
def test_all_right_the_most_an_audit_can_certify_is_the_closed_form(m):
    # v = r = m: q^m = 0.05, ε = ln(q / (1 - q))
    q = 0.05 ** (1 / m)
    assert max_certifiable_epsilon(m) == pytest.approx(math.log(q / (1 - q)), abs=1e-6)


@pytest.mark.parametrize(
    ("r", "p", "c"), [(1000, 0.9, 0.95), (200, 0.8, 0.95), (500, 0.99, 0.9), (64, 0.75, 0.99)]
)
def test_with_delta_zero_the_bound_is_the_logit_of_the_clopper_pearson_lower_bound(r, p, c):
    # P[Binomial(r, q) >= v] = I_q(v, r - v + 1): the one-sided exact lower bound of the accuracy,
    # the lower end of a two-sided Clopper-Pearson interval at level 1 - 2(1 - c)
    from lmleak.intervals import clopper_pearson_interval

    v = math.ceil(round(p * r, 9))
    lower = clopper_pearson_interval(v, r, level=1 - 2 * (1 - c))[0]
    assert max_certifiable_epsilon(r, precision=p, confidence=c) == pytest.approx(
        math.log(lower / (1 - lower)), abs=1e-6
    )


def test_the_issues_numbers_one_thousand_guesses_cap_the_bound_near_5_8_and_2_0_at_90_percent():
    assert max_certifiable_epsilon(1000) == pytest.approx(5.809, abs=1e-3)
    assert max_certifiable_epsilon(1000, precision=0.9) == pytest.approx(2.021, abs=1e-3)
    # a positive delta lowers the cap a little
    assert max_certifiable_epsilon(1000, delta=1e-5) < max_certifiable_epsilon(1000)


def test_precision_means_at_least_that_share_right():
    assert [correct_at_precision(1000, p) for p in (1.0, 0.99, 0.9, 0.5)] == [1000, 990, 900, 500]
    assert correct_at_precision(7, 0.9) == 7 and correct_at_precision(10, 0.0) == 0
    with pytest.raises(ConfigError, match="precision"):
        correct_at_precision(10, 1.5)


def _certified_by_scan(target, p, delta, c, limit):
    """Every m up to ``limit`` whose audit (all m guessed, ceil(p m) right) certifies the target, by
    the bound itself (bisection on ε), not by the p-value at the target."""
    return [
        m
        for m in range(1, limit + 1)
        if epsilon_lower_bound(m, m, math.ceil(round(p * m, 9)), delta, c) >= target
    ]


@pytest.mark.parametrize(
    ("target", "p", "delta", "c"),
    [
        (1.0, 1.0, 0.0, 0.95),
        (2.0, 0.95, 0.0, 0.95),
        (1.0, 0.8, 0.0, 0.95),
        (2.0, 1.0, 1e-3, 0.95),
        (0.5, 0.7, 0.0, 0.9),
        (3.0, 0.99, 1e-5, 0.95),
    ],
)
def test_canaries_needed_is_where_a_scan_over_every_m_certifies_from_then_on(target, p, delta, c):
    found = canaries_needed(target, p, delta, c)
    assert found is not None
    limit = 3 * found
    ok = _certified_by_scan(target, p, delta, c, limit)
    assert ok[-(limit - found + 1) :] == list(range(found, limit + 1))  # every m from found on
    assert found - 1 not in ok


def test_near_the_threshold_rounding_certifies_some_m_below_the_answer_but_not_all():
    # at 70 % right, m = 53 certifies ε = 0.5 (38 of 53 is 71.7 %), m = 70 does not (49 of 70)
    ok = _certified_by_scan(0.5, 0.7, 0.0, 0.9, 80)
    assert ok[0] == 53 and 70 not in ok
    assert canaries_needed(0.5, 0.7, 0.0, 0.9) == 71


@pytest.mark.parametrize("target", [0.5, 1.0, 3.0, 6.0])
def test_canaries_needed_all_right_is_the_closed_form(target):
    # q_t^m < 0.05 with q_t = e^t / (1 + e^t): m = floor(ln 0.05 / ln q_t) + 1
    q = math.exp(target) / (1 + math.exp(target))
    assert canaries_needed(target) == math.floor(math.log(0.05) / math.log(q)) + 1


def test_no_number_of_canaries_beats_randomised_response_accuracy():
    # ε = 2 is randomised response with accuracy e^2 / (1 + e^2) = 0.881: 88 % right proves less
    assert canaries_needed(2.0, precision=0.88) is None
    assert canaries_needed(2.0, precision=0.9) is not None
    assert canaries_needed(30.0, max_m=1000) is None  # possible in principle, not in 1,000 canaries
    with pytest.raises(ConfigError, match="target epsilon"):
        canaries_needed(0.0)


def test_a_plan_tabulates_each_precision_and_the_canaries_for_a_target():
    plan = plan_audit(500, r=400, precisions=(1.0, 0.9), delta=1e-5, target_epsilon=1.5)
    assert (plan.m, plan.r, plan.delta, plan.target_epsilon) == (500, 400, 1e-5, 1.5)
    assert [row["v"] for row in plan.rows] == [400, 360]
    assert plan.rows[1]["max_epsilon"] == epsilon_lower_bound(500, 400, 360, 1e-5, 0.95)
    # the same share of the canaries guessed as the plan's r / m
    assert plan.rows[0]["canaries_needed"] == canaries_needed(1.5, 1.0, 1e-5, guess_share=0.8)
    assert "canaries_needed" not in plan_audit(10).rows[0]
    with pytest.raises(ConfigError):
        plan_audit(10, r=20)


def test_under_the_null_the_bound_is_positive_no_more_often_than_the_confidence_allows():
    # scores that know nothing of the inclusion: v ~ Binomial(r, 1/2), and ε̂ > 0 exactly when
    # v reaches the smallest v* with P[Binomial(r, 1/2) >= v*] < 0.05 -- an exact rate to compare
    m, r, runs = 60, 30, 600
    v_star = next(v for v in range(r + 1) if binom.sf(v - 1, r, 0.5) < 0.05)
    exact_rate = binom.sf(v_star - 1, r, 0.5)
    assert exact_rate <= 0.05
    rng = np.random.default_rng(7)
    positive = 0
    for _ in range(runs):
        included = rng.random(m) < 0.5
        rec = audit_scores(rng.normal(size=m), included, r=r)
        assert rec["null"]["included"] + rec["null"]["excluded"] == m
        positive += rec["epsilon_lower_bound"] > 0
    sd = math.sqrt(exact_rate * (1 - exact_rate) / runs)
    assert abs(positive / runs - exact_rate) < 4 * sd


# ---------------------------------------------------- the plan guesses as the run does (issue 32, item 4)


@pytest.mark.parametrize("m", [7, 64, 256, 1000])
def test_plan_and_run_use_the_same_number_of_guesses(m):
    from lmleak.attacks.dp_audit import DPAuditConfig, default_guesses

    assert DPAuditConfig(m=m).r is None  # the run's default: audit_scores guesses default_guesses(m)
    included = np.arange(m) % 2 == 0
    perfect = included.astype(float)  # every guess right
    rec = audit_scores(perfect, included, m=m, delta=1e-5)
    plan = plan_audit(m, precisions=[1.0], delta=1e-5)
    assert plan.r == rec["r"] == default_guesses(m) == m // 2
    assert plan.rows[0]["max_epsilon"] == rec["max_certifiable_epsilon"] == rec["epsilon_lower_bound"]


def test_the_issues_plan_number_five_point_one_at_one_thousand_canaries():
    # issue 32: the plan said 5.809 (all 1,000 guessed) while the run, guessing 500, can reach 5.114
    assert plan_audit(1000, precisions=[1.0]).rows[0]["max_epsilon"] == pytest.approx(5.114, abs=1e-3)
    assert plan_audit(1000, r=1000, precisions=[1.0]).rows[0]["max_epsilon"] == pytest.approx(5.809, abs=1e-3)


@pytest.mark.parametrize(("target", "p"), [(1.0, 1.0), (2.0, 0.95), (0.5, 0.8)])
def test_canaries_needed_with_half_guessed_is_where_a_scan_certifies_from_then_on(target, p):
    found = canaries_needed(target, p, guess_share=0.5)
    assert found is not None
    ok = [
        m
        for m in range(1, 3 * found + 1)
        if epsilon_lower_bound(m, m // 2, correct_at_precision(m // 2, p)) >= target
    ]
    assert ok[-(2 * found + 1) :] == list(range(found, 3 * found + 1)) and found - 1 not in ok
    assert plan_audit(found, precisions=[p], target_epsilon=target).rows[0]["canaries_needed"] == found
