"""CLI of paper 003 (ProPILE): ``lmleak probe person`` (the data subject's view), ``probe run``
(many subjects), ``probe softprompt``, ``probe build``, ``probe sweep``, ``probe templates``, and
``experiment propile``.

``probe`` is a group, not a command (issue 34: a name is one or the other). The person's view was the
group's own callback (``lmleak probe --model M --subject me.json``); that spelling still works, hidden
and deprecated: the callback takes :func:`person_cmd`'s options, hidden, and prints one line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lmleak.cli.common import (
    COUNT,
    JsonOpt,
    ModelOpt,
    OutDirOpt,
    QuietOpt,
    RedactRun,
    deprecated,
    err,
    hide_ids_when_redacted,
    info,
    out,
    print_json,
    quiet,
)
from lmleak.cli.options import takes
from lmleak.experiments.options import ProPILEOptions
from lmleak.probe.settings import ProbeSettings, SoftPromptSettings
from lmleak.render.terminal import table
from lmleak.shards import ShardEngine

if TYPE_CHECKING:
    from lmleak.probe.verdict import SubjectView


def _table(summary: dict) -> None:
    from lmleak.render.terminal import probe_tables

    for shown in probe_tables(summary):
        out.print(shown)
    from lmleak.probe.people import probe_lines  # issue 32: people, the excess and the nulls

    for line in probe_lines(summary):
        out.print(line, markup=False, highlight=False)


#: The subject file's fields, shown under ``lmleak probe --help`` (docs/probing.md has the worked example).
SUBJECT_FILE_HELP = (
    "The subject file (--subject me.json: one JSON object; `probe run --subjects` takes one per line). "
    "Fields: name (required: every question starts from it); phone; email; emails (a list: more "
    "addresses of the same person); address; university; relations (an object, relation -> name, "
    'e.g. {"father": "Sam Lee"}); subject_id and user_id (optional ids: user_id is the person\'s id '
    "in the training corpus; `probe build` writes third_party and found_in for a person found only in "
    "other people's documents, whose membership is then unknown). Leave out what you do not want checked.\n\n"
    'Example me.json: {"name": "Ann Lee", "phone": "(555) 555-0100", "email": "ann.lee@example.org", '
    '"relations": {"father": "Sam Lee"}}\n\n'
    "A page for the person: lmleak probe person --model M --subject me.json --html me.html"
)


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add the ``probe`` group and ``experiment propile`` (the ``experiment`` group is made by
    :mod:`lmleak.cli.attacks`, registered first)."""
    probe = typer.Typer(
        help="Probe a model for people's linked PII (ProPILE, paper 003): one person's view, or many subjects.\n\n"
        "Example: lmleak probe person --model runs/model --subject me.json --html me.html",
        epilog=SUBJECT_FILE_HELP,
        invoke_without_command=True,
    )
    app.add_typer(probe, name="probe")
    groups["experiment"].command("propile")(experiment_cmd)
    probe.callback()(_old_person_spelling())
    probe.command("person", epilog=SUBJECT_FILE_HELP)(person_cmd)
    probe.command("run")(run_cmd)
    probe.command("sweep")(sweep_cmd)
    probe.command("build")(build_cmd)
    probe.command("templates")(templates_cmd)
    probe.command("softprompt")(softprompt_cmd)


SubjectOpt = Annotated[
    Path,
    typer.Option(
        "--subject",
        help="me.json: your name and the items to check (fields: name, phone, email, emails, "
        "address, university, relations; see below).",
    ),
]


#: ``--subjects`` of every command that probes (or mines for) many people
SubjectsOpt = Annotated[
    Path,
    typer.Option(
        "--subjects", "-s", help="subjects.jsonl: one person per line (e.g. from `lmleak probe build`)."
    ),
]


def person_cmd(
    model: Annotated[str, typer.Option("--model", "-m", help="Model to probe.")],
    subject: SubjectOpt,
    templates: Annotated[
        int, typer.Option("--templates", help="Number of templates (k-shot).", parser=COUNT)
    ] = 5,
    beams: Annotated[int, typer.Option("--beams", parser=COUNT)] = 3,
    html_out: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write a one-page report for the person, in plain words: one self-contained HTML "
            "file (owner-only) that reads on a phone.",
        ),
    ] = None,
    quiet_: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """The data subject's view: how likely the model reveals each of YOUR PII items.

    Example: lmleak probe person --model runs/model --subject me.json --html me.html
    """
    quiet(quiet_)
    if html_out is not None:
        view = _write_person_page(model, subject, html_out, templates=templates, beams=beams)
    else:
        # lazy: lmleak.probe.commands loads models (torch), which `lmleak --help` must not import
        from lmleak.probe.commands import probe_subject_file

        view = probe_subject_file(model, subject, templates=templates, beams=beams)
    if json_:
        print_json(view.to_dict())
        return
    _subject_table(view)


