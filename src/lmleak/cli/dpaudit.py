"""CLI: ``lmleak dp-audit bound``, ``plan`` and ``run`` (Steinke, Nasr & Jagielski 2023)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import (
    COUNT,
    COUNT0,
    OPEN_UNIT,
    POSITIVE,
    PROBABILITY,
    SEED,
    RedactKeyFileOpt,
    RedactRunOpt,
    number,
    out,
    print_json,
    quiet,
)
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


# long: the Typer signature declares 28 options; the body only builds the configs, runs, prints
def run(
    corpus: Annotated[Path, typer.Option(help="The training corpus the canaries are added to.")],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Run directory: model/, canaries.parquet, summary.json.")
    ],
    m: Annotated[
        int,
        typer.Option("--m", help="Canaries, each included with probability 1/2 (recorded).", parser=COUNT),
    ] = 256,
    r: Annotated[
        int | None,
        typer.Option(
            "--r", help="Guesses: r/2 most likely 'in', r/2 least likely 'out' (default m/2).", parser=COUNT0
        ),
    ] = None,
    mode: Annotated[str, typer.Option(help="Training mode: nodp | dp | crt | sdp.")] = "dp",
    epochs: Annotated[int, typer.Option(help="Passes over the training data.", parser=COUNT)] = 5,
    batch_size: Annotated[int, typer.Option(help="Sequences per mini-batch.", parser=COUNT)] = 16,
    lr: Annotated[float, typer.Option(help="Learning rate.", parser=POSITIVE)] = 2e-3,
    seq_len: Annotated[
        int, typer.Option("--seq-len", help="Tokens per training sequence.", parser=number(int, ge=2))
    ] = 64,
    width: Annotated[int, typer.Option(help="GPT width.", parser=COUNT)] = 128,
    layers: Annotated[int, typer.Option(help="GPT layers.", parser=COUNT)] = 2,
    heads: Annotated[int, typer.Option(help="GPT attention heads.", parser=COUNT)] = 4,
    tokenizer: Annotated[
        str | None, typer.Option(help="word or bpe (default bpe), learnt on the corpus without canaries.")
    ] = None,
    vocab_size: Annotated[
        int, typer.Option("--vocab-size", help="Tokenizer vocabulary size.", parser=COUNT)
    ] = 4000,
    tokenizer_from: Annotated[
        str | None,
        typer.Option(
            "--tokenizer-from",
            help="A public corpus or lmleak model folder for the tokenizer (default: the corpus without canaries).",
        ),
    ] = None,
    max_grad_norm: Annotated[
        float, typer.Option("--max-grad-norm", help="DP per-sequence clipping norm.", parser=POSITIVE)
    ] = 1.0,
    noise_multiplier: Annotated[
        float | None, typer.Option(help="DP noise multiplier.", parser=POSITIVE)
    ] = None,
    target_epsilon: Annotated[
        float | None, typer.Option(help="DP target epsilon (the claim audited).", parser=POSITIVE)
    ] = None,
    delta: Annotated[
        float | None,
        typer.Option(help="The bound's delta (default: the accountant's, else 1e-5).", parser=PROBABILITY),
    ] = None,
    confidence: Annotated[
        float, typer.Option(help="Confidence of the lower bound.", parser=OPEN_UNIT)
    ] = 0.95,
    holdout_users: Annotated[
        float,
        typer.Option(
            "--holdout-users", help="Share of corpus users held out (validation).", parser=number(ge=0, lt=1)
        ),
    ] = 0.1,
    seed: Annotated[
        int, typer.Option(help="Seed of the canaries, their inclusion and training.", parser=SEED)
    ] = 0,
    placebo: Annotated[
        bool,
        typer.Option(
            "--placebo", help="Train on no canary (a null run: the bound must be 0); all else the same."
        ),
    ] = False,
    privacy_unit: Annotated[
        str,
        typer.Option(
            "--privacy-unit",
            help="What one canary is, and the unit of the bound: sequence (one document) or user "
            "(a person with --canary-documents documents carrying the same secret).",
        ),
    ] = "sequence",
    canary_documents: Annotated[
        int,
        typer.Option(
            "--canary-documents", help="--privacy-unit user: documents per canary user.", parser=COUNT
        ),
    ] = 4,
    canary_design: Annotated[
        str,
        typer.Option(
            "--canary-design",
            help="random ('My ID is: <6 digits>') or crafted (Panda et al. 2025: the same draws as "
            "new-token rune secrets behind a designed prefix).",
        ),
    ] = "random",
    redact: RedactRunOpt = False,
    redact_key_file: RedactKeyFileOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet_: Annotated[bool, typer.Option("--quiet", help="No progress bars.", hidden=True)] = False,
) -> None:
    """Insert m canaries (each with probability 1/2), train once, guess membership, bound epsilon.

    Example: lmleak dp-audit run --corpus data/corpus.jsonl --out runs/dp-audit --mode dp --target-epsilon 8
    """
    from lmleak.audit.dp_audit import DPAuditConfig, run_dp_audit_with_report  # lazy: torch
    from lmleak.train.config import TrainConfig

    quiet(quiet_ or json_out)
    audit = DPAuditConfig(  # checked first: an unknown unit is named before the training options
        m=m,
        r=r,
        delta=delta,
        confidence=confidence,
        seed=seed,
        placebo=placebo,
        privacy_unit=privacy_unit,
        canary_documents=canary_documents,
        canary_design=canary_design,
    )
    cfg = TrainConfig(
        mode=mode,  # type: ignore[arg-type]
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        seq_len=seq_len,
        n_embd=width,
        n_layer=layers,
        n_head=heads,
        tokenizer=tokenizer,  # type: ignore[arg-type]
        vocab_size=vocab_size,
        tokenizer_from=tokenizer_from,
        max_grad_norm=max_grad_norm,
        noise_multiplier=noise_multiplier,
        target_epsilon=target_epsilon,
        holdout_users=holdout_users,
        seed=seed,
        privacy_unit=privacy_unit,  # DP training protects what one canary is (ignored without DP)
    )
    summary = run_dp_audit_with_report(
        corpus,
        out_dir,
        cfg,
        audit,
        progress=not (quiet_ or json_out),
        redact=redact,
        redact_key_file=redact_key_file,
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
