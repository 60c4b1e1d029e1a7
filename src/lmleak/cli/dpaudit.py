"""CLI: ``lmleak dp-audit bound``, ``plan`` and ``run`` (Steinke, Nasr & Jagielski 2023)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from lmleak.attacks.settings import DPAuditSettings
from lmleak.audit.dp_training import DPAuditTraining
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
from lmleak.render.printouts import print_dp_audit, print_fdp, print_plan


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
    print_fdp(out, bound.epsilon_lower_bound_fdp, bound.mu_lower_bound, bound.fdp_note)


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
    print_plan(out, result)


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
    # lazy: the audit trains a model (torch)
    from lmleak.audit.dp_audit import run_dp_audit_with_report

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
    print_dp_audit(out, summary, out_dir)
