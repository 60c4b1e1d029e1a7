"""``lmleak report``: the training data leakage report (paper 001), and ``lmleak study``: its studies.

Invocations:
    lmleak report --model M --corpus C --out RUN [--k 1 3] [--public-model P|leave-out] [--t T] [--p P] [--redact]
    lmleak study snapshots --model M --corpus C --out RUN [--k 1] [--val V]
    lmleak study compare --model NAME=PATH ... --corpus C --out RUN [--val V] [--public-model P]
    lmleak study hardening --run RUN --threshold 2 --threshold 3 ...

``report`` is a command, not a group (issue 34: a name is one or the other). The studies were its
sub-commands; ``lmleak report snapshots|compare|hardening`` still work as hidden deprecated
spellings (which is why ``report`` is still a click group underneath, with only hidden commands).

``report``'s options are generated from :class:`~lmleak.report.settings.ReportSettings` and
:class:`~lmleak.report.settings.LedgerEngine` (issue 34). ``--k 1 3`` (several values after one flag)
is accepted by rewriting it to ``--k 1 --k 3`` before click parses the group's arguments.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from lmleak.cli.common import (
    COUNT,
    POSITIVE,
    JsonOpt,
    OutDirOpt,
    QuietOpt,
    alias,
    hide_ids_when_redacted,
    info,
    out,
    print_json,
    quiet,
)
from lmleak.cli.options import takes
from lmleak.errors import ConfigError
from lmleak.render.printouts import print_report, print_table
from lmleak.report.settings import LedgerEngine, ReportSettings

_MULTI = ("--k",)


class _ReportGroup(TyperGroup):
    """A command (the group's callback) whose ``--k`` takes several values; its sub-commands are the
    studies' hidden deprecated spellings, so the usage line shows no COMMAND."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [self.options_metavar] if self.options_metavar else []

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's vendored click.Context
        fixed: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            fixed.append(a)
            i += 1
            if a in _MULTI:
                first = True
                while i < len(args) and (
                    first or args[i].lstrip("-").isdigit() and not args[i].startswith("--")
                ):
                    if not first:
                        fixed.append(a)
                    fixed.append(args[i])
                    i += 1
                    first = False
        return super().parse_args(ctx, fixed)


# The options of ``lmleak report`` the settings do not hold (its own are generated from
# ReportSettings and LedgerEngine); ``--public-model`` is shared with ``study compare``.
ReportModelOpt = Annotated[
    str | None, typer.Option("--model", help="The audited model (any lmleak model spec).")
]
ReportCorpusOpt = Annotated[
    Path | None, typer.Option("--corpus", help="Its training data (JSONL, CSV, Parquet, ...).")
]
ReportOutOpt = Annotated[Path | None, typer.Option("--out", help="Run directory.")]
PublicModelOpt = Annotated[
    str | None,
    typer.Option(
        "--public-model",
        help="A public model spec, 'leave-out', or 'base' (a fine-tune's recorded base model).",
    ),
]


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``lmleak report``, the ``lmleak study`` group, and the studies' old spellings under
    ``report`` (hidden, deprecated)."""
    report_app = typer.Typer(
        cls=_ReportGroup,
        invoke_without_command=True,
        help="Training data leakage report (Inan et al., paper 001): tab attack, features, unique sequences, leakage epsilon.\n\n"
        "Example: lmleak report --model runs/model --corpus data/corpus.jsonl --out runs/report --public-model leave-out",
    )
    report_app.callback()(report)
    study_app = typer.Typer(
        help="Studies of the leakage report (paper 001): over checkpoints, across models, API hardening.\n\n"
        "Example: lmleak study hardening --run runs/report --threshold 2 --threshold 3",
        no_args_is_help=True,
    )
    for name, study in (("snapshots", snapshots), ("compare", compare), ("hardening", hardening)):
        study_app.command(name)(study)
        report_app.command(name, hidden=True)(alias(study, f"report {name}", f"study {name}"))
    app.add_typer(report_app, name="report")
    app.add_typer(study_app, name="study")


@takes(settings=ReportSettings, engine=LedgerEngine)
def report(
    ctx: typer.Context,
    model: ReportModelOpt = None,
    corpus: ReportCorpusOpt = None,
    out_dir: ReportOutOpt = None,
    public_model: PublicModelOpt = None,
    holdout: Annotated[
        Path | None,
        typer.Option(
            "--holdout",
            help="People the model never saw (a corpus with user_id): the leaked-PII null when the model "
            "holds out none of the corpus's users (the audit's analyses.mia.non_members alone).",
        ),
    ] = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
    *,
    settings: ReportSettings,
    engine: LedgerEngine,
) -> None:
    """Run the leakage report."""
    if ctx.invoked_subcommand is not None:
        return
    # lazy: lmleak.report.engine imports torch (the ledger)
    from lmleak.report.engine import leakage_report_from_files
    from lmleak.report.metrics import default_ks

    _require(model=model, corpus=corpus, out_dir=out_dir)
    quiet(quiet_ or json_out)
    hide_ids_when_redacted(ctx, settings.redact)
    assert model is not None and corpus is not None and out_dir is not None
    if not ctx.params.get("k"):  # no --k: the default ks the API can answer
        settings = dataclasses.replace(settings, k=default_ks(engine.api_top_k))
    result = leakage_report_from_files(
        model,
        corpus,
        out_dir,
        settings,
        engine=engine,
        public_model=public_model,
        never_seen=holdout,
        progress=info,
    )
    if json_out:
        print_json(result.summary)
    elif not quiet_:
        print_report(out, result.summary, f"Leakage report — {out_dir}")


def _require(*, model: str | None, corpus: Path | None, out_dir: Path | None) -> None:
    """Refuse a report without its three required options (optional only for the sub-commands)."""
    missing = [n for n, v in (("--model", model), ("--corpus", corpus), ("--out", out_dir)) if v is None]
    if missing:
        raise ConfigError(
            f"missing {', '.join(missing)}", hint="lmleak report --model M --corpus C --out RUN"
        )


def snapshots(
    model: Annotated[Path, typer.Option("--model", help="Model directory holding snapshots/epoch-N.")],
    corpus: Annotated[Path, typer.Option("--corpus", help="Training data.")],
    out_dir: OutDirOpt,
    k: Annotated[int, typer.Option("--k", help="Top-k of the tab attack.", parser=COUNT)] = 1,
    val: Annotated[
        Path | None, typer.Option("--val", help="Validation corpus (val perplexity and accuracy).")
    ] = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
) -> None:
    """The report over per-epoch checkpoints (paper 001 Fig. 5).

    Example: lmleak study snapshots --model runs/model --corpus data/corpus.jsonl --out runs/snapshots
    """
    # lazy: lmleak.report.studies imports torch
    from lmleak.report.studies import snapshot_study

    quiet(quiet_ or json_out)
    table = snapshot_study(model, corpus, out_dir, k=k, val_corpus=val)
    if json_out:
        print_json(table.to_dict("records"))
    elif not quiet_:
        print_table(out, table, f"Snapshots — {out_dir}")


def compare(
    model: Annotated[list[str], typer.Option("--model", help="NAME=PATH (repeat for each model).")],
    corpus: Annotated[Path, typer.Option("--corpus", help="Training data shared by the models.")],
    out_dir: OutDirOpt,
    k: Annotated[int, typer.Option("--k", parser=COUNT)] = 1,
    val: Annotated[Path | None, typer.Option("--val", help="Validation corpus.")] = None,
    public_model: PublicModelOpt = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
) -> None:
    """Compare models trained on the same data (paper 001 Table 2).

    Example: lmleak study compare --model plain=runs/plain --model dp=runs/dp --corpus data/corpus.jsonl --out runs/compare
    """
    # lazy: lmleak.report.studies imports torch
    from lmleak.report.studies import compare_models

    quiet(quiet_ or json_out)
    table = compare_models(
        _model_specs(model),
        corpus,
        out_dir,
        k=k,
        val_corpus=val,
        public_model=public_model,
    )
    if json_out:
        print_json(table.to_dict("records"))
    elif not quiet_:
        print_table(out, table, f"Model comparison — {out_dir}")


def _model_specs(model: list[str]) -> dict[str, str]:
    """``NAME=PATH`` options (or bare paths, named after their folder) as name -> path; names unique."""
    specs: dict[str, str] = {}
    for m in model:
        name, sep, path = m.partition("=")
        if not sep:
            name, path = Path(m).name, m
        if name in specs:
            raise ConfigError(
                f"model name {name!r} given twice",
                field="--model",
                hint="use NAME=PATH with distinct names",
            )
        specs[name] = path
    return specs


def hardening(
    run: Annotated[Path, typer.Option("--run", help="A finished report's run directory.")],
    threshold: Annotated[
        list[float],
        typer.Option("--threshold", help="Top-1 perplexity thresholds (repeat).", parser=POSITIVE),
    ],
    k: Annotated[int, typer.Option("--k", parser=COUNT)] = 1,
    val_run: Annotated[
        Path | None, typer.Option("--val-run", help="A run whose ledger is the validation set.")
    ] = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
) -> None:
    """API hardening: accuracy and # unique vs the confidence threshold, from the ledger alone.

    Example: lmleak study hardening --run runs/report --threshold 2 --threshold 3
    """
    # lazy: lmleak.report.studies imports torch
    from lmleak.report.studies import hardening_study

    quiet(quiet_ or json_out)
    table = hardening_study(run, None, threshold, k=k, val_run=val_run)
    if json_out:
        print_json(table.to_dict("records"))
    elif not quiet_:
        print_table(out, table, f"API hardening — {run}")
