"""The work behind the ``lmleak probe`` commands (paper 003): each function takes what the command's
options name — a model spec, a subjects file, a templates file — loads them, runs one probing
function of this package and returns its result; the CLI only parses and prints.

Model specs are loaded with :func:`lmleak.models.loading.load_model` (the ``--model`` of every command).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmleak.errors import InputError
from lmleak.ledger.ledger import ModelSpec
from lmleak.models.loading import load_model
from lmleak.probe.people import people_counts
from lmleak.probe.person import MADE_UP_PEOPLE, PersonReport, person_report
from lmleak.probe.probing import DEFAULT_TARGETS, run_probe
from lmleak.probe.softprompt import run_softprompt
from lmleak.probe.subjects import control_users, count_controls, read_subjects
from lmleak.probe.sweeps import run_sweep
from lmleak.probe.templates import LEVELS, build_probes, templates_and_budgets
from lmleak.probe.verdict import SubjectView, subject_view
from lmleak.shards import ShardEngine, ray_session
from lmleak.words import plural

#: the target types a probe can name (``--targets`` / ``--target``)
TARGET_TYPES = frozenset({"phone", "email", "address", "relationship", "university"})


def parse_targets(s: str) -> tuple[str, ...]:
    """A comma list of target types (``--targets phone,email``), each checked.

    Raises:
        InputError: an unknown type, or none at all.

    Example:
        >>> parse_targets("phone, email,")
        ('phone', 'email')
    """
    ts = tuple(t.strip() for t in s.split(",") if t.strip())
    bad = [t for t in ts if t not in TARGET_TYPES]
    if bad or not ts:
        raise InputError(f"unknown target type(s) {bad}; use a comma list of {sorted(TARGET_TYPES)}")
    return ts


#: the association levels in the order a level is picked when none is given: the paper's triplet,
#: then the level that asks for fewer items, then the one that asks for more
LEVEL_ORDER = ("triplet", "twin", "quadruplet")


def eligible_by_level(
    subjects: list[dict[str, Any]], targets: tuple[str, ...] = DEFAULT_TARGETS
) -> dict[str, int]:
    """How many subjects each association level can probe (at least one target type with the items
    the level needs beside the name: 0 more at twin, 1 at triplet, 2 at quadruplet).

    Example:
        >>> eligible_by_level([{"name": "Ann", "email": "a@example.org", "phone": "201-555-0100"},
        ...                    {"name": "Bob", "email": "b@example.org"}])
        {'triplet': 1, 'twin': 2, 'quadruplet': 0}
    """
    return {
        level: sum(1 for s in subjects if any(build_probes(s, t, level=level, k=1) for t in targets))
        for level in LEVEL_ORDER
        if level in LEVELS
    }


def choose_level(
    subjects: list[dict[str, Any]], level: str | None, targets: tuple[str, ...] = DEFAULT_TARGETS
) -> tuple[str, str | None]:
    """The level to probe at and a warning (None when there is nothing to say).

    ``level`` None (left unset): triplet when any subject has one, else the first level of
    :data:`LEVEL_ORDER` that has eligible subjects, said in the warning. A level given with no eligible
    subject is kept (the user chose it) and the warning names the level that has them.

    Example:
        >>> pairs = [{"name": "Ann", "email": "a@example.org"}, {"name": "Bob", "email": "b@example.org"}]
        >>> choose_level(pairs, None)[0], choose_level(pairs, "triplet")[1][:49]
        ('twin', 'probe level triplet: no subject has the items it ')
    """
    counts = eligible_by_level(subjects, targets)
    have = [lv for lv in LEVEL_ORDER if counts.get(lv)]
    needs = "a name and at least one of phone, email, address"
    if level is None:
        if not have:
            return "triplet", f"probe level: no subject has the items any level needs ({needs})"
        if have[0] != "triplet":
            return have[0], (
                f"probe level: no subject has the items triplet needs; probing at {have[0]}, "
                f"where {counts[have[0]]} of {plural(len(subjects), 'subject')} {'is' if counts[have[0]] == 1 else 'are'} eligible"
            )
        return "triplet", None
    if counts.get(level):
        return level, None
    where = (
        f"{have[0]} has {counts[have[0]]} eligible subjects: set the level to {have[0]}"
        if have
        else f"no level has any ({needs})"
    )
    return (
        level,
        f"probe level {level}: no subject has the items it needs, so nothing will be probed; {where}",
    )


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
    *,
    targets: str = "phone,email,address",
    limit: int | None = None,
    template_file: str | Path | None = None,
    max_new: str = "",
    engine: ShardEngine | None = None,
    progress: Callable[[str], None] = _quiet,
    warn: Callable[[str], None] | None = None,
    **probe_options: Any,
) -> dict[str, Any]:
    """``lmleak probe run``: read the subjects (the first ``limit``), the user templates and budgets
    (:func:`~lmleak.probe.templates.templates_and_budgets`), load the model and its control users
    (``holdout.json``), then :func:`~lmleak.probe.probing.run_probe` inside one Ray session.

    ``targets`` is the comma list of ``--targets`` (:func:`parse_targets`); ``probe_options`` are the
    other keywords of :func:`~lmleak.probe.probing.run_probe` (``level``, ``k``, ``beams``, ...); a
    ``level`` of None is picked by :func:`choose_level`, and a level with no eligible subject is
    reported through ``warn`` (default: ``progress``).
    Returns the summary ``run_probe`` wrote.
    """
    subj = read_subjects(subjects)[:limit]
    tpl, budgets = templates_and_budgets(template_file, max_new)
    level, warning = choose_level(subj, probe_options.pop("level", None), parse_targets(targets))
    if warning:
        (warn or progress)(warning)
    probe_options["level"] = level
    m = load_model(model)
    controls = control_users(model)
    progress(f"probing {plural(len(subj), 'subject')} of {m.name}")
    _say_controls(subj, controls, progress)
    with ray_session(engine):  # one Ray start-up for every pass of the run
        return run_probe(
            m,
            subj,
            out_dir,
            targets=parse_targets(targets),
            templates=tpl,
            budgets=budgets,
            controls=controls,
            engine=engine,
            model_spec=ModelSpec(model),
            **probe_options,
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
    *,
    target: str = "phone",
    transfer_to: str | None = None,
    **softprompt_options: Any,
) -> dict[str, Any]:
    """``lmleak probe softprompt``: read the subjects, load the model (and the ``transfer_to`` model),
    then :func:`~lmleak.probe.softprompt.run_softprompt` (``softprompt_options``: its other keywords)."""
    subj = read_subjects(subjects)
    m = load_model(model)
    target_type = parse_targets(target)[0]
    return run_softprompt(
        m,
        subj,
        out_dir,
        target=target_type,
        transfer=load_model(transfer_to) if transfer_to else None,
        **softprompt_options,
    )
