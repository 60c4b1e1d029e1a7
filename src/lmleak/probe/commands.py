"""The work behind the ``lmleak probe`` commands (paper 003): each function takes what the command's
options name — a model spec, a subjects file, a templates file — loads them, runs one probing
function of this package and returns its result; the CLI only parses and prints.

Model specs are loaded with :func:`lmleak.models.loading.load_model` (the ``--model`` of every command).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from lmleak.errors import InputError
from lmleak.ledger.ledger import ModelSpec
from lmleak.models.loading import load_model
from lmleak.probe.people import people_counts
from lmleak.probe.person import MADE_UP_PEOPLE, PersonReport, person_report
from lmleak.probe.probing import LEVEL_ORDER, choose_level, eligible_by_level, run_probe
from lmleak.probe.settings import TARGET_TYPES, ProbeSettings, SoftPromptSettings, target_list
from lmleak.probe.softprompt import run_softprompt
from lmleak.probe.subjects import control_users, count_controls, read_subjects
from lmleak.probe.sweeps import run_sweep
from lmleak.probe.templates import templates_and_budgets
from lmleak.probe.verdict import SubjectView, subject_view
from lmleak.shards import ShardEngine, ray_session
from lmleak.words import plural

__all__ = ["LEVEL_ORDER", "TARGET_TYPES", "choose_level", "eligible_by_level"]  # kept importable here


def parse_targets(s: str) -> tuple[str, ...]:
    """A comma list of target types (``--target phone,email``), each checked
    (:func:`~lmleak.probe.settings.target_list`).

    Raises:
        ConfigError: an unknown type, or none at all.

    Example:
        >>> parse_targets("phone, email,")
        ('phone', 'email')
    """
    return target_list((s,))


def _quiet(message: str) -> None:
    """The default progress callback: say nothing."""


def _one_subject(subject: str | Path) -> dict[str, Any]:
    """The one subject of a me.json file (InputError for more or fewer)."""
    subj = read_subjects(subject)
    if len(subj) != 1:
        raise InputError(
            f"{subject}: expected one subject, found {len(subj)}; use `lmleak probe run` for many"
        )
    return subj[0]


def probe_subject_file(model: str, subject: str | Path, *, templates: int = 5, beams: int = 3) -> SubjectView:
    """``lmleak probe --model M --subject me.json``: load the one subject and the model, then
    :func:`~lmleak.probe.verdict.subject_view`.

    Raises:
        InputError: the file holds more (or fewer) than one subject; it is read before the model loads.
    """
    subj = _one_subject(subject)  # first: a bad file must not wait for (or fail behind) the model
    return subject_view(load_model(model), subj, templates=templates, beams=beams)


def probe_person_file(
    model: str,
    subject: str | Path,
    *,
    templates: int = 5,
    beams: int = 3,
    made_up: int = MADE_UP_PEOPLE,
) -> PersonReport:
    """``lmleak probe --model M --subject me.json --html me.html``: load the one subject and the
    model, then :func:`~lmleak.probe.person.person_report` (:func:`probe_subject_file` prints the
    same findings as a table: :func:`~lmleak.probe.verdict.view_of_report`).

    Raises:
        InputError: the file holds more (or fewer) than one subject; it is read before the model loads.
    """
    subj = _one_subject(subject)
    return person_report(load_model(model), subj, templates=templates, beams=beams, made_up=made_up)


def _say_controls(subj: list[dict[str, Any]], controls: set[str], progress: Callable[[str], None]) -> None:
    """The progress line on who is probed against whom: the held-out people (by person), or that
    without them every membership is unknown and made-up people are the null (issue 32)."""
    people = people_counts(subj, {str(s["subject_id"]) for s in subj}, controls)
    if controls:
        progress(
            f"controls: {plural(people['controls'], 'person')} the model never saw (holdout.json, "
            f"{plural(count_controls(subj, controls), 'subject')}), reported beside the "
            f"{plural(people['members'], 'member')}"
            + (
                f"; {plural(people['third_parties'], 'third party')}: membership unknown"
                if people["third_parties"]
                else ""
            )
        )
    else:
        progress(
            f"no held-out people (holdout.json): the membership of all {plural(people['people_probed'], 'person')} "
            "is unknown; made-up people are probed the same way as the null"
        )


def probe_files(
    model: str,
    subjects: str | Path,
    out_dir: str | Path,
    settings: ProbeSettings = ProbeSettings(),  # noqa: B008 - frozen, so shared safely
    *,
    engine: ShardEngine | None = None,
    progress: Callable[[str], None] = _quiet,
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """``lmleak probe run``: read the subjects (the first ``settings.limit``), the user templates and
    budgets (:func:`~lmleak.probe.templates.templates_and_budgets`), load the model and its control
    users (``holdout.json``), then :func:`~lmleak.probe.probing.run_probe` inside one Ray session.

    A ``level`` of None is picked by :func:`choose_level`, and a level with no eligible subject is
    reported through ``warn`` (default: ``progress``); both before the model loads.
    Returns the summary ``run_probe`` wrote.
    """
    subj = read_subjects(subjects)[: settings.limit]
    tpl, budgets = templates_and_budgets(settings.template_file, settings.max_new_tokens)
    level, warning = choose_level(subj, settings.level, settings.targets)
    if warning:
        (warn or progress)(warning)
    m = load_model(model)
    controls = control_users(model, subj)
    progress(f"probing {plural(len(subj), 'subject')} of {m.name}")
    _say_controls(subj, controls, progress)
    with ray_session(engine):  # one Ray start-up for every pass of the run
        return run_probe(
            m,
            subj,
            out_dir,
            replace(settings, level=level),
            templates=tpl,
            budgets=budgets,
            controls=controls,
            engine=engine,
            model_spec=ModelSpec(model),
        )


def sweep_files(
    models: list[str],
    subjects: str | Path,
    out_dir: str | Path,
    *,
    target: str = "email",
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """``lmleak probe sweep``: read the subjects (the first ``limit``), load every model spec, then
    :func:`~lmleak.probe.sweeps.run_sweep` for the first type of ``target``; returns its rows."""
    subj = read_subjects(subjects)[:limit]
    loaded = {spec: load_model(spec) for spec in models}
    return run_sweep(loaded, subj, out_dir, target=parse_targets(target)[0])


def softprompt_files(
    model: str,
    subjects: str | Path,
    out_dir: str | Path,
    settings: SoftPromptSettings = SoftPromptSettings(),  # noqa: B008 - frozen, so shared safely
    *,
    transfer_to: str | None = None,
) -> dict[str, Any]:
    """``lmleak probe softprompt``: read the subjects, load the model (and the ``transfer_to`` model),
    then :func:`~lmleak.probe.softprompt.run_softprompt`."""
    subj = read_subjects(subjects)
    m = load_model(model)
    return run_softprompt(
        m, subj, out_dir, settings, transfer=load_model(transfer_to) if transfer_to else None
    )
