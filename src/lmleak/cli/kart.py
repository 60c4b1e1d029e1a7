"""CLI of the KART area (paper 004): ``lmleak kart review|describe|margins|run``, ``lmleak experiment
kart`` and ``lmleak synth clinical``. Thin: parse, call one library function, print a table or JSON.

``lmleak kart experiment`` (the same experiment, registered twice before) is a hidden deprecated
spelling of ``lmleak experiment kart``: every paper's experiment sits in the ``experiment`` group."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import (
    COUNT,
    JsonOpt,
    OutDirOpt,
    QuietOpt,
    SeedOpt,
    alias,
    number,
    out,
    print_json,
    quiet,
)
from lmleak.cli.options import takes
from lmleak.errors import ConfigError
from lmleak.experiments.options import KartExperimentOptions
from lmleak.render.terminal import percent, table

kart_app = typer.Typer(
    help="KART scenarios (paper 004): review, describe runs, leakage ratios and risk margins.\n\n"
    "Example: lmleak kart describe runs/probe",
    no_args_is_help=True,
)


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add the ``kart`` group, ``synth clinical`` and ``experiment kart`` (the ``experiment`` group is
    made by :mod:`lmleak.cli.attacks`, registered first)."""
    app.add_typer(kart_app, name="kart")
    groups["kart"] = kart_app
    groups["synth"].command("clinical")(synth_clinical_cmd)
    groups["experiment"].command("kart")(experiment_cmd)
    kart_app.command("experiment", hidden=True)(alias(experiment_cmd, "kart experiment", "experiment kart"))


@kart_app.command("review")
def review_cmd(as_json: JsonOpt = False) -> None:
    """Print paper 004's Table 2: prior studies parameterised by KART.

    Example: lmleak kart review
    """
    from lmleak.scenarios.catalogue import review, review_records

    if as_json:
        print_json(review_records())
        return
    from rich.text import Text

    # the paper's notation has brackets ("1[d ∈ D_train]") that Rich would read as markup: cells are text
    cols = ("Study", "I_K", "a", "R", "I_T", "Attack method", "access (ours)")
    keys = ("I_K", "a", "R", "I_T", "method")
    rows = [(Text(r.study), *(Text(r.paper[k]) for k in keys), r.scenario.resources.access) for r in review()]
    out.print(table("KART review of prior studies (paper 004, Table 2)", cols, rows))


@kart_app.command("describe")
def describe_cmd(
    run: Annotated[Path, typer.Argument(help="An lmleak run directory (or its summary.json).")],
    as_json: JsonOpt = False,
) -> None:
    """State a run's scenario in the paper's notation (I_K, a, R, I_T).

    Example: lmleak kart describe runs/probe
    """
    from lmleak.scenarios.describe import describe_run

    result = describe_run(run)
    if as_json:
        print_json(result.records())
        return
    from rich.text import Text

    rows = [
        (Text(lab), Text(s.attack), s.resources.access, Text(s.notation())) for lab, s in result.scenarios
    ]
    out.print(table(Text(f"KART scenario of {run}"), ("label", "attack", "access", "(I_K, a, R, I_T)"), rows))


def _print_margins(res: dict[str, Any], title: str) -> None:
    from lmleak.render.terminal import margins_lines

    for shown in margins_lines(res, title):
        out.print(shown)


@kart_app.command("margins")
def margins_cmd(
    counts: Annotated[Path, typer.Argument(help="CSV with columns scenario,valid,correct[,generated].")],
    as_json: JsonOpt = False,
    decimals: Annotated[
        int,
        typer.Option(
            help="Round ratios (pp) before differencing, as Table 3 does.", parser=number(int, ge=0, le=15)
        ),
    ] = 2,
) -> None:
    """Privacy leakage ratios and risk margins (paper 004 §5.3.3) from a table of counts.

    Example: lmleak kart margins counts.csv
    """
    from lmleak.scenarios.margins import margins_from_csv

    res = margins_from_csv(counts, decimals=decimals)
    if as_json:
        print_json(res)
        return
    _print_margins(res, f"Privacy risk margins ({counts.name})")


@kart_app.command("run")
def run_cmd(
    spec: Annotated[Path, typer.Argument(help="Scenario YAML with predictions and gold per scenario.")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Write summary.json here.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Leakage ratio per scenario and margins for any (subject, attribute) predictions.

    Example: lmleak kart run scenarios.yaml --out runs/kart
    """
    from lmleak.scenarios.runner import run_spec_to

    res = run_spec_to(spec, out_dir)
    if as_json:
        print_json(res)
        return
    _print_margins(res, f"Privacy risk margins ({spec.name})")


@takes(options=KartExperimentOptions)
def experiment_cmd(
    out_dir: OutDirOpt, options: KartExperimentOptions, as_json: JsonOpt = False, quiet_: QuietOpt = False
) -> None:
    """Paper 004's experiment on synthetic clinical notes: eight K±A±R± scenarios (Tables 3 and 6).

    Example: lmleak experiment kart --quick --out runs/kart-experiment
    """
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from lmleak.experiments.kart import run_experiment

    quiet(quiet_ or as_json)
    res = run_experiment(out_dir, options.config())
    if as_json:
        print_json(res)
        return
    rows = [
        (s, c["generated"], c["valid"], c["correct"], percent(res["ratios"][s]))
        for s, c in res["counts"].items()
    ]
    title = "Generated documents, valid and correct name–disease pairs (Table 6 style)"
    out.print(table(title, ("scenario", "generated", "valid", "correct", "ratio"), rows))
    _print_margins(res, "Privacy risk margins (Table 3 style)")


def synth_clinical_cmd(
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")],
    patients: Annotated[int, typer.Option(help="Number of patients.", parser=COUNT)] = 200,
    seed: SeedOpt = 0,
    notes_per_patient: Annotated[int, typer.Option(help="Notes per patient.", parser=COUNT)] = 3,
    as_json: JsonOpt = False,
) -> None:
    """Synthetic clinical notes: D_private (dummy PHI), D_public (HIPAA placeholders), gold pairs.

    Example: lmleak synth clinical --out clinical
    """
    from lmleak.pii.hipaa import synthesize_clinical

    if patients < 1 or notes_per_patient < 1:
        raise ConfigError("need at least one patient and one note per patient", field="patients")
    paths = synthesize_clinical(out_dir, patients=patients, notes_per_patient=notes_per_patient, seed=seed)
    if as_json:
        print_json({k: str(v) for k, v in paths.items()})
        return
    out.print(
        table(f"synthetic clinical notes ({patients} patients, seed {seed})", ("file", "path"), paths.items())
    )
