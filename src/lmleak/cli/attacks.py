"""CLI of the attacks area: ``lmleak exposure``, ``lmleak mia``, ``lmleak experiment crt`` (paper 002 §5).

Thin: parse, call one library function (it loads, runs and writes the run directory), print a table.
main.py imports every area module to build the app, so library imports stay inside the commands
(torch would make ``lmleak --help`` slow), except an analysis's settings module, whose fields are the
command's options (:mod:`lmleak.attacks.exposure` imports no torch until it loads a model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.attacks.mia_settings import MembershipSettings
from lmleak.attacks.settings import ExposureSettings
from lmleak.cli.common import (
    JsonOpt,
    ModelOpt,
    OutDirOpt,
    QuietOpt,
    RedactRun,
    hide_ids_when_redacted,
    info,
    out,
    print_json,
    quiet,
)
from lmleak.cli.options import replace_settings, takes
from lmleak.errors import ConfigError, did_you_mean
from lmleak.experiments.options import CRTOptions
from lmleak.render.printouts import print_crt, print_exposure, print_max_exposure, print_membership
from lmleak.shards import ShardEngine


def parse_list_options(args: list[str], names: set[str]) -> dict[str, list[str]]:
    """Greedy multi-value options: ``--gammas 0 0.1 --archs lstm gpt`` (or ``--gammas=0,0.1``).

    Example:
        >>> parse_list_options(["--gammas", "0", "0.1", "--archs=lstm,gpt"], {"--gammas", "--archs"})
        {'--gammas': ['0', '0.1'], '--archs': ['lstm', 'gpt']}
    """
    out: dict[str, list[str]] = {}
    cur: str | None = None
    for a in args:
        if a.startswith("--"):
            name, _, val = a.partition("=")
            if name not in names:
                raise ConfigError(f"unknown option {name!r}.{did_you_mean(name, names)}")
            cur = name
            out[cur] = [v for v in val.split(",") if v] if val else []
        elif cur is None:
            raise ConfigError(f"unexpected argument {a!r}")
        else:
            out[cur].extend(v for v in a.split(",") if v)
    for k, v in out.items():
        if not v:
            raise ConfigError(f"{k} needs at least one value")
    return out


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``exposure``, ``mia`` and the ``experiment`` group with ``crt``."""
    app.command("exposure")(exposure_cmd)
    # --methods takes several values (``--methods min_k_pp recall``): extra args, parse_list_options
    app.command("mia", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(mia_cmd)
    if "experiment" not in groups:
        groups["experiment"] = typer.Typer(
            help="Reproduce the papers' experiments end to end.\n\nExample: lmleak experiment crt --quick --out runs/crt",
            no_args_is_help=True,
        )
        app.add_typer(groups["experiment"], name="experiment")
    # --gammas / --archs take several values each (as the paper's sweep is written), which click
    # options cannot; they arrive as extra args and are parsed by parse_list_options.
    groups["experiment"].command(
        "crt", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
    )(crt_cmd)


@takes(settings=ExposureSettings, redact=RedactRun)
def exposure_cmd(
    ctx: typer.Context,
    model: Annotated[
        str, typer.Option("--model", "-m", help="Model directory, GGUF, smollm2-135m or fake:<corpus.jsonl>.")
    ],
    canaries: Annotated[
        Path, typer.Option("--canaries", help="canaries.jsonl (secret, prefix, repeats, user_id).")
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Run directory to write exposure.parquet and summary.json.")
    ],
    settings: ExposureSettings,
    redact: RedactRun,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus", help="The training corpus: no placebo is a secret following a prefix there."
        ),
    ] = None,
    quiet_: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Canary exposure (Carlini et al. 2019; paper 002 §5.1): exact rank of each canary among all candidates.

    Example: lmleak exposure --model runs/model --canaries data/canaries.jsonl --out runs/exposure
    """
    # lazy: the exposure attack imports numpy and the model backends
    from lmleak.attacks.exposure import exposure_of_model
    from lmleak.report.redaction import write_run

    quiet(quiet_ or as_json)
    hide_ids_when_redacted(ctx, redact.redact)
    run = write_run(
        out_dir,
        lambda d: exposure_of_model(model, canaries, d, settings, corpus=corpus, echo=info),
        redact=redact.redact,
        key_file=redact.redact_key_file,
    )
    summary = run if redact.redact else run.summary  # redacted: the run's redacted summary, no canary
    if as_json:
        print_json(summary)
        return
    if redact.redact:
        print_max_exposure(out, summary, out_dir)
        return
    print_exposure(out, summary, run.results, run.model_name, out_dir)


@takes(settings=MembershipSettings, engine=ShardEngine, redact=RedactRun)
def mia_cmd(
    ctx: typer.Context,
    model: ModelOpt,
    out_dir: OutDirOpt,
    settings: MembershipSettings,
    engine: ShardEngine,
    redact: RedactRun,
    quiet_: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Membership inference (paper 002 A.4): individual and group attacks, AUC, TPR at low FPR, ROC plot.

    Example: lmleak mia --model runs/model --corpus data/corpus.jsonl --out runs/mia

    Also takes --methods M [M ...]: perplexity, zlib, min_k, min_k_pp, lowercase, recall, reference,
    neighbourhood, wbc, rmia, samia, or all (every likelihood method; samia by name: it samples
    --samia-samples continuations per text and needs only generated text, so it runs on the HTTP text and
    chat tiers) (default: perplexity zlib min_k, and reference with --reference; wbc and rmia compare the
    model with --reference, e.g. a fine-tune with its base), and --wbc-windows W [W ...] (WBC's window
    sizes, default 1 5 10 20). The sets are de-duplicated first (texts on both sides removed); every AUC has a 95 % interval over users (or
    texts grouped by shared PII); the headline attack is chosen on one half of the users and reported
    on the other; a placebo (two halves of the non-members) and the grouped blind baseline (a text-only
    classifier) are reported beside them, with a warning when the baseline may explain the attacks.
    """
    from lmleak.attacks.mia_benchmarks import benchmark_options  # lazy: numpy and torch
    from lmleak.audit.single import membership_command

    quiet(quiet_ or as_json)
    hide_ids_when_redacted(ctx, redact.redact)
    lists = parse_list_options(ctx.args, {"--methods", "--wbc-windows"})
    given: dict[str, Any] = {}
    if "--methods" in lists:
        given["methods"] = tuple(lists["--methods"])
    if "--wbc-windows" in lists:
        given["wbc_windows"] = _window_sizes(lists["--wbc-windows"])
    settings = replace_settings(settings, **given)
    s = settings
    texts = benchmark_options(s.benchmark, s.data, s.benchmark_subset, s.members, s.non_members, s.corpus)
    summary = membership_command(
        model,
        out_dir,
        settings,
        texts=texts,
        engine=engine,
        echo=info,
        redact=redact.redact,
        key_file=redact.redact_key_file,
    )
    if as_json:
        print_json(summary)
        return
    print_membership(out, summary, out_dir)


