"""CLI: ``lmleak audit``, ``lmleak demo``, ``lmleak gate``, ``lmleak query``, ``lmleak render``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import JsonOpt, QuietOpt, SeedOpt, err, out, print_json, quiet


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("audit")(audit)
    app.command("demo")(demo)
    app.command("gate")(gate)
    app.command("query")(query_cmd)
    app.command("render")(render_cmd)


def gate(
    run: Annotated[Path, typer.Argument(help="A run directory (an audit or one stage's output).")],
    max_unique: Annotated[int | None, typer.Option(help="Most unique leaked sequences allowed.")] = None,
    max_leakage_epsilon: Annotated[float | None, typer.Option(help="Largest leakage ε allowed.")] = None,
    max_exposure: Annotated[
        float | None, typer.Option(help="Largest canary exposure (bits) allowed.")
    ] = None,
    max_mia_auc: Annotated[
        float | None, typer.Option(help="Largest membership-inference AUC allowed.")
    ] = None,
    max_pii_unique: Annotated[
        int | None, typer.Option(help="Most user-unique leaked sequences holding PII allowed.")
    ] = None,
    min_epsilon_lower_bound: Annotated[
        float | None,
        typer.Option(
            help="Floor on the DP audit's measured ε lower bound (a control run must show at least this). A measured bound above a model's claimed ε always fails."
        ),
    ] = None,
    max_extracted: Annotated[
        int | None, typer.Option(help="Most verified extracted training samples allowed (lmleak extract).")
    ] = None,
    allow_changed: Annotated[
        bool,
        typer.Option(
            "--allow-changed",
            help="Gate a run even though its model or corpus files changed since it was written (refused otherwise).",
        ),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Exit 0 when every limit holds for every audited model, 1 otherwise (a release gate for CI).

    Example: lmleak gate runs/audit --max-unique 0 --max-mia-auc 0.6
    """
    from lmleak.audit.gate import run_gate

    limits = {
        k: v
        for k, v in {
            "unique_sequences": max_unique,
            "leakage_epsilon": max_leakage_epsilon,
            "max_exposure": max_exposure,
            "mia_auc": max_mia_auc,
            "pii_unique_sequences": max_pii_unique,
            "min_epsilon_lower_bound": min_epsilon_lower_bound,
            "extracted": max_extracted,
        }.items()
        if v is not None
    }
    if not limits:
        err.print(
            "[yellow]no limits given[/]: pass at least one of --max-unique, --max-pii-unique, --max-leakage-epsilon, --max-exposure, --max-mia-auc, --min-epsilon-lower-bound, --max-extracted"
        )
        raise typer.Exit(2)
    result = run_gate(
        run,
        limits,
        allow_changed=allow_changed,
        echo=lambda s: err.print(f"[yellow]warning:[/] {s}", soft_wrap=True),
    )
    _print_gate(result, json_out)
    raise typer.Exit(0 if result.passed else 1)


def _print_gate(result: Any, json_out: bool) -> None:
    """Every check of ``lmleak gate`` and the verdict, as JSON or one line each."""
    if json_out:
        print_json(result.to_dict())
    else:
        for c in result.checks:
            out.print(("[green]✓[/] " if c.passed else "[red]✗[/] ") + c.describe())
        out.print(
            "[bold green]gate passed[/]"
            if result.passed
            else f"[bold red]gate failed[/]: {len(result.failed)} check(s)"
        )


def query_cmd(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
    sql: Annotated[
        str, typer.Argument(help='SQL over the run\'s Parquet files, e.g. "SELECT * FROM sequences LIMIT 5".')
    ],
    json_out: JsonOpt = False,
) -> None:
    """Run DuckDB SQL over a run's Parquet files (each file is a table named after it).

    Example: lmleak query runs/report "SELECT k, count(*) AS n FROM sequences GROUP BY k"
    """
    from lmleak.audit.query import query

    df = query(run, sql)
    if json_out:
        print_json(df.to_dict("records"))
        return
    from rich.table import Table

    table = Table(show_lines=False)
    for c in df.columns:
        table.add_column(str(c))
    for rec in df.head(200).itertuples(index=False):
        table.add_row(*[str(v) for v in rec])
    out.print(table)
    if len(df) > 200:
        out.print(f"[dim]{len(df)} rows; first 200 shown (use --json for all)[/]")


