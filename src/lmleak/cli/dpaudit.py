"""CLI: ``lmleak dp-audit bound``, ``plan`` and ``run`` (Steinke, Nasr & Jagielski 2023)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.attacks.dp_audit import DPAuditSettings
from lmleak.audit.dp_audit import DPAuditTraining, run_dp_audit_with_report
from lmleak.cli.common import (
    COUNT,
    COUNT0,
    OPEN_UNIT,
    POSITIVE,
    PROBABILITY,
    RedactRun,
    hide_ids_when_redacted,
    number,
    out,
    print_json,
    quiet,
)
from lmleak.cli.options import takes
from lmleak.words import plural


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    group = typer.Typer(
        help="One-run DP auditing: an empirical lower bound on epsilon (Steinke et al. 2023).\n\n"
        "Example: lmleak dp-audit plan --m 1000",
        no_args_is_help=True,
    )
    group.command("bound")(bound)
    group.command("plan")(plan)
    group.command("run")(run)
    app.add_typer(group, name="dp-audit")


def bound(
    m: Annotated[
        int, typer.Option("--m", help="Canaries, each included with probability 1/2.", parser=COUNT)
    ],
    r: Annotated[int, typer.Option("--r", help="Guesses made (the rest abstain).", parser=COUNT0)],
    v: Annotated[int, typer.Option("--v", help="Correct guesses.", parser=COUNT0)],
    delta: Annotated[
        float,
        typer.Option(
            "--delta", help="The delta of the (epsilon, delta)-DP claim tested.", parser=PROBABILITY
        ),
    ] = 0.0,
    confidence: Annotated[
        float, typer.Option("--confidence", help="Confidence of the lower bound.", parser=OPEN_UNIT)
    ] = 0.95,
    json_out: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """The epsilon lower bound for v correct of r guesses about m canaries (Theorem 3, exact tails).

    Example: lmleak dp-audit bound --m 1000 --r 100 --v 95
    """
    from lmleak.attacks.dp_audit import bound_from_counts  # lazy: numpy

    bound = bound_from_counts(m, r, v, delta, confidence)
    if json_out:
        print_json(asdict(bound))
        return
    out.print(f"epsilon_lower_bound: {bound.epsilon_lower_bound:.6g}")
    print_fdp(bound.epsilon_lower_bound_fdp, bound.mu_lower_bound, bound.fdp_note)


def print_fdp(eps: float | None, mu: float | None, note: str | None) -> None:
    """The f-DP line: the bound and μ̂ under its Gaussian assumption, or why it is not given."""
    if eps is None:
        out.print(f"epsilon_lower_bound_fdp: {note or 'not given'}")
        return
    out.print(
        f"epsilon_lower_bound_fdp: {eps:.6g} (mu-GDP refuted up to mu = {mu:.4g}; assumes a Gaussian "
        "trade-off, which DP-SGD's is close to: Mahloujifar, Melis & Chaudhuri 2024)"
    )


def plan(
    m: Annotated[
        int, typer.Option("--m", help="Canaries, each included with probability 1/2.", parser=COUNT)
    ],
    precision: Annotated[
        list[float] | None,
        typer.Option(
            "--precision",
            help="Share of guesses right (repeat for several; default 1, .99, .95, .9, .8, .7, .6).",
            parser=PROBABILITY,
        ),
    ] = None,
    r: Annotated[
        int | None,
        typer.Option("--r", help="Guesses made (default m/2, as dp-audit run guesses).", parser=COUNT),
    ] = None,
    delta: Annotated[
        float,
        typer.Option(
            "--delta",
            help="The delta of the (epsilon, delta)-DP claim tested.",
            parser=number(ge=0, lt=1),
        ),
    ] = 0.0,
    confidence: Annotated[
        float, typer.Option("--confidence", help="Confidence of the lower bound.", parser=OPEN_UNIT)
    ] = 0.95,
    target_epsilon: Annotated[
        float | None,
        typer.Option(
            "--target-epsilon",
            help="Also give the canaries needed to certify this epsilon.",
            parser=POSITIVE,
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Size an audit before training: the largest epsilon m canaries can certify at each precision.

    Example: lmleak dp-audit plan --m 1000 --target-epsilon 2
    """
    from lmleak.attacks.dp_audit import PLAN_PRECISIONS, plan_audit  # lazy: numpy, scipy

    result = plan_audit(
        m,
        r=r,
        precisions=precision or PLAN_PRECISIONS,
        delta=delta,
        confidence=confidence,
        target_epsilon=target_epsilon,
    )
    if json_out:
        print_json(asdict(result))
        return
    print_plan(result)


