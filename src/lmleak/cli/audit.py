"""CLI: ``lmleak audit``, ``lmleak demo``, ``lmleak gate``, ``lmleak query``, ``lmleak render``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import (
    COUNT,
    JsonOpt,
    QuietOpt,
    SeedOpt,
    err,
    hide_ids_when_redacted,
    out,
    print_json,
    quiet,
)
from lmleak.cli.options import option_name, takes
from lmleak.errors import ConfigError
from lmleak.render.limits import GateSettings
from lmleak.render.terminal import audit_summary_table, release_lines, table, verdict_lines
from lmleak.settings import Settings, setting


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("audit")(audit)
    app.command("demo")(demo)
    app.command("gate")(gate)
    app.command("query")(query_cmd)
    app.command("render")(render_cmd)


@takes(limits=GateSettings)
def gate(
    run: Annotated[Path, typer.Argument(help="A run directory (an audit or one stage's output).")],
    limits: GateSettings,
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

    Example: lmleak gate runs/audit --profile release

    Without limits or --profile, the limits of the audit config's `gate:` section apply. Prints the
    same verdict table the HTML report opens with: Pass / Fail / Inconclusive / Not evaluable per
    limit, each decided on its 95 % interval.
    """
    from lmleak.audit.gate import gate_run

    result = gate_run(
        run,
        limits.limits(),
        profile=limits.profile,
        allow_not_evaluable=limits.allow_not_evaluable,
        allow_changed=allow_changed,
        echo=lambda s: err.print(f"[yellow]warning:[/] {s}", soft_wrap=True),
        allow_inconclusive=limits.allow_inconclusive,
    )
    _print_gate(result, json_out)
    raise typer.Exit(0 if result.passed else 1)


def _print_gate(result: Any, json_out: bool) -> None:
    """Every check of ``lmleak gate`` and the verdict, as JSON or as the verdict table."""
    if json_out:
        print_json(result.to_dict())
        return
    print_verdict(result)
    if result.passed:
        out.print("[bold green]gate passed[/]")
        return
    inconclusive = sum(c.verdict == "inconclusive" for c in result.failed)
    tail = f" ({inconclusive} inconclusive: --allow-inconclusive passes those)" if inconclusive else ""
    out.print(f"[bold red]gate failed[/]: {len(result.failed)} check(s){tail}")


def print_verdict(verdict: Any, title: str = "Verdict") -> None:
    """The verdict table and each limit's reason (:func:`lmleak.render.terminal.verdict_lines`)."""
    for shown in verdict_lines(verdict, title):
        out.print(shown)


def query_cmd(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
    sql: Annotated[
        str, typer.Argument(help='SQL over the run\'s Parquet files, e.g. "SELECT * FROM sequences LIMIT 5".')
    ],
    json_out: JsonOpt = False,
) -> None:
    """Run DuckDB SQL over a run's Parquet files (each file is a table named after it).

    Example: lmleak query runs/report "SELECT k, count(*) AS n FROM sequences GROUP BY k"

    A column the query names that is empty in this run (perplexity_ratio without a public model) is
    warned about.
    """
    from rich.markup import escape

    from lmleak.audit.query import empty_columns, query

    df = query(run, sql)
    for warning in empty_columns(run, sql):
        err.print("[yellow]warning:[/] " + escape(warning), highlight=False)
    if json_out:
        print_json(df.to_dict("records"))
        return
    from rich.text import Text

    # training text is data, never Rich markup: '[proj-dev]' in a subject line was eaten as a style
    # tag, '[/x]' crashed the command, '[link=...]' became a hyperlink
    rows = ([Text(_query_cell(v)) for v in rec] for rec in df.head(200).itertuples(index=False))
    out.print(table(None, [Text(str(c)) for c in df.columns], rows))
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


def _query_cell(v: Any) -> str:
    """A query result's value as text; a list column as a list (``['EMAIL', 'PERSON']``, not numpy's
    ``['EMAIL' 'PERSON']``)."""
    if hasattr(v, "tolist") and not isinstance(v, str):
        v = v.tolist()
    return str(v)


def _summary_table(run: Path, heads: dict[str, dict[str, Any]]) -> None:
    out.print(audit_summary_table(run, heads))