def _window_sizes(values: list[str]) -> tuple[int, ...]:
    """``--wbc-windows`` as whole numbers >= 1."""
    try:
        sizes = tuple(int(v) for v in values)
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise ConfigError(
            f"--wbc-windows takes whole numbers >= 1, got {' '.join(values)}",
            hint="e.g. --wbc-windows 1 5 10 20",
        )
    return sizes


@takes(settings=CRTOptions)
def crt_cmd(
    ctx: typer.Context,
    out_dir: OutDirOpt,
    settings: CRTOptions,
    quiet_: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Paper 002 Figs. 2-6: No-DP, redaction, DP-SGD, CRT and selective DP across policy recall γ.

    Example: lmleak experiment crt --quick --out runs/crt

    Also takes --gammas G [G ...] (policy false-negative rates; default 0 0.1 0.2 0.3 0.4 0.5,
    --quick: 0 0.5) and --archs A [A ...] (lstm, gpt; default both), each followed by its values.
    """
    from lmleak.experiments.crt import run_crt_experiment

    quiet(quiet_ or as_json)
    lists = parse_list_options(ctx.args, {"--gammas", "--archs"})
    try:
        gammas = tuple(float(g) for g in lists["--gammas"]) if "--gammas" in lists else None
    except ValueError:
        raise ConfigError(f"--gammas takes numbers, got {lists['--gammas']}", field="gammas") from None
    archs = tuple(lists["--archs"]) if "--archs" in lists else None
    settings = replace_settings(settings, gammas=gammas, archs=archs)
    result = run_crt_experiment(out_dir, settings.config(), corpus=settings.corpus)
    if as_json:
        print_json(result["summary"])
        return
    print_crt(out, result, out_dir)