def render_cmd(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
    out_path: Annotated[
        Path | None, typer.Option("--out", help="Where to write the HTML (default RUN/report.html).")
    ] = None,
    show_text: Annotated[
        bool, typer.Option(help="Include leaked text (off by default: lengths and counts only).")
    ] = False,
    quiet_: QuietOpt = False,
) -> None:
    """Write the self-contained HTML report of a run directory.

    Example: lmleak render runs/audit
    """
    from lmleak.render.html import render_run

    quiet(quiet_)
    path = render_run(run, out_path, show_text=show_text)
    if not quiet_:
        out.print(f"report written to [bold]{path}[/] (owner-only; contains training-data statistics)")


def _cell(v: object) -> str:
    if v is None:
        return "—"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _summary_table(run: Path, heads: dict[str, dict[str, Any]]) -> None:
    from rich.table import Table

    from lmleak.render.html import LABELS

    metrics = [k for k in LABELS if any(k in h for h in heads.values())]
    # one row per metric, one column per model: fits a terminal for any number of metrics
    t = Table(title=f"Audit summary — {run}")
    t.add_column("metric")
    for name in heads:
        t.add_column(name, justify="right")
    for k in metrics:
        t.add_row(LABELS[k], *[_cell(h.get(k)) for h in heads.values()])
    out.print(t)


def audit(
    config: Annotated[Path | None, typer.Argument(help="The audit config (YAML). See --example.")] = None,
    example: Annotated[
        bool, typer.Option("--example", help="Print a commented example config and exit.")
    ] = False,
    force: Annotated[bool, typer.Option(help="Rerun every stage, even complete ones.")] = False,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Every stage writes only numbers, labels and keyed-hash ids: no text, secrets, token ids "
            "or plain ids anywhere in the run (same as `redact: true` in the config).",
        ),
    ] = False,
    redact_key_file: Annotated[
        Path | None,
        typer.Option(
            "--redact-key-file",
            help="HMAC key for redacted ids, kept outside the run "
            "(default: $LMLEAK_REDACT_KEY, else a random key that is discarded).",
        ),
    ] = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
) -> None:
    """Run a whole audit from one config file: report, exposure, membership, PII probing, KART, HTML.

    Example: lmleak audit audit.yaml
    """
    import sys

    from lmleak.audit import audit as run_audit_file
    from lmleak.audit.config import EXAMPLE
    from lmleak.errors import ConfigError

    if example:
        sys.stdout.write(EXAMPLE)
        return
    if config is None:
        raise ConfigError(
            "no config file given",
            hint="lmleak audit audit.yaml (write one with `lmleak audit --example > audit.yaml`)",
        )
    quiet(quiet_ or json_out)
    run = run_audit_file(
        config,
        force=force,
        echo=(lambda s: None) if (quiet_ or json_out) else err.print,
        redact=redact,
        redact_key_file=redact_key_file,
    )
    from lmleak.render.headline import collect_headlines

    if json_out:
        print_json({"run": str(run), "report": str(run / "report.html"), "headlines": collect_headlines(run)})
        return
    _summary_table(run, collect_headlines(run))
    out.print(f"report: [bold]{run / 'report.html'}[/] (owner-only; derived from training data)")


def demo(
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for the demo's data, models and audit.")
    ] = Path("lmleak-demo"),
    quick: Annotated[
        bool, typer.Option("--quick", help="Smaller corpus and fewer epochs (about 3 minutes).")
    ] = False,
    leave_out: Annotated[
        bool, typer.Option(help="Retrain a leave-out public model per audited model (slower).")
    ] = False,
    seed: SeedOpt = 0,
    json_out: JsonOpt = False,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help="Audit LoRA fine-tunes of this pretrained model (a Hugging Face folder or smollm2-135m) against the base as the public model; smoke-sized on the CPU, full size on a GPU.",
        ),
    ] = None,
    max_steps: Annotated[
        int | None,
        typer.Option("--max-steps", help="--base: optimiser steps per fine-tune (default 12 on the CPU)."),
    ] = None,
) -> None:
    """The embedded default: synthesise a corpus, train plain / DP-SGD / CRT GPTs (or LoRA fine-tunes of --base), audit all three.

    Example: lmleak demo --quick --out runs/demo
    """
    from lmleak.audit.demo import demo as run_demo

    quiet(json_out)
    result = run_demo(
        out_dir,
        quick=quick,
        seed=seed,
        leave_out=leave_out,
        echo=(lambda s: None) if json_out else err.print,
        base=base,
        max_steps=max_steps,
    )
    if json_out:
        print_json(result.to_dict())
        return
    _summary_table(result.run, result.headlines)
    out.print(f"demo finished in {result.seconds:.0f} s; report: [bold]{result.report}[/]")
