"""The f-DP one-run bound (Mahloujifar, Melis & Chaudhuri, "Auditing f-differential privacy in one
run", arXiv:2410.22235, ICML 2025), under a Gaussian-DP trade-off.

The same audit as :mod:`lmleak.attacks.dp_audit`: ``m`` canaries, each included with probability
1/2, one training run, ``r`` non-abstaining guesses of which ``v`` are right. Steinke et al. turn
the counts into an (ε, δ) bound through randomised response; this analysis uses the mechanism's
whole trade-off curve instead, which is tighter from the same guesses.

**The assumption.** The bound tests "the training is μ-GDP" (Dong, Roth & Su 2022): its trade-off
curve between including and excluding one canary is at least the Gaussian one,
``G_μ(α) = Φ(Φ⁻¹(1 - α) - μ)``. That is exact for the Gaussian mechanism and its compositions, and
DP-SGD's subsampled, composed trade-off is close to Gaussian (Dong, Roth & Su's central limit
theorem); for a mechanism of another trade-off shape the number is not a valid bound. Steinke et
al.'s bound (``epsilon_lower_bound``) assumes nothing, and stays the one the claim check uses.
The largest μ the guesses refute, ``μ̂``, is turned into ε at the given δ by the exact μ-GDP to
(ε, δ) relation (Dong, Roth & Su, Corollary 2.13)::

    δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)

so the reported ε is the smallest ε that a μ̂-GDP mechanism satisfies at that δ. At δ = 0 no finite
ε holds for any μ > 0 (a Gaussian trade-off touches the axes only at infinity): the bound is not
given there, and the record says why.

**The test** (the paper's recursive bound, Section 4; derived here in its notation). Let ``C`` be
the number of right guesses, and for ``j = 0..r`` let ``ρ_j`` (``η_j``) be the average over the
canaries of P[the guess on the canary is right (wrong) and C ≥ j]. Summing over canaries,
``ρ_j = E[C; C ≥ j] / m`` and ``η_j = E[r - C; C ≥ j] / m``, so ``ρ_0 + η_0 = r / m`` exactly. If
P[C ≥ v] ≥ τ then ``ρ_v ≥ τ v / m`` and ``η_v ≥ τ (r - v) / m``. Flipping one canary's coin turns a
right guess into a wrong one and lowers C by one, so μ-GDP (and the convexity of the Gaussian
"blow-up") gives ``η_i ≥ Φ(Φ⁻¹(ρ_{i+1}) - μ)``; and ``ρ_i - ρ_{i+1} = i P[C = i] / m`` with
``η_i - η_{i+1} = (r - i) P[C = i] / m`` gives ``ρ_i = ρ_{i+1} + i / (r - i) · (η_i - η_{i+1})``.
Running the smallest values these allow from ``i = v - 1`` down to 0 (``ρ`` capped at 1), if
``ρ_0 + η_0`` comes out above ``r / m`` no μ-GDP mechanism gives ``C ≥ v`` with probability ``τ``:
observing ``v`` rejects μ-GDP at level ``τ = 1 - confidence`` (:func:`gdp_rejected`). The recursion
does not care which way the guesses go, so it covers lmleak's two-sided guesses (r/2 "in", r/2 "out").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lmleak.errors import ConfigError

#: The assumption the f-DP bound rests on, stated in every record that carries the bound.
GDP_ASSUMPTION = (
    "assumes the training's trade-off curve is Gaussian (μ-GDP: exact for the Gaussian mechanism, and "
    "DP-SGD's is close to Gaussian by Dong, Roth & Su's central limit theorem); the largest μ the "
    "guesses refute, turned into ε at δ by the exact μ-GDP to (ε, δ) relation "
    "δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2); not valid for a mechanism of another trade-off shape"
)
#: Why no f-DP bound is given at δ = 0.
DELTA_ZERO_REASON = (
    "not given at δ = 0: a μ-GDP mechanism with μ > 0 is (ε, 0)-DP for no finite ε, so the "
    "Gaussian analysis has no finite ε to report; give a δ > 0 (e.g. --delta 1e-5)"
)
#: The paper the bound comes from.
FDP_PAPER = (
    "Mahloujifar, Melis & Chaudhuri 2024, Auditing f-differential privacy in one run (Gaussian trade-off)"
)


def _phi(x: float) -> float:
    from scipy.special import ndtr

    return float(ndtr(x))


def check_counts(m: int, r: int, v: int) -> None:
    """:class:`ConfigError` unless ``0 <= v <= r <= m`` and ``m >= 1`` (both audits' counts)."""
    if not (0 <= v <= r <= m) or m < 1:
        raise ConfigError(
            f"need 0 <= v <= r <= m and m >= 1, got m={m}, r={r}, v={v}",
            field="m/r/v",
            hint="v correct guesses out of r guesses about m canaries",
        )


def _check_counts(m: int, r: int, v: int, confidence: float) -> None:
    check_counts(m, r, v)
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must lie in (0, 1), got {confidence}", field="confidence")


def gdp_rejected(m: int, r: int, v: int, mu: float, confidence: float = 0.95) -> bool:
    """Whether ``v`` right of ``r`` guesses about ``m`` canaries refute "μ-GDP" at ``confidence``.

    The recursion of the module docstring: start from the least mass ``C ≥ v`` must carry if it
    has probability ``τ = 1 - confidence`` and propagate the Gaussian trade-off down to ``C ≥ 0``;
    refuted when more guesses than ``r`` would be needed.

    Example:
        >>> gdp_rejected(1000, 1000, 900, 0.8), gdp_rejected(1000, 1000, 900, 0.9)
        (True, False)
        >>> gdp_rejected(1000, 1000, 500, 0.0)  # half right: nothing refuted, not even μ = 0
        False
    """
    from scipy.special import ndtri

    _check_counts(m, r, v, confidence)
    tau = 1.0 - confidence
    rho, eta = tau * v / m, tau * (r - v) / m
    for i in range(v - 1, -1, -1):
        eta_new = max(eta, _phi(float(ndtri(rho)) - mu)) if rho < 1.0 else max(eta, _phi(math.inf))
        if eta_new == eta:  # nothing grows from here on: ρ and η stay as they are
            break
        rho = min(rho + i / (r - i) * (eta_new - eta), 1.0)
        eta = eta_new
    return rho + eta > r / m


def mu_lower_bound(m: int, r: int, v: int, confidence: float = 0.95, *, tolerance: float = 1e-7) -> float:
    """The largest μ that :func:`gdp_rejected` refutes (0 when not even μ = 0 is refuted).

    Refuting is monotone in μ (a larger μ forces less probability from right guesses onto wrong ones),
    so bisection on a bracket doubled until μ is no longer refuted.

    Example:
        >>> round(mu_lower_bound(1000, 1000, 900), 4)
        0.8804
        >>> mu_lower_bound(1000, 100, 50)
        0.0
    """
    _check_counts(m, r, v, confidence)
    if r == 0 or not gdp_rejected(m, r, v, 0.0, confidence):
        return 0.0
    lo, hi = 0.0, 1.0
    while gdp_rejected(m, r, v, hi, confidence):
        lo, hi = hi, 2.0 * hi
        if hi > 1e3:  # Φ(Φ⁻¹(x) - μ) is 0 in floating point long before: cannot happen
            return lo
    while hi - lo > tolerance:
        mid = 0.5 * (lo + hi)
        if gdp_rejected(m, r, v, mid, confidence):
            lo = mid
        else:
            hi = mid
    return lo


def gdp_delta(epsilon: float, mu: float) -> float:
    """δ(ε) of a μ-GDP mechanism: ``Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` (Dong, Roth & Su, Cor. 2.13),
    computed in logs so that large ε do not overflow.

    Example:
        >>> round(gdp_delta(0.0, 1.0), 6)  # 2 Φ(1/2) - 1
        0.382925
        >>> gdp_delta(1.0, 0.0)
        0.0
    """
    from scipy.special import log_ndtr

    if mu <= 0.0:
        return 0.0
    a = float(log_ndtr(-epsilon / mu + mu / 2))
    b = epsilon + float(log_ndtr(-epsilon / mu - mu / 2))
    if b >= a:
        return 0.0
    return math.exp(a + math.log1p(-math.exp(b - a)))


def gdp_epsilon(mu: float, delta: float, *, tolerance: float = 1e-9) -> float:
    """The smallest ε with ``δ(ε) <= delta`` for a μ-GDP mechanism (:func:`gdp_delta` decreases in
    ε): 0 when ``delta >= δ(0) = 2Φ(μ/2) - 1`` or ``mu = 0``; infinite at ``delta = 0``, ``mu > 0``.

    Example:
        >>> round(gdp_epsilon(1.0, 1e-5), 4)
        4.3772
        >>> gdp_epsilon(0.5, 0.5), gdp_epsilon(1.0, 0.0)
        (0.0, inf)
    """
    from scipy.optimize import brentq

    if not 0.0 <= delta <= 1.0:
        raise ConfigError(f"delta must lie in [0, 1], got {delta}", field="delta")
    if mu <= 0.0 or gdp_delta(0.0, mu) <= delta:
        return 0.0
    if delta == 0.0:
        return math.inf
    hi = 1.0
    while gdp_delta(hi, mu) > delta:
        hi *= 2.0
    return float(brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, hi, xtol=tolerance))