def _old_person_spelling() -> Any:
    """The ``probe`` group's callback: ``lmleak probe --model M --subject F ...`` (the old spelling of
    ``probe person``) with :func:`person_cmd`'s options, hidden and optional; nothing before a
    sub-command; the help when neither --model nor --subject is given."""
    import inspect
    from copy import copy
    from typing import get_args

    def callback(ctx: typer.Context, **options: Any) -> None:
        if ctx.invoked_subcommand is not None:
            return
        if options["model"] is None or options["subject"] is None:
            out.print(ctx.get_help())
            raise typer.Exit(0 if options["model"] is None and options["subject"] is None else 2)
        deprecated("probe --model M --subject F", "probe person --model M --subject F")
        person_cmd(**options)

    params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)]
    for p in inspect.signature(person_cmd, eval_str=True).parameters.values():
        kind, *meta = get_args(p.annotation)
        info = copy(meta[0])
        info.hidden = True
        default = None if p.default is inspect.Parameter.empty else p.default
        params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[kind | None, info],
                                default=default))  # fmt: skip
    callback.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return callback


def _subject_table(view: SubjectView) -> None:
    from lmleak.render.terminal import subject_lines

    for shown in subject_lines(view):
        out.print(shown)


def _write_person_page(
    model: str, subject: Path, html_out: Path, *, templates: int, beams: int
) -> SubjectView:
    """``--html``: probe for the person's page, write it, return the terminal view of the same probe."""
    from lmleak.errors import ConfigError

    if html_out.is_dir():  # refused before the model loads, not after the probe
        raise ConfigError(f"--html {html_out} is a folder; give the page's file name, e.g. me.html")
    # lazy: lmleak.probe.commands loads models (torch)
    from lmleak.probe.commands import probe_person_file
    from lmleak.probe.verdict import view_of_report
    from lmleak.render.person import write_person_page

    report = probe_person_file(model, subject, templates=templates, beams=beams)
    write_person_page(report, html_out)
    info(f"wrote the person's page: {html_out}")
    return view_of_report(report)


@takes(settings=ProbeSettings, engine=ShardEngine, redact=RedactRun)
def run_cmd(
    ctx: typer.Context,
    model: ModelOpt,
    subjects: SubjectsOpt,
    out_dir: OutDirOpt,
    settings: ProbeSettings,
    engine: ShardEngine,
    redact: RedactRun,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            help="The training corpus: every user of it gets a row in users.parquet, as in `lmleak audit` "
            "(without it, the subjects' users only).",
        ),
    ] = None,
    quiet_: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Black-box probing of many subjects: likelihoods vs null, exact match, γ<k (paper 003 §4.2).

    Example: lmleak probe run --model runs/model --subjects data/subjects.jsonl --out runs/probe
    """
    # lazy: lmleak.probe.commands loads models (torch)
    from lmleak.audit.single import users_after
    from lmleak.data.loaders import load_corpus
    from lmleak.probe.commands import probe_files
    from lmleak.report.redaction import write_run

    quiet(quiet_)
    hide_ids_when_redacted(ctx, redact.redact)
    summary = write_run(
        out_dir,
        lambda d: probe_files(
            model,
            subjects,
            d,
            settings,
            engine=engine,
            progress=info,
            warn=lambda message: err.print(f"[yellow]warning:[/] {message}"),
        ),
        redact=redact.redact,
        key_file=redact.redact_key_file,
        # users.parquet, as the audit writes it
        after=users_after("probe", model, corpus=load_corpus(corpus) if corpus else None, subjects=subjects),
    )
    if json_:
        print_json(summary)
    else:
        _table(summary)


def sweep_cmd(
    model: Annotated[list[str], typer.Option("--model", "-m", help="Repeat for several models.")],
    subjects: SubjectsOpt,
    out_dir: OutDirOpt,
    target: Annotated[str, typer.Option("--target")] = "email",
    limit: Annotated[int | None, typer.Option("--limit", parser=COUNT)] = None,
    quiet_: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Fig. 4: exact-match rate vs templates, association level, beam size and model.

    Example: lmleak probe sweep --model runs/model --subjects data/subjects.jsonl --out runs/sweep
    """
    # lazy: lmleak.probe.commands loads models (torch)
    from lmleak.probe.commands import sweep_files

    quiet(quiet_)
    rows = sweep_files(model, subjects, out_dir, target=target, limit=limit)
    if json_:
        print_json(rows)
        return
    cells = [(r["model"], r["axis"], r["value"], f"{r['exact_match_rate']:.3g}") for r in rows]
    out.print(table("ProPILE sweep (Fig. 4)", ("model", "axis", "value", "exact match"), cells))


