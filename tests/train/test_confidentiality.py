"""Accounting cross-checks and the confidentiality results of paper 002, pinned."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lmleak.train.accounting import epsilon_dp_accounting, epsilon_opacus
from lmleak.train.confidentiality import bayesian_confidentiality, confidentiality_report, crt_guarantees


@pytest.mark.parametrize("sigma, q, steps", [(1.0, 0.01, 1000), (0.8, 0.05, 300), (1.5, 0.02, 2000)])
def test_opacus_accountants_agree_with_dp_accounting_within_5_percent(sigma, q, steps):
    rdp = epsilon_opacus(sigma, q, steps, 1e-5, "rdp")
    assert rdp == pytest.approx(epsilon_dp_accounting(sigma, q, steps, 1e-5, "rdp"), rel=0.05)
    prv = epsilon_opacus(sigma, q, steps, 1e-5, "prv")
    assert prv == pytest.approx(epsilon_dp_accounting(sigma, q, steps, 1e-5, "pld"), rel=0.05)
    assert prv <= rdp  # PRV is the tighter accountant


def test_the_environment_reference_numbers():
    assert epsilon_opacus(1.0, 0.01, 1000, 1e-5, "rdp") == pytest.approx(2.1014, abs=1e-3)
    assert epsilon_opacus(1.0, 0.01, 1000, 1e-5, "prv") == pytest.approx(1.838, abs=0.02)


def test_figure_6_example_and_the_notebook_comparison():
    eps, delta = bayesian_confidentiality(1.0, 1e-5, 0.1)
    assert eps == pytest.approx(math.log(1 + 0.1 * (math.e - 1)))
    assert eps == pytest.approx(0.159, abs=1e-3) and delta == pytest.approx(1e-6)
    # Proposition 6 on eps = 2; the official notebook's mechanism-level amplification gives ~0.374
    assert bayesian_confidentiality(2.0, 1e-5, 0.1)[0] == pytest.approx(0.494, abs=1e-3)


@given(st.floats(0, 20), st.floats(0, 1), st.floats(0, 1e-3))
def test_redaction_never_weakens_and_perfect_recall_gives_zero(epsilon, gamma, delta):
    b_eps, b_delta = bayesian_confidentiality(epsilon, delta, gamma)
    assert 0.0 <= b_eps <= epsilon + 1e-12 and b_delta <= delta + 1e-18
    assert bayesian_confidentiality(epsilon, delta, 0.0) == (0.0, 0.0)
    assert bayesian_confidentiality(epsilon, delta, 1.0)[0] == pytest.approx(epsilon)


def test_theorem_8_adds_the_conservative_policys_miss_rate_to_delta():
    g = crt_guarantees(2.0, 1e-5, 0.1, unique_secrets=10, delta2=1e-3)
    assert g.bayesian_delta == pytest.approx(0.1 * 1e-5 + 1e-3)
    assert g.group_epsilon == pytest.approx(2.0) and g.group_delta == pytest.approx(1 * math.exp(2.0) * 1e-5)


def test_the_report_has_keys_named_after_the_results():
    r = confidentiality_report(2.0, 1e-5, 0.1, unique_secrets=10, occurrences=200)
    for key in (
        "bayesian_epsilon",
        "bayesian_delta",
        "group_epsilon",
        "dedup_group_epsilon",
        "group_epsilon_without_dedup",
        "theorem8_bayesian_epsilon",
    ):
        assert key in r
    assert r["dedup_group_epsilon"] < r["group_epsilon_without_dedup"]


def test_a_huge_epsilon_gives_the_limit_not_an_overflow():
    """e^ε overflows above ε ≈ 709; the guarantees then follow their limits (issue 25 item 6)."""

    # log(1 + γ(e^ε − 1)) → ε + log γ; continuous across the switch at ε = 700
    assert bayesian_confidentiality(1e300, 1e-5, 0.1)[0] == pytest.approx(1e300)
    below, above = (bayesian_confidentiality(e, 0.0, 0.1)[0] for e in (700.0, 700.0 + 1e-9))
    assert above == pytest.approx(below, abs=1e-8) and below == pytest.approx(700 + math.log(0.1))
    assert bayesian_confidentiality(1e300, 1e-5, 0.0)[0] == 0.0  # nothing missed, nothing leaks
    report = confidentiality_report(1e300, 1e-5, 0.5, unique_secrets=4, occurrences=8)
    assert report["group_delta"] == 1.0 and report["theorem8_group_delta"] == 1.0
