"""The f-DP one-run bound (Mahloujifar, Melis & Chaudhuri 2024) under a Gaussian trade-off: the
issue's numbers, closed forms at the limits, the GDP to (ε, δ) conversion against a numerical
integral, validity on a truly μ-GDP mechanism, and jax-privacy when it is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from lmleak.attacks.dp_audit import audit_scores, bound_from_counts, epsilon_lower_bound
from lmleak.attacks.fdp_audit import (
    DELTA_ZERO_REASON,
    fdp_bound,
    gdp_delta,
    gdp_epsilon,
    gdp_rejected,
    mu_lower_bound,
)
from lmleak.errors import ConfigError

# ------------------------------------------------------------------------------- worked numbers

#: (m canaries, r guesses, v right, δ) -> (Steinke et al.'s ε, the f-DP ε), both at 95 %. The f-DP
#: values are those jax-privacy's auditing.py (`_epsilon_one_run_fdp`, the paper's authors'
#: conventions; commit 8967688) gave for the same counts, to its brentq tolerance of 1e-6.
WORKED = {
    (1000, 1000, 900, 1e-5): (2.020646, 3.7793386),  # issue 35: 900 of 1,000 right, 2.02 -> 3.78
    (50, 20, 20, 1e-2): (0.0, 1.9189488),  # issue 35: 20 guesses about 50 canaries, all right, 0 -> 1.92
    (1000, 500, 450, 1e-5): (1.946012, 3.387665),
    (256, 128, 95, 1e-5): (0.711341, 1.3409574),
    (64, 64, 43, 1e-5): (0.252576, 0.5592139),
    (1000, 100, 80, 1e-5): (0.955319, 1.4022147),
    (100, 100, 100, 1e-6): (3.492691, 9.0708917),
    (1000, 1000, 1000, 1e-5): (5.782283, 12.3345702),
    (500, 200, 130, 1e-3): (0.282868, 0.3915359),
}


@pytest.mark.parametrize(("counts", "expected"), list(WORKED.items()))
def test_the_worked_numbers(counts, expected):
    m, r, v, delta = counts
    steinke, fdp = expected
    assert epsilon_lower_bound(m, r, v, delta) == pytest.approx(steinke, abs=2e-6)
    assert fdp_bound(m, r, v, delta).epsilon_lower_bound_fdp == pytest.approx(fdp, abs=2e-6)


def test_the_f_dp_bound_certifies_more_than_steinke_from_the_same_guesses():
    ratios = [f / s for (s, f) in WORKED.values() if s > 0]
    assert min(ratios) > 1.0
    steinke, fdp = WORKED[(1000, 1000, 1000, 1e-5)]
    assert fdp / steinke == pytest.approx(2.13, abs=0.01)  # the top ratio: all 1,000 right


# ------------------------------------------------------------------------------ closed forms, limits


@pytest.mark.parametrize(("m", "r"), [(10, 10), (100, 50), (1000, 1000), (1000, 20)])
def test_half_right_or_less_refutes_nothing(m, r):
    for v in range(0, r // 2 + 1, max(1, r // 10)):
        assert mu_lower_bound(m, r, v) == 0.0
        assert fdp_bound(m, r, v, 1e-5).epsilon_lower_bound_fdp == 0.0


def test_monotone_in_the_right_guesses_and_in_delta():
    mus = [mu_lower_bound(500, 200, v) for v in range(100, 201, 10)]
    assert all(a <= b for a, b in zip(mus, mus[1:], strict=False)) and mus[-1] > mus[0]
    epss = [fdp_bound(500, 200, 170, d).epsilon_lower_bound_fdp for d in (1e-8, 1e-5, 1e-3, 1e-1)]
    assert all(a > b for a, b in zip(epss, epss[1:], strict=False))


@pytest.mark.parametrize("confidence", [0.1, 0.2, 0.3, 0.45])
def test_one_right_guess_about_one_canary_is_the_closed_form(confidence):
    # ρ = τ, η = Φ(Φ⁻¹(τ) - μ) > 1 - τ  <=>  μ < 2 Φ⁻¹(τ), τ = 1 - confidence
    assert mu_lower_bound(1, 1, 1, confidence) == pytest.approx(2 * norm.ppf(1 - confidence), abs=1e-6)


def test_at_95_percent_one_guess_refutes_nothing():
    assert mu_lower_bound(1, 1, 1) == 0.0  # 2 Φ⁻¹(0.05) < 0


def test_refuting_is_monotone_in_mu_and_the_bound_is_its_edge():
    mu = mu_lower_bound(1000, 1000, 900)
    assert gdp_rejected(1000, 1000, 900, mu - 1e-4) and not gdp_rejected(1000, 1000, 900, mu + 1e-4)


def test_at_delta_zero_the_bound_is_not_given_and_says_why():
    b = fdp_bound(1000, 1000, 900, 0.0)
    assert b.epsilon_lower_bound_fdp is None and b.reason == DELTA_ZERO_REASON
    assert b.mu_lower_bound > 0  # μ̂ needs no δ
    c = bound_from_counts(1000, 1000, 900, 0.0)
    assert c.epsilon_lower_bound_fdp is None and "δ = 0" in c.fdp_note
    assert c.epsilon_lower_bound == pytest.approx(2.0212, abs=1e-4)


def test_bad_counts_are_refused():
    with pytest.raises(ConfigError, match="v <= r <= m"):
        fdp_bound(10, 20, 5, 1e-5)
    with pytest.raises(ConfigError, match="delta"):
        fdp_bound(10, 10, 5, 2.0)


# --------------------------------------------------------------------------- GDP -> (ε, δ)


def _delta_by_integral(eps: float, mu: float) -> float:
    """δ(ε) = E_P[(1 - e^(ε - L))_+] with the privacy loss L ~ N(μ²/2, μ²) under P: the definition,
    integrated numerically (the slow obvious oracle of the closed form)."""
    f = lambda x: max(0.0, 1.0 - math.exp(eps - x)) * norm.pdf(x, mu * mu / 2, mu)  # noqa: E731
    lo, hi = mu * mu / 2 - 12 * mu, mu * mu / 2 + 12 * mu
    return integrate.quad(f, max(lo, eps), hi, limit=200, epsabs=1e-14)[0]


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("eps", [0.0, 0.5, 2.0, 5.0])
def test_gdp_delta_is_the_privacy_loss_integral(mu, eps):
    assert gdp_delta(eps, mu) == pytest.approx(_delta_by_integral(eps, mu), rel=1e-6, abs=1e-13)


@pytest.mark.parametrize("mu", [0.2, 0.88, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 1e-2])
def test_gdp_epsilon_inverts_gdp_delta(mu, delta):
    eps = gdp_epsilon(mu, delta)
    if eps == 0.0:
        assert gdp_delta(0.0, mu) <= delta
    else:
        assert gdp_delta(eps, mu) == pytest.approx(delta, rel=1e-6)


def test_gdp_limits():
    assert gdp_delta(0.0, 1.0) == pytest.approx(2 * norm.cdf(0.5) - 1, abs=1e-15)
    assert gdp_epsilon(0.0, 1e-5) == 0.0
    assert gdp_epsilon(1.0, 0.0) == math.inf
    assert gdp_epsilon(1.0, 0.9) == 0.0  # δ above δ(0) = 0.383


# ----------------------------------------------------------------------------- validity


def test_a_truly_gaussian_mechanism_is_refuted_no_more_often_than_the_confidence_allows():
    # each canary's score is μ S_i + N(0, 1): exactly μ-GDP per canary. μ̂ >= μ (a false refutation)
    # may happen in at most 5 % of audits; the audit must also find most of μ on average.
    mu, m, r, runs = 1.0, 200, 100, 150
    rng = np.random.default_rng(3)
    false, found = 0, []
    for _ in range(runs):
        included = rng.random(m) < 0.5
        scores = mu * included + rng.normal(size=m)
        rec = audit_scores(scores, included, r=r, delta=1e-5)
        false += rec["mu_lower_bound"] >= mu
        found.append(rec["mu_lower_bound"])
    assert false / runs <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / runs)
    assert np.mean(found) > 0.1


def test_the_record_carries_the_f_dp_bound_and_its_assumption():
    scores = np.arange(100.0)
    included = scores >= 50
    rec = audit_scores(scores, included, r=100, delta=1e-5)
    assert rec["v"] == 100
    assert rec["epsilon_lower_bound_fdp"] == fdp_bound(100, 100, 100, 1e-5).epsilon_lower_bound_fdp
    assert rec["epsilon_lower_bound_fdp"] > rec["epsilon_lower_bound"]
    assert "Gaussian" in rec["fdp_assumption"] and "Mahloujifar" in rec["fdp_theorem"]
    assert audit_scores(scores, included, r=100, delta=0.0)["epsilon_lower_bound_fdp"] is None


# ------------------------------------------------------------------------------- jax-privacy


@pytest.mark.slow
def test_equals_jax_privacy_when_installed():
    auditing = pytest.importorskip("jax_privacy.auditing")
    for (m, r, v, delta), _ in WORKED.items():
        # scores whose threshold-1 guesses are exactly r "in" guesses with v right, about m canaries
        n_in = max(v, m // 2)
        in_scores = [1.0] * v + [0.0] * (n_in - v)
        out_scores = [1.0] * (r - v) + [0.0] * (m - n_in - (r - v))
        if len(out_scores) < 1 or m - n_in < r - v:
            continue
        auditor = auditing.CanaryScoreAuditor(in_scores, out_scores)
        theirs = auditor.epsilon_one_run_fdp(0.05, delta, threshold_strategy=auditing.Explicit(1.0))
        assert fdp_bound(m, r, v, delta).epsilon_lower_bound_fdp == pytest.approx(theirs, abs=2e-6)