@dataclass(frozen=True)
class FDPBound:
    """The f-DP one-run bound: ``mu_lower_bound`` and, at ``delta > 0``, ``epsilon_lower_bound_fdp``
    (None at δ = 0, with ``reason``)."""

    mu_lower_bound: float
    epsilon_lower_bound_fdp: float | None
    reason: str | None = None


def fdp_bound(m: int, r: int, v: int, delta: float, confidence: float = 0.95) -> FDPBound:
    """μ̂ (:func:`mu_lower_bound`) and its ε at ``delta`` (:func:`gdp_epsilon`); at δ = 0 the ε is
    None and ``reason`` is :data:`DELTA_ZERO_REASON`.

    Example (900 of 1,000 right; Steinke et al.'s bound from the same counts is 2.02):
        >>> b = fdp_bound(1000, 1000, 900, 1e-5)
        >>> round(b.mu_lower_bound, 3), round(b.epsilon_lower_bound_fdp, 2)
        (0.88, 3.78)
        >>> fdp_bound(1000, 1000, 900, 0.0).epsilon_lower_bound_fdp is None
        True
    """
    if not 0.0 <= delta <= 1.0:
        raise ConfigError(f"delta must lie in [0, 1], got {delta}", field="delta")
    mu = mu_lower_bound(m, r, v, confidence)
    if delta == 0.0:
        return FDPBound(mu, None, DELTA_ZERO_REASON)
    return FDPBound(mu, gdp_epsilon(mu, delta))