def print_plan(plan: Any) -> None:
    """One row per precision: the correct guesses it means, the largest certifiable epsilon and,
    with a target, the canaries needed to certify it."""
    from rich.table import Table

    t = Table(
        title=f"one-run audit: m = {plural(plan.m, 'canary')}, r = {plural(plan.r, 'guess')}, delta {plan.delta:g}, "
        f"{plan.confidence:.0%} confidence"
    )
    for col in ("precision", "right", "max epsilon"):
        t.add_column(col, justify="right")
    if plan.target_epsilon is not None:
        guessed = "all guessed" if plan.r == plan.m else f"{plan.r / plan.m:.0%} guessed"
        t.add_column(f"m for epsilon {plan.target_epsilon:g} ({guessed})", justify="right")
    for row in plan.rows:
        cells = [f"{row['precision']:.3g}", f"{row['v']} of {plan.r}", f"{row['max_epsilon']:.4g}"]
        if plan.target_epsilon is not None:
            need = row["canaries_needed"]
            cells.append("unreachable" if need is None else str(need))
        t.add_row(*cells)
    out.print(t)


@takes(audit=DPAuditSettings, training=DPAuditTraining, redact=RedactRun)
def run(
    ctx: typer.Context,
    corpus: Annotated[Path, typer.Option(help="The training corpus the canaries are added to.")],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Run directory: model/, canaries.parquet, summary.json.")
    ],
    audit: DPAuditSettings,
    training: DPAuditTraining,
    redact: RedactRun,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet_: Annotated[bool, typer.Option("--quiet", help="No progress bars.", hidden=True)] = False,
) -> None:
    """Insert m canaries (each with probability 1/2), train once, guess membership, bound epsilon.

    Example: lmleak dp-audit run --corpus data/corpus.jsonl --out runs/dp-audit --mode dp --target-epsilon 8
    """
    quiet(quiet_ or json_out)
    hide_ids_when_redacted(ctx, redact.redact)
    summary = run_dp_audit_with_report(
        corpus,
        out_dir,
        training.train_config(audit),
        audit,
        progress=not (quiet_ or json_out),
        redact=redact.redact,
        redact_key_file=redact.redact_key_file,
    )
    if json_out:
        print_json(summary)
        return
    print_dp_audit(summary, out_dir)


def print_dp_audit(summary: dict[str, Any], out_dir: Path) -> None:
    """The epsilon lower bound, the guesses behind it, and whether the DP claim is violated."""
    a = summary["dp_audit"]
    out.print(f"epsilon_lower_bound: {summary['epsilon_lower_bound']:.6g}")
    if "epsilon_lower_bound_fdp" in summary:  # absent from summaries written before it existed
        print_fdp(summary["epsilon_lower_bound_fdp"], summary.get("mu_lower_bound"), summary.get("fdp_note"))
    canaries = (
        plural(a["m"], "canary")
        if a.get("privacy_unit") != "user"
        else f"{plural(a['m'], 'canary user')} ({plural(a['canary_documents'], 'document')} each)"
    )
    if a.get("canary_design") == "crafted":
        canaries += " (crafted: rune secrets, new tokens)"
    out.print(
        f"{summary['statement']}: {a['v']} of {plural(a['r'], 'guess')} right about {canaries} "
        f"({a['num_included']} included), delta {a['delta']:g}"
    )
    if summary.get("limit"):
        out.print(summary["limit"])
    if summary["claim_violated"]:
        out.print(
            "[bold red]the measured lower bound exceeds the claimed epsilon: the DP claim is violated[/]"
        )
    if summary.get("placebo_warning"):
        out.print(f"[yellow]{summary['placebo_warning']}[/]")
    out.print(f"run: {out_dir}; report: {summary['report']}")
