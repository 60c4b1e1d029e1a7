"""CLI: ``lmleak confidentiality`` — the guarantees of paper 002 §3.3 for given (ε, δ, γ)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import COUNT, COUNT0, NON_NEGATIVE, PROBABILITY, JsonOpt, number, out, print_json
from lmleak.train.confidentiality import delta_text
from lmleak.train.guarantees import confidentiality_guarantees


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("confidentiality")(confidentiality)


# long: one typer option per input of the guarantees (epsilon, delta, gamma, group, dedup, delta2, quantile)
def confidentiality(
    epsilon: Annotated[
        float, typer.Option(help="DP epsilon of the (private part of) training.", parser=NON_NEGATIVE)
    ],
    delta: Annotated[float, typer.Option(help="DP delta.", parser=number(ge=0, lt=1))] = 1e-5,
    gamma: Annotated[
        float, typer.Option(help="The redaction policy's miss rate, 1 - recall.", parser=PROBABILITY)
    ] = 0.1,
    unique_secrets: Annotated[
        int, typer.Option(help="Unique secrets in a group (Prop. 5 group, Thm. 8.2).", parser=COUNT)
    ] = 1,
    occurrences: Annotated[
        int | None, typer.Option(help="Occurrences of those secrets before dedup (Prop. 7).", parser=COUNT)
    ] = None,
    delta2: Annotated[
        float | None,
        typer.Option(
            help="The conservative policy's miss rate (Thm. 8.3); left out, 0 is assumed and said so.",
            parser=PROBABILITY,
        ),
    ] = None,
    delta2_misses: Annotated[
        int | None,
        typer.Option(
            help="Secrets the conservative policy missed (with --delta2-secrets): delta2 is their 95% upper bound.",
            parser=COUNT0,
        ),
    ] = None,
    delta2_secrets: Annotated[
        int | None,
        typer.Option(
            help="Secrets the conservative policy's misses were counted on (with --delta2-misses).",
            parser=COUNT,
        ),
    ] = None,
    quantile: Annotated[
        float,
        typer.Option(
            help="Group bounds charge the secrets missed at this quantile of Binomial(m, gamma); 1 = worst case.",
            parser=PROBABILITY,
        ),
    ] = 0.95,
    plot: Annotated[
        Path | None,
        typer.Option(help="Write the amplification curve (eps_conf vs gamma, paper Fig. 6) as a PNG."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Confidentiality under redaction, dedup and CRT: Propositions 5-7 and Theorem 8 of paper 002.

    Example: lmleak confidentiality --epsilon 3 --gamma 0.1
    """
    report = confidentiality_guarantees(epsilon, delta, gamma, unique_secrets=unique_secrets,
                                        occurrences=occurrences, delta2=delta2, quantile=quantile,
                                        plot=plot, delta2_misses=delta2_misses,
                                        delta2_secrets=delta2_secrets)  # fmt: skip
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
