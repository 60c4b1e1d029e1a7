"""(ε, δ) of DP-SGD from its noise multiplier σ, Poisson sample rate q and number of steps.

The training modes read ε from Opacus' accountant as they train; these functions compute the same
numbers offline, and cross-check them with Google's dp-accounting library (an independent
implementation): RDP against dp-accounting's RDP accountant, PRV against its PLD accountant.
Never report Opacus' ``gdp`` accountant: it is too optimistic at these sample rates.

Beside them: the ε of a run whose batches were *shuffled* rather than Poisson-sampled
(:func:`sampler_epsilon`: the Poisson accountant's number does not hold for it, so the bound without
amplification by sampling is reported, the Poisson number beside it with a warning), the exact ε of
the Gaussian mechanism composed T times (:func:`gaussian_epsilon`), and group privacy
(:func:`group_privacy`: what a guarantee per training sequence says about a person with k sequences).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from lmleak.errors import check_number


def _check_inputs(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> None:
    """Refuse what would make an accountant loop or answer nonsense (a NaN σ once ran for minutes)."""
    check_number(noise_multiplier, "noise_multiplier", gt=0)
    check_number(sample_rate, "sample_rate", gt=0, le=1)
    check_number(steps, "steps", ge=0, integer=True)
    check_number(delta, "delta", gt=0, lt=1)


def epsilon_opacus(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    accountant: Literal["prv", "rdp"] = "prv",
) -> float:
    """ε after ``steps`` Poisson-subsampled Gaussian steps, from Opacus' accountant.

    Example:
        >>> round(epsilon_opacus(1.0, 0.01, 1000, 1e-5, "rdp"), 4)
        2.1014
    """
    from opacus.accountants import PRVAccountant, RDPAccountant

    _check_inputs(noise_multiplier, sample_rate, steps, delta)
    acc = PRVAccountant() if accountant == "prv" else RDPAccountant()
    acc.history = [(noise_multiplier, sample_rate, steps)]
    with np.errstate(divide="ignore"):  # PRV takes log(1 - q) = -inf at q = 1 (full batches) and handles it
        return float(acc.get_epsilon(delta))


def epsilon_dp_accounting(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    method: Literal["rdp", "pld"] = "rdp",
) -> float:
    """The same ε from Google's dp-accounting (RDP, or PLD for a tight number)."""
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    _check_inputs(noise_multiplier, sample_rate, steps, delta)
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(sample_rate, dp_event.GaussianDpEvent(noise_multiplier)), steps
    )
    acc = (
        rdp_privacy_accountant.RdpAccountant()
        if method == "rdp"
        else pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    )
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def _phi(x: float) -> float:
    """The standard normal CDF."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def gaussian_epsilon(noise_multiplier: float, compositions: int, delta: float) -> float:
    """The exact ε at ``delta`` of the Gaussian mechanism (sensitivity 1, noise σ) composed
    ``compositions`` times: μ-GDP with μ = √T / σ (Dong, Roth & Su 2019), and
    δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Thm. 8), solved for ε by bisection.
    It is DP-SGD's ε when every unit takes part in every one of T steps (sample rate 1), and the
    bound without amplification by sampling when a unit takes part in T steps of a shuffled run.

    Example:
        >>> round(gaussian_epsilon(1.0, 3, 1e-5), 3)  # dp-accounting's PLD gives 8.385
        8.385
        >>> gaussian_epsilon(0.0, 1, 1e-5)
        inf
    """
    if compositions <= 0:
        return 0.0
    if noise_multiplier <= 0:
        return math.inf
    mu = math.sqrt(compositions) / noise_multiplier

    def excess(eps: float) -> float:
        tail = _phi(-eps / mu - mu / 2)
        return _phi(-eps / mu + mu / 2) - (math.exp(eps) * tail if tail > 0 else 0.0) - delta

    if excess(0.0) <= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while excess(hi) > 0:
        lo, hi = hi, hi * 2
        if hi > 700:  # e^ε overflows: the bound is vacuous at this δ
            return math.inf
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return hi


def sampler_epsilon(
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    sampler: str,
    accountant: Literal["prv", "rdp"] = "prv",
    *,
    poisson_epsilon: float | None = None,
) -> dict[str, Any]:
    """The ε of a DP-SGD run for the sampler it actually used.

    ``poisson``: the accountant's ε (``epsilon``). ``shuffle`` (fixed-size batches from a shuffled
    order, e.g. Opacus with ``poisson_sampling=False``): no accountant here analyses shuffling, and
    the Poisson accountant's ε can understate the truth several-fold (Chua et al. 2024, "How private
    are DP-SGD implementations?"). ``epsilon`` is then the bound that holds for any order — each
    unit is in one batch per epoch, so ``ceil(steps · q)`` compositions of the full Gaussian
    mechanism (:func:`gaussian_epsilon`, no amplification by sampling) — with the Poisson number
    beside it as ``epsilon_poisson_accountant`` and a ``warning``. ``poisson_epsilon``: the Poisson
    accountant's ε when the caller has it already (a training run's own accountant).

    Example:
        >>> r = sampler_epsilon(1.0, 0.01, 1000, 1e-5, "shuffle", accountant="rdp")
        >>> round(r["epsilon"], 2), r["participations"], round(r["epsilon_poisson_accountant"], 2)
        (17.86, 10, 2.1)
    """
    poisson = poisson_epsilon
    if poisson is None:
        poisson = epsilon_opacus(noise_multiplier, sample_rate, steps, delta, accountant) if steps else 0.0
    if sampler == "poisson":
        return {"sampler": "poisson", "epsilon": poisson, "epsilon_accountant": accountant}
    participations = math.ceil(steps * sample_rate - 1e-9) if steps else 0
    bound = gaussian_epsilon(noise_multiplier, participations, delta)
    return {
        "sampler": sampler,
        "epsilon": bound,
        "epsilon_accountant": "gaussian composition without amplification by sampling",
        "participations": participations,
        "epsilon_poisson_accountant": poisson,
        "warning": (
            f"the batches were {sampler}d, not Poisson-sampled: the {accountant} accountant's "
            f"epsilon {poisson:.3g} assumes Poisson sampling and does not hold for this run; "
            f"epsilon {bound:.3g} is the bound without amplification by sampling "
            f"({participations} passes over the data)"
        ),
    }


def noise_for_epsilon(
    target_epsilon: float,
    delta: float,
    sample_rate: float,
    epochs: int,
    sampler: str = "poisson",
    accountant: Literal["prv", "rdp"] = "prv",
) -> float:
    """The noise multiplier σ that gives ``target_epsilon`` after ``epochs`` passes at ``delta``:
    Opacus' ``get_noise_multiplier`` for Poisson sampling (what ``make_private_with_epsilon`` uses);
    for ``shuffle``, the σ whose :func:`gaussian_epsilon` over ``epochs`` compositions is the target
    (the bound :func:`sampler_epsilon` reports for a shuffled run), by bisection.

    Example:
        >>> sigma = noise_for_epsilon(8.0, 1e-5, 0.1, 2, sampler="shuffle")
        >>> round(gaussian_epsilon(sigma, 2, 1e-5), 2)
        8.0
    """
    if sampler == "poisson":
        from opacus.accountants.utils import get_noise_multiplier

        with np.errstate(divide="ignore"):  # as in epsilon_opacus: log(1 - q) at q = 1
            return float(
                get_noise_multiplier(
                    target_epsilon=target_epsilon,
                    target_delta=delta,
                    sample_rate=sample_rate,
                    epochs=epochs,
                    accountant=accountant,
                )
            )
    lo, hi = 1e-3, 1.0
    while gaussian_epsilon(hi, epochs, delta) > target_epsilon:
        lo, hi = hi, hi * 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gaussian_epsilon(mid, epochs, delta) > target_epsilon else (lo, mid)
    return hi


def group_privacy(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(ε_k, δ_k) for a group of ``k`` units of an (ε, δ)-DP mechanism: (kε, k·e^{(k−1)ε}·δ).

    The ε part is Dwork & Roth 2014, Theorem 2.2 (group privacy); the δ part follows from the
    same induction on the distance (Vadhan 2017, "The Complexity of Differential Privacy", Lemma
    2.2, states the slightly looser k·e^{kε}·δ): δ_k = δ·Σ_{j<k} e^{jε} ≤ k·e^{(k−1)ε}·δ. A
    guarantee per training sequence says this much about a person who wrote k sequences. A δ_k of
    1 or more says nothing (returned as computed, inf on overflow).

    Example:
        >>> group_privacy(0.5, 1e-6, 1)
        (0.5, 1e-06)
        >>> eps, delta = group_privacy(0.5, 1e-6, 4)
        >>> eps, round(delta, 10)  # 4 e^1.5 1e-6
        (2.0, 1.79268e-05)
    """
    if k < 1:
        raise ValueError(f"group size {k} must be >= 1")
    try:
        delta_k = k * math.exp((k - 1) * epsilon) * delta
    except OverflowError:
        delta_k = math.inf
    return k * epsilon, delta_k
