"""CLI: ``lmleak confidentiality`` — the guarantees of paper 002 §3.3 for given (ε, δ, γ)."""

from __future__ import annotations

from typing import Any

import typer

from lmleak.cli.common import JsonOpt, out, print_json
from lmleak.cli.options import takes
from lmleak.render.terminal import table
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
    _print_table(report, settings)
    if settings.plot is not None:
        out.print(f"amplification curve written to {settings.plot}")


def _print_table(report: dict[str, Any], s: ConfidentialitySettings) -> None:
    """The guarantees of the confidentiality report as one table (rows as in paper 002 §3.3)."""
    keys = [
        ("per secret, missed by the policy (Prop. 5)", "per_secret_epsilon_missed", "delta"),
        ("Bayesian, random secret (Prop. 6)", "bayesian_epsilon", "bayesian_delta"),
        (f"group of {s.unique_secrets} unique secrets, {report['group_missed']} missed (Prop. 5)", "group_epsilon",
         "group_delta"),
    ]  # fmt: skip
    if s.occurrences is not None:
        keys.append((f"same group, {s.occurrences} occurrences, no dedup", "group_epsilon_without_dedup",
                     "group_delta_without_dedup"))  # fmt: skip
    keys.append(("CRT Bayesian (Thm. 8.3)", "theorem8_bayesian_epsilon", "theorem8_bayesian_delta"))
    rows = [("per secret, redacted by the policy (Prop. 5)", "0", "0")]
    rows += [(label, f"{report[e]:g}", delta_text(report[d], 4)) for label, e, d in keys]
    title = f"Confidentiality for a ({s.epsilon:g}, {s.delta:g})-DP algorithm and a policy missing {s.gamma:.0%} of secrets"
    out.print(table(title, ("guarantee", "epsilon", "delta"), rows, right=1))
    for note in report.get("notes", []):
        out.print(f"[dim]note: {note}[/]")
