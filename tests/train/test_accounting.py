"""DP-SGD accounting against closed forms: with sample rate q = 1 every step is the full Gaussian
mechanism, so T steps of noise σ are one Gaussian mechanism with μ = √T / σ (Dong, Roth & Su 2019).

Cross-checks against Google's dp-accounting for q < 1 are in tests/train/test_confidentiality.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from lmleak.train.accounting import epsilon_dp_accounting, epsilon_opacus

# Opacus' RDPAccountant.DEFAULT_ALPHAS, written out: the grid the conversion minimises over
ALPHAS = np.array([1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)), dtype=np.float64)


def _rdp_epsilon(sigma: float, steps: int, delta: float) -> float:
    """RDP of the Gaussian mechanism, α·T/(2σ²), converted to (ε, δ) by Balle et al. 2020 (Thm. 21)."""
    rdp = ALPHAS * steps / (2 * sigma**2)
    eps = rdp - (math.log(delta) + np.log(ALPHAS)) / (ALPHAS - 1) + np.log((ALPHAS - 1) / ALPHAS)
    return float(eps.min())


def _gaussian_epsilon(sigma: float, steps: int, delta: float) -> float:
    """The exact ε of a μ-GDP mechanism at δ (Balle & Wang 2018, Thm. 8), by root finding."""
    mu = math.sqrt(steps) / sigma

    def delta_of(eps: float) -> float:
        return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) - delta

    return brentq(delta_of, 0.0, 100.0)


@pytest.mark.parametrize("sigma,steps", [(1.0, 1), (2.0, 10), (4.0, 100)])
def test_rdp_equals_the_closed_form_gaussian_rdp(sigma, steps):
    assert epsilon_opacus(sigma, 1.0, steps, 1e-5, "rdp") == pytest.approx(_rdp_epsilon(sigma, steps, 1e-5))


@pytest.mark.parametrize("sigma,steps", [(1.0, 1), (2.0, 10), (4.0, 100)])
def test_prv_and_pld_equal_the_exact_gaussian_epsilon_and_rdp_is_an_upper_bound(sigma, steps):
    exact = _gaussian_epsilon(sigma, steps, 1e-5)
    assert epsilon_opacus(sigma, 1.0, steps, 1e-5, "prv") == pytest.approx(exact, abs=0.02)
    assert epsilon_dp_accounting(sigma, 1.0, steps, 1e-5, "pld") == pytest.approx(exact, abs=0.02)
    assert epsilon_opacus(sigma, 1.0, steps, 1e-5, "rdp") >= exact


def test_epsilon_grows_with_steps_and_sample_rate_and_falls_with_noise():
    base = epsilon_opacus(1.0, 0.01, 500, 1e-5, "rdp")
    assert epsilon_opacus(1.0, 0.01, 1000, 1e-5, "rdp") > base
    assert epsilon_opacus(1.0, 0.02, 500, 1e-5, "rdp") > base
    assert epsilon_opacus(2.0, 0.01, 500, 1e-5, "rdp") < base


def test_full_batches_give_their_epsilon_without_numpys_divide_by_zero_warning():
    """At q = 1 Opacus' PRV takes log(1 - q) = -inf and handles it, but numpy printed 'divide by zero
    encountered in log' into every DP run with full batches (and 46 warnings into the test log)."""
    import warnings

    from lmleak.train.accounting import epsilon_opacus, gaussian_epsilon, noise_for_epsilon

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        eps = epsilon_opacus(2.0, 1.0, 10, 1e-5, "prv")
        sigma = noise_for_epsilon(8.0, 1e-5, 1.0, 2)
    assert eps == pytest.approx(gaussian_epsilon(2.0, 10, 1e-5), rel=1e-2)  # q = 1: no amplification
    assert sigma > 0
