"""(ε, δ) of DP-SGD from its noise multiplier σ, Poisson sample rate q and number of steps.

The training modes read ε from Opacus' accountant as they train; these functions compute the same
numbers offline, and cross-check them with Google's dp-accounting library (an independent
implementation): RDP against dp-accounting's RDP accountant, PRV against its PLD accountant.
Never report Opacus' ``gdp`` accountant: it is too optimistic at these sample rates.
"""

from __future__ import annotations

from typing import Literal

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