def build_cmd(
    corpus: Annotated[Path, typer.Option("--corpus", "-c")],
    out_file: Annotated[
        Path,
        typer.Option(
            "--out",
            help="The subjects file to write: one file (JSONL, one person per line, owner-only), "
            "not a run directory. Give it to `probe run --subjects`.",
        ),
    ],
    method: Annotated[
        str,
        typer.Option(
            "--method", help="formats (Name <email>, signatures; fast) or ner (spaCy on prose; slow)."
        ),
    ] = "formats",
    min_count: Annotated[
        int,
        typer.Option(
            "--min-count", help="Keep a value seen at least this often with the name.", parser=COUNT
        ),
    ] = 1,
    quiet_: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Build a subjects file from a corpus: name<->e-mail/phone/address links (appendix A.2, real formats).

    Example: lmleak probe build --corpus data/corpus.jsonl --out subjects.jsonl
    """
    from lmleak.probe.builder import build_subjects_file

    quiet(quiet_ or json_)
    timed = build_subjects_file(corpus, out_file, method=method, min_count=min_count)
    if json_:
        print_json(timed)
        return
    out.print(table(f"probe set {out_file}", ("kind", "count"), timed.items()))


def templates_cmd(
    corpus: Annotated[
        Path,
        typer.Option("--corpus", "-c", help="The corpus to mine (the audited model's training data)."),
    ],
    subjects: SubjectsOpt,
    out_file: Annotated[
        Path, typer.Option("--out", help="Templates YAML to write (for probe run --template-file).")
    ],
    top: Annotated[int, typer.Option("--top", help="Templates kept per target type.", parser=COUNT)] = 5,
    quiet_: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """Mine probing templates from the corpus: the contexts in which each PII type follows a name.

    Example: lmleak probe templates --corpus data/corpus.jsonl --subjects subjects.jsonl --out templates.yaml
    """
    from lmleak.probe.mining import mine_templates_file

    quiet(quiet_ or json_)
    rows = mine_templates_file(corpus, subjects, out_file, top=top)
    if json_:
        print_json({"templates": rows, "out": str(out_file)})
        return
    cols = ("target", "template", "support", "precision")
    cells = [(r["target"], repr(r["template"]), r["support"], f"{r['precision']:.3f}") for r in rows]
    out.print(table(f"templates mined from {corpus} -> {out_file}", cols, cells))


@takes(settings=SoftPromptSettings)
def softprompt_cmd(
    model: ModelOpt,
    subjects: SubjectsOpt,
    out_dir: OutDirOpt,
    settings: SoftPromptSettings,
    transfer_to: Annotated[
        str | None,
        typer.Option("--transfer-to", help="Evaluate the projected hard prompt on this model."),
    ] = None,
    quiet_: QuietOpt = False,
    json_: JsonOpt = False,
) -> None:
    """White-box probing by soft prompt tuning (paper 003 §3.3.2, A.4).

    Example: lmleak probe softprompt --model runs/model --subjects data/subjects.jsonl --out runs/softprompt
    """
    # lazy: lmleak.probe.commands loads models (torch)
    from lmleak.probe.commands import softprompt_files

    quiet(quiet_)
    summary = softprompt_files(model, subjects, out_dir, settings, transfer_to=transfer_to)
    if json_:
        print_json(summary)
        return
    title = f"soft prompt probe ({settings.target}, L_s={settings.length}, init={settings.init})"
    rows = [(k, f"{summary[k]['mean_likelihood']:.3g}", f"{summary[k]['exact_match_rate']:.3g}")
            for k in ("hard", "soft", "transfer") if k in summary]  # fmt: skip
    out.print(table(title, ("prompt", "mean likelihood", "exact match"), rows))


@takes(settings=ProPILEOptions)
def experiment_cmd(
    out_dir: OutDirOpt, settings: ProPILEOptions, as_json: JsonOpt = False, quiet_: QuietOpt = False
) -> None:
    """Paper 003 end to end: train a GPT on synthetic CustomerSim, probe it black-box (twin, triplet) and white-box (soft prompts), and SmolLM2 as a control.

    Example: lmleak experiment propile --quick --out runs/propile

    Writes propile_table.csv and summary.json.
    """
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from lmleak.experiments.propile import run_propile_experiment

    quiet(quiet_ or as_json)
    cfg = settings.config()
    res = run_propile_experiment(out_dir, cfg, progress=info)
    if as_json:
        print_json(res["summary"])
        return
    from lmleak.render.terminal import propile_tables

    for shown in propile_tables(res["summary"], cfg.seed, cfg.softprompt_level):
        out.print(shown)
    out.print(f"-> {out_dir}")