@dataclass(frozen=True)
class QuickAudit(Settings):
    """``lmleak audit --model M --corpus C``: an audit with no config file (:mod:`lmleak.audit.quick`)."""

    model: str | None = setting(
        None,
        help="Audit this model with no config file (with --corpus): writes the config it runs to "
        "OUT/audit.yaml, then runs it.",
    )
    corpus: Path | None = setting(None, help="With --model: the model's training corpus.")
    out_dir: Path | None = setting(
        None, help="With --model: the run directory (default audit-run).", option="--out"
    )
    public_model: str | None = setting(
        None,
        help="With --model: a model that never saw the data (smollm2-135m, base, leave-out, a folder), for leakage ε.",
    )
    canaries: Path | None = setting(
        None, help="With --model: the canaries inserted into the training data (exposure)."
    )
    holdout: Path | None = setting(
        None,
        help="With --model: a corpus of people the model never saw, the non-members of membership inference "
        "(default: the users the model held out, its holdout.json).",
    )

    def refuse_mixed(self, config: Path | None) -> None:
        """Refuse a config file with these options, and --model or --corpus alone."""
        given = [option_name(f) for f in dataclasses.fields(self) if getattr(self, f.name) is not None]
        if config is not None and given:
            raise ConfigError(
                f"a config file and {given[0]} given",
                field=given[0],
                hint="give a config file, or --model and --corpus (which write one), not both",
            )
        if config is None and (self.model is None or self.corpus is None):
            raise ConfigError(
                "no config file given" if not given else "--model and --corpus go together",
                field=None if not given else ("--corpus" if self.corpus is None else "--model"),
                hint="lmleak audit --model MODEL --corpus CORPUS, or lmleak audit audit.yaml "
                "(write one with `lmleak audit --example > audit.yaml`)",
            )


@takes(quick=QuickAudit)
def audit(
    config: Annotated[Path | None, typer.Argument(help="The audit config (YAML). See --example.")] = None,
    *,
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
            callback=hide_ids_when_redacted,
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
    quick: QuickAudit,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
) -> None:
    """Run a whole audit from one config file: report, exposure, membership, PII probing, KART, HTML.

    Example: lmleak audit audit.yaml
    """
    import sys

    from lmleak.audit import audit as run_audit_file
    from lmleak.audit.config import EXAMPLE

    if example:
        sys.stdout.write(EXAMPLE)
        return
    quick.refuse_mixed(config)
    quiet(quiet_ or json_out)
    echo = (lambda s: None) if (quiet_ or json_out) else err.print
    if config is None:
        from lmleak.audit.quick import QuickOptions, quick_audit

        q = quick
        assert q.model is not None and q.corpus is not None
        options = QuickOptions(q.out_dir or "audit-run", q.public_model, q.canaries, q.holdout, redact)
        run = quick_audit(q.model, q.corpus, options, redact_key_file=redact_key_file, force=force, echo=echo)
    else:
        run = run_audit_file(config, force=force, echo=echo, redact=redact, redact_key_file=redact_key_file)
    _finish_audit(run, json_out)


def _finish_audit(run: Path, json_out: bool) -> None:
    """What ``lmleak audit`` prints once the run is written: the release summary, the report's path and
    the two commands to run next, or all of it as JSON."""
    from rich.markup import escape

    from lmleak.audit.quick import followups
    from lmleak.render.headline import collect_headlines

    summary, verdict = _release_of(run)
    config = summary.get("config") or {}
    nexts = followups(
        run, public_model=config.get("public_model") is not None, redacted=bool(summary.get("redacted"))
    )
    if json_out:
        print_json(
            {
                "run": str(run),
                "report": str(run / "report.html"),
                "headlines": collect_headlines(run),
                "release": summary.get("release"),
                "verdict": verdict.to_dict() if verdict.checks else None,
                "next": nexts,
            }
        )
        return
    print_release(summary, verdict)
    _summary_table(run, collect_headlines(run))
    out.print(f"report: [bold]{run / 'report.html'}[/] (owner-only; derived from training data)")
    out.print("next:", highlight=False)
    for line in nexts:  # whole lines (soft_wrap): they are copied into a shell
        out.print(f"  {escape(line)}", highlight=False, soft_wrap=True)


def _release_of(run: Path) -> tuple[dict[str, Any], Any]:
    """The run's summary and its verdict under the audit config's ``gate:`` limits."""
    from lmleak.render.headline import collect_headlines
    from lmleak.render.verdict import configured_verdict
    from lmleak.runs import read_summary

    summary = read_summary(run)
    return summary, configured_verdict(summary, collect_headlines(run))


def print_release(summary: dict[str, Any], verdict: Any) -> None:
    """The release summary the terminal opens with (:func:`lmleak.render.terminal.release_lines`)."""
    for shown in release_lines(summary, verdict):
        out.print(shown)


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
        typer.Option(
            "--max-steps", help="--base: optimiser steps per fine-tune (default 12 on the CPU).", parser=COUNT
        ),
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
    if (Path(result.run) / "summary.json").exists():
        print_release(*_release_of(Path(result.run)))
    _summary_table(result.run, result.headlines)
    out.print(f"demo finished in {result.seconds:.0f} s; report: [bold]{result.report}[/]")
