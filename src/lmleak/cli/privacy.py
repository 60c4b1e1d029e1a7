"""CLI: ``lmleak confidentiality`` — the guarantees of paper 002 §3.3 for given (ε, δ, γ)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import JsonOpt, out, print_json
from lmleak.errors import ConfigError
from lmleak.figures import pyplot, save_figure
from lmleak.train.confidentiality import bayesian_confidentiality, confidentiality_report


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("confidentiality")(confidentiality)


def confidentiality(
    epsilon: Annotated[float, typer.Option(help="DP epsilon of the (private part of) training.")],
    delta: Annotated[float, typer.Option(help="DP delta.")] = 1e-5,
    gamma: Annotated[float, typer.Option(help="The redaction policy's miss rate, 1 - recall.")] = 0.1,
    unique_secrets: Annotated[
        int, typer.Option(help="Unique secrets in a group (Prop. 5 group, Thm. 8.2).")
    ] = 1,
    occurrences: Annotated[
        int | None, typer.Option(help="Occurrences of those secrets before dedup (Prop. 7).")
    ] = None,
    delta2: Annotated[float, typer.Option(help="The conservative policy's miss rate (Thm. 8.3).")] = 0.0,
    plot: Annotated[
        Path | None,
        typer.Option(help="Write the amplification curve (eps_conf vs gamma, paper Fig. 6) as a PNG."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Confidentiality under redaction, dedup and CRT: Propositions 5-7 and Theorem 8 of paper 002."""
    try:
        report = confidentiality_report(
            epsilon, delta, gamma, unique_secrets=unique_secrets, occurrences=occurrences, delta2=delta2
        )
    except ValueError as e:
        raise ConfigError(str(e), field="epsilon/delta/gamma") from None
    # one rounding for the JSON and the table: 4 significant digits (1.0000000000000002e-06 is 1e-06)
    report = {k: significant(v) for k, v in report.items()}  # type: ignore[misc]
    if plot is not None:
        _plot(epsilon, plot)
        report["plot"] = str(plot)  # type: ignore[assignment]
    if json_out:
        print_json(report)
        return
    _print_table(report, epsilon, delta, gamma, unique_secrets, occurrences)
    if plot is not None:
        out.print(f"amplification curve written to {plot}")


def _print_table(
    report: dict[str, Any],
    epsilon: float,
    delta: float,
    gamma: float,
    unique_secrets: int,
    occurrences: int | None,
) -> None:
    """The guarantees of the confidentiality report as one table (rows as in paper 002 §3.3)."""
    from rich.table import Table

    t = Table(
        title=f"Confidentiality for a ({epsilon:g}, {delta:g})-DP algorithm and a policy missing {gamma:.0%} of secrets"
    )
    t.add_column("guarantee")
    t.add_column("epsilon", justify="right")
    t.add_column("delta", justify="right")
    t.add_row("per secret, redacted by the policy (Prop. 5)", "0", "0")
    rows = [
        ("per secret, missed by the policy (Prop. 5)", "per_secret_epsilon_missed", "delta"),
        ("Bayesian, random secret (Prop. 6)", "bayesian_epsilon", "bayesian_delta"),
        (f"group of {unique_secrets} unique secrets (Prop. 5)", "group_epsilon", "group_delta"),
    ]
    if occurrences is not None:
        rows.append(
            (
                f"same group, {occurrences} occurrences, no dedup",
                "group_epsilon_without_dedup",
                "group_delta_without_dedup",
            )
        )
    rows.append(("CRT Bayesian (Thm. 8.3)", "theorem8_bayesian_epsilon", "theorem8_bayesian_delta"))
    for label, eps_key, delta_key in rows:
        t.add_row(label, f"{report[eps_key]:g}", f"{report[delta_key]:g}")
    out.print(t)


def significant(value: object, digits: int = 4) -> object:
    """A float rounded to ``digits`` significant digits (other values unchanged); inf and 0 stay.

    Example:
        >>> significant(1.0000000000000002e-06), significant(0.4940287080441788), significant("x")
        (1e-06, 0.494, 'x')
    """
    if not isinstance(value, float) or value == 0 or value != value or value in (float("inf"), float("-inf")):
        return value
    return float(f"{value:.{digits}g}")


def _plot(epsilon: float, path: Path) -> None:
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
