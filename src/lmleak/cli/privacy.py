"""CLI: ``lmleak confidentiality`` — the guarantees of paper 002 §3.3 for given (ε, δ, γ)."""

from __future__ import annotations

from typing import Any

import typer

from lmleak.cli.common import JsonOpt, out, print_json
from lmleak.cli.options import takes
from lmleak.train.confidentiality import delta_text
from lmleak.train.guarantees import ConfidentialitySettings, confidentiality_guarantees


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("confidentiality")(confidentiality)


@takes(settings=ConfidentialitySettings)
def confidentiality(settings: ConfidentialitySettings, json_out: JsonOpt = False) -> None:
    """Confidentiality under redaction, dedup and CRT: Propositions 5-7 and Theorem 8 of paper 002.

    Example: lmleak confidentiality --epsilon 3 --gamma 0.1
    """
    report = confidentiality_guarantees(settings)
    if json_out:
        print_json(report)
        return
    s = settings
    _print_table(report, s.epsilon, s.delta, s.gamma, s.unique_secrets, s.occurrences)
    if s.plot is not None:
        out.print(f"amplification curve written to {s.plot}")


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
        (
            f"group of {unique_secrets} unique secrets, {report['group_missed']} missed (Prop. 5)",
            "group_epsilon",
            "group_delta",
        ),
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
        t.add_row(label, f"{report[eps_key]:g}", delta_text(report[delta_key], 4))
    out.print(t)
    for note in report.get("notes", []):
        out.print(f"[dim]note: {note}[/]")
