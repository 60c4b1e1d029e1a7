"""The work behind ``lmleak confidentiality`` (paper 002 §3.3): the guarantees of
:func:`~lmleak.train.confidentiality.confidentiality_report` rounded once for the JSON and the table,
and the amplification curve of Fig. 6."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.errors import ConfigError
from lmleak.figures import pyplot, save_figure
from lmleak.settings import Settings, setting
from lmleak.train.confidentiality import bayesian_confidentiality, confidentiality_report


def significant(value: object, digits: int = 4) -> object:
    """A float rounded to ``digits`` significant digits (other values unchanged); inf and 0 stay.

    Example:
        >>> significant(1.0000000000000002e-06), significant(0.4940287080441788), significant("x")
        (1e-06, 0.494, 'x')
    """
    if not isinstance(value, float) or value == 0 or value != value or value in (float("inf"), float("-inf")):
        return value
    return float(f"{value:.{digits}g}")


def plot_amplification(epsilon: float, path: str | Path) -> Path:
    """Bayesian confidentiality ε against the policy's miss rate γ (paper 002 Fig. 6), for ε' in
    {0.5, 1, 2, 4} and ``epsilon``, written as a PNG to ``path``."""
    # lazy: numpy, which `lmleak --help` (this module is imported by the CLI) must not pay for
    import numpy as np

    gammas = np.linspace(0, 1, 101)
    fig, ax = pyplot().subplots(figsize=(5.5, 3.8))
    for eps in sorted({0.5, 1.0, 2.0, 4.0, float(epsilon)}):
        ax.plot(gammas, [bayesian_confidentiality(eps, 0.0, g)[0] for g in gammas], label=f"ε' = {eps:g}")
    ax.set_xlabel("γ (policy miss rate, 1 − recall)")
    ax.set_ylabel("Bayesian confidentiality ε")
    ax.set_title("Confidentiality amplification by redaction (Prop. 6)")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    return Path(path)


def confidentiality_notes(report: dict[str, Any]) -> list[str]:
    """The assumptions behind a :func:`~lmleak.train.confidentiality.confidentiality_report`, one
    sentence each: how many of the group's secrets are charged, and δ₂ when it was assumed.

    Example:
        >>> from lmleak.train.confidentiality import confidentiality_report
        >>> notes = confidentiality_notes(confidentiality_report(1.0, 1e-5, 0.1, unique_secrets=5))
        >>> notes[0][:42], notes[1][:30]
        ('group bounds charge 2 missed secrets of 5:', 'Theorem 8.3 assumes delta2 = 0')
    """
    q = report["group_quantile"]
    which = (
        "the worst case"
        if q >= 1.0
        else f"the {q:.0%} quantile of Binomial({report['unique_secrets']}, gamma)"
    )
    notes = [
        f"group bounds charge {report['group_missed']} missed secrets of {report['unique_secrets']}: "
        f"{which}, each secret missed independently with probability gamma; the chance that more are "
        f"missed ({report['group_missed_tail']:.3g}) is added to delta"
    ]
    if not report.get("theorem8_delta2_assumed") and report.get("theorem8_delta2_basis") not in (
        None,
        "given",
    ):
        notes.append(
            f"Theorem 8.3's delta2 = {report['theorem8_delta2']:.3g}: {report['theorem8_delta2_basis']}"
        )
    if report.get("theorem8_delta2_assumed"):
        notes.append(
            "Theorem 8.3 assumes delta2 = 0: the conservative policy pi_c catches every secret pi misses. "
            "Measure it (the misses of `lmleak pii evaluate --policy conservative --secrets ...`, 1 - "
            "sentence_recall) and pass --delta2-misses K --delta2-secrets N (their 95% upper bound is used)"
        )
    return notes


@dataclass(frozen=True)
class ConfidentialitySettings(Settings):
    """The inputs of the guarantees, declared once (``lmleak confidentiality``'s options are
    generated from these fields)."""

    epsilon: float = setting(help="DP epsilon of the (private part of) training.", ge=0)
    delta: float = setting(1e-5, help="DP delta.", ge=0, lt=1)
    gamma: float = setting(0.1, help="The redaction policy's miss rate, 1 - recall.", ge=0, le=1)
    unique_secrets: int = setting(1, help="Unique secrets in a group (Prop. 5 group, Thm. 8.2).", ge=1)
    occurrences: int | None = setting(None, help="Occurrences of those secrets before dedup (Prop. 7).", ge=1)
    delta2: float | None = setting(
        None,
        help="The conservative policy's miss rate (Thm. 8.3); left out, 0 is assumed and said so.",
        ge=0,
        le=1,
    )
    delta2_misses: int | None = setting(
        None,
        help="Secrets the conservative policy missed (with --delta2-secrets): delta2 is their 95% upper bound.",
        ge=0,
    )
    delta2_secrets: int | None = setting(
        None, help="Secrets the conservative policy's misses were counted on (with --delta2-misses).", ge=1
    )
    quantile: float = setting(
        0.95,
        help="Group bounds charge the secrets missed at this quantile of Binomial(m, gamma); 1 = worst case.",
        ge=0,
        le=1,
    )
    plot: Path | None = setting(
        None, help="Write the amplification curve (eps_conf vs gamma, paper Fig. 6) as a PNG."
    )


def confidentiality_guarantees(settings: ConfidentialitySettings) -> dict[str, Any]:
    """:func:`~lmleak.train.confidentiality.confidentiality_report`, every value rounded to 4
    significant digits (1.0000000000000002e-06 is 1e-06); with ``plot``, the Fig. 6 curve is written
    there and its path added as ``plot``. ``delta2`` None (and no ``delta2_misses`` of
    ``delta2_secrets`` to bound it from): Theorem 8.3 with the assumption δ₂ = 0, stated in
    ``notes``; group bounds count the secrets missed at ``quantile`` and the tail beyond it.

    Raises:
        ConfigError: a value out of range (field ``epsilon/delta/gamma``).

    Example:
        >>> r = confidentiality_guarantees(ConfidentialitySettings(1.0, 1e-5, 0.1))
        >>> r["bayesian_delta"], r["recall"]
        (1e-06, 0.9)
    """
    s = settings
    epsilon, delta, gamma, plot = s.epsilon, s.delta, s.gamma, s.plot
    try:
        report = confidentiality_report(
            epsilon,
            delta,
            gamma,
            unique_secrets=s.unique_secrets,
            occurrences=s.occurrences,
            delta2=s.delta2,
            quantile=s.quantile,
            delta2_misses=s.delta2_misses,
            delta2_secrets=s.delta2_secrets,
        )
    except ValueError as e:
        raise ConfigError(str(e), field="epsilon/delta/gamma/quantile/delta2") from None
    rounded: dict[str, Any] = {k: significant(v) for k, v in report.items()}
    rounded["notes"] = confidentiality_notes(report)
    if plot is not None:
        plot_amplification(epsilon, plot)
        rounded["plot"] = str(plot)
    return rounded
