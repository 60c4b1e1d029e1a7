"""``lmleak audit --model M --corpus C``: an audit of a model and its corpus with no config to write.

:func:`config_for` builds the :class:`~lmleak.audit.config.AuditConfig` a newcomer would otherwise
write by hand, deciding each analysis from what the model and the corpus hold:

- **leakage report** at k = 1 and 3, leaked PII by the regex policy; leakage ε with ``public_model``;
- **PII probing** of the people :func:`lmleak.probe.builder.build_subjects` finds in the corpus by its
  formats (``Name <email>`` headers, signature blocks), written to ``RUN/subjects.jsonl``, at the
  level the subjects have (``level: null``), with templates mined from the corpus when it writes its
  PII after names (else the paper's first 5); the model's held-out users are the controls;
- **membership inference** from people the model never saw (the mia stage's builder,
  :func:`~lmleak.attacks.mia_texts.membership_texts`): its held-out users (``holdout.json`` of ``lmleak train --holdout-users``) or a ``holdout`` corpus of other
  people, against the documents of the users it was trained on; with neither it is listed as not
  run, with the command that would run it;
- **canary exposure** with a ``canaries`` file;
- the verdict under ``gate: {profile: release}``.

:func:`quick_audit` checks the model, the corpus and the held-out people before any work (a problem
is a one-line :class:`~lmleak.errors.InputError`, exit 2), writes the config to ``RUN/audit.yaml`` —
complete and commented, so it can be edited and rerun with ``lmleak audit RUN/audit.yaml`` — and runs
that file. A rerun of the same command reuses every complete stage; a ``RUN/audit.yaml`` or
``RUN/subjects.jsonl`` edited since it was written is never overwritten.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.attacks.mia_texts import membership_texts
from lmleak.audit.config import (
    KEY_NOTES,
    SECTION_NOTES,
    AuditConfig,
    check_model_folder,
    load_config,
    parse_config,
)
from lmleak.audit.nonmembers import quick_command
from lmleak.data.holdout import read_holdout
from lmleak.data.loaders import load_corpus
from lmleak.errors import ConfigError
from lmleak.probe.builder import build_subjects
from lmleak.probe.mining import mine_templates
from lmleak.probe.people import people_counts
from lmleak.probe.subjects import read_subjects
from lmleak.runs import atomic_write_text, secure_dir
from lmleak.settings import Settings, commented, noted_lines, yaml_scalar
from lmleak.words import plural

CONFIG_FILE = "audit.yaml"
SUBJECTS_FILE = "subjects.jsonl"
#: probing generates per subject and template: a seeded sample of this many keeps a large corpus's
#: probing to minutes (the config says how many were found)
MAX_SUBJECTS = 500
#: model specs that are not paths (as :meth:`AuditConfig.resolve` leaves them)
NAMED_MODELS = ("smollm2-135m",)
PUBLIC_NAMES = ("smollm2-135m", "leave-out", "base")
_TRAILER = "# lmleak audit --model: sha256 "


def _model_spec(spec: str, option: str, named: tuple[str, ...]) -> str:
    """A model spec as the config will hold it: a named model or URL as is, a path made absolute
    (after checking it is a model)."""
    if spec in named or ":" in spec.split("/")[0]:
        return spec  # a named model, or http(s)://...; the loader checks it
    p = Path(spec)
    if not p.exists():
        raise ConfigError(
            f"{spec!r} does not exist",
            field=option,
            hint="give the folder `lmleak train` or save_pretrained wrote, a .gguf file, or smollm2-135m",
        )
    check_model_folder(p, spec, option)
    return str(p.resolve())


def _file(path: str | None, option: str, what: str) -> str | None:
    if path is None:
        return None
    if not Path(path).exists():
        raise ConfigError(f"{what} {path!r} does not exist", field=option, hint="fix the path")
    return str(Path(path).resolve())


def _str(path: str | Path | None) -> str | None:
    return None if path is None else str(path)


def _model_name(spec: str) -> str:
    """A folder-safe name for the model: its folder or file name.

    Example:
        >>> _model_name("/x/my model/"), _model_name("m.gguf"), _model_name("http://h:1/v1#m")
        ('my-model', 'm', 'api')
    """
    if ":" in spec.split("/")[0]:
        return "api"
    name = re.sub(r"[^\w.-]+", "-", Path(spec.rstrip("/")).stem).strip("-.")
    return name or "model"


@dataclass(frozen=True, slots=True)
class QuickPlan:
    """What :func:`quick_audit` writes and runs: the config (``base_dir`` the run directory), its
    file's text, the subjects to write (none: probing not configured) and the notes saying why."""

    config: AuditConfig
    text: str
    run: Path
    subjects: list[dict[str, Any]]
    subjects_path: Path | None
    notes: dict[str, str]  # analysis -> what was decided and why (comments in the file, echoed)


@dataclass(frozen=True, slots=True)
class QuickOptions:
    """The options of ``lmleak audit --model M --corpus C``.

    Attributes:
        out: the run directory (``--out``).
        public_model: a model that never saw the data, for leakage ε (``--public-model``).
        canaries: the canaries inserted into the training data (``--canaries``).
        holdout: a corpus of people the model never saw, the non-members (``--holdout``; default:
            the model's held-out users).
        redact: a redacted run (``--redact``).
    """

    out: str | Path = "audit-run"
    public_model: str | None = None
    canaries: str | Path | None = None
    holdout: str | Path | None = None
    redact: bool = False


# long: one decision per analysis (each with the note that explains it in the written config)
def plan_quick_audit(model: str, corpus: str | Path, options: QuickOptions = QuickOptions()) -> QuickPlan:
    """Check everything and decide every analysis (module docstring); writes nothing.

    Raises:
        ConfigError, CorpusError, DataFileError: a model, corpus, holdout or canaries problem, named
            by its command-line option, before any work.
    """
    out, redact = options.out, options.redact
    model_path = _model_spec(str(model), "--model", NAMED_MODELS)
    public = options.public_model
    public = None if public is None else _model_spec(public, "--public-model", PUBLIC_NAMES)
    canaries_path = _file(_str(options.canaries), "--canaries", "canaries file")
    holdout_path = _file(_str(options.holdout), "--holdout", "holdout corpus")
    corpus_path = _file(str(corpus), "--corpus", "corpus")
    assert corpus_path is not None
    run = Path(out).resolve()
    if run.exists() and not run.is_dir():
        raise ConfigError(f"{out} is a file, not a run directory", field="--out", hint="give a folder path")
    docs = load_corpus(corpus_path)  # a bad row: CorpusError with its line, before anything is written
    notes: dict[str, str] = {}

    # membership inference: people the model never saw (the stage's own builder, checked here first)
    recorded = read_holdout(model_path)  # a malformed holdout.json: DataFileError
    held = set(recorded.users) if recorded else set()
    mia: dict[str, Any] = {}
    if holdout_path is not None or held:
        sets = membership_texts(
            model_path,
            non_members=holdout_path,
            corpus=docs,
            corpus_name=corpus_path,
            load=load_corpus,
            where="--holdout" if holdout_path is not None else "--corpus",
        )
        if holdout_path is not None:
            mia["non_members"] = holdout_path
        notes["mia"] = sets.source or ""
    else:
        notes["mia"] = (
            "not run: the model records no held-out users (holdout.json) and no --holdout was given; "
            "to run it: " + quick_command(model_path, corpus_path, out=str(run), holdout="PEOPLE.jsonl")
        )

    # PII probing: the people the corpus links to their PII
    subjects, counts = build_subjects(docs, method="formats")
    probe: dict[str, Any] | None = None
    subjects_path = None
    if subjects:
        found = len(subjects)
        if found > MAX_SUBJECTS:
            import random

            subjects = sorted(
                random.Random(0).sample(subjects, MAX_SUBJECTS), key=lambda s: str(s["subject_id"])
            )
        mined = mine_templates(docs, subjects)
        templates: int | str = "mined" if any(mined.values()) else 5
        subjects_path = run.parent / f"{run.name}-{SUBJECTS_FILE}" if redact else run / SUBJECTS_FILE
        probe = {"subjects": str(subjects_path) if redact else SUBJECTS_FILE, "templates": templates}
        notes["probe"] = (
            f"{plural(found, 'subject')} linked to their PII in the corpus by its formats ({counts['twins']} with one item, "
            f"{counts['triplets']} with two, {counts['quadruplets']} with three)"
            + (f"; a seeded sample of {MAX_SUBJECTS} is probed" if found > MAX_SUBJECTS else "")
            + f"; {_people_note(subjects, held)}; {_level_note(subjects)}; templates: "
            + (
                "mined from the corpus"
                if templates == "mined"
                else "the paper's first 5 (none mined from the corpus)"
            )
            + ("; the subjects file holds PII, so it lies outside the redacted run" if redact else "")
        )
    else:
        notes["probe"] = (
            "not run: no person's name is linked to an e-mail, phone or address by the corpus's formats "
            "(Name <email>, signatures); for prose: lmleak probe build --corpus CORPUS --out subjects.jsonl "
            "--method ner, then set analyses.probe.subjects"
        )
    notes["exposure"] = (
        "canaries inserted into the training data, ranked among their candidates"
        if canaries_path
        else "not run: no --canaries (secrets inserted into the training data) given"
    )
    notes["report"] = "leaked sequences at k = 1 and 3, leaked PII by the regex policy" + (
        "" if public else "; leakage ε needs --public-model"
    )

    data: dict[str, Any] = {
        "out": ".",
        "corpus": {"path": corpus_path},
        "models": [{"name": _model_name(model_path), "path": model_path}],
        "public_model": public,
        "redact": redact,
        "analyses": {
            "report": {"k": [1, 3]},
            "exposure": {"canaries": canaries_path} if canaries_path else None,
            "mia": mia,
            "probe": probe,
        },
        "gate": {"profile": "release"},
    }
    cfg = parse_config(data, base_dir=str(run))
    command = quick_command(
        str(model),
        str(corpus),
        out=str(out),
        public_model=options.public_model,
        canaries=_str(options.canaries),
        holdout=_str(options.holdout),
        redact=redact,
    )
    return QuickPlan(cfg, config_text(cfg, notes, command, run), run, subjects, subjects_path, notes)


def _people_note(subjects: list[dict[str, Any]], held: set[str]) -> str:
    """Who the subjects are, by person (issue 32: rows are not people, and a third party found in
    someone else's documents is no member): the people by user id, the held-out ones (the
    controls), the third parties; with no held-out people, that every membership is unknown."""
    p = people_counts(subjects, {str(s["subject_id"]) for s in subjects}, held)
    third = (
        f", {plural(p['third_parties'], 'third party')} found only in other people's documents (membership unknown)"
        if p["third_parties"]
        else ""
    )
    if not held:
        return (
            f"{plural(p['people_probed'], 'person')} by user id{third}; the model records no held-out people, "
            "so every probed person's membership is unknown: made-up people and a guess from the name are "
            "the null"
        )
    return f"{plural(p['people_probed'], 'person')} by user id, {p['controls']} of them held out (the controls){third}"


def _level_note(subjects: list[dict[str, Any]]) -> str:
    """What ``level: null`` probes: the level it resolves to and how many subjects that level can
    ask about. Triplet (the paper's, chosen whenever anyone has two items) skips the people with one
    item; "43 people linked ... level null: the level they have" hid that 28 of them were not probed
    (the release summary then counted "0 of 15 probed people")."""
    # lazy: lmleak.probe.commands imports the model loaders; the level rule lives there
    from lmleak.probe.commands import choose_level, eligible_by_level

    level, _ = choose_level(subjects, None)
    eligible = eligible_by_level(subjects)
    probed, total = eligible.get(level, 0), len(subjects)
    note = f"level null: {level}, which probes {probed} of the {total}"
    if probed < total and eligible.get("twin", 0) > probed:
        note += (
            f" (the other {total - probed} have too few items for it; "
            f"`level: twin` under analyses.probe asks by the name alone and probes {eligible['twin']})"
        )
    return note


def config_for(model: str, corpus: str | Path, options: QuickOptions = QuickOptions()) -> AuditConfig:
    """The audit config ``lmleak audit --model M --corpus C`` runs (:func:`plan_quick_audit`), its
    ``base_dir`` the run directory; it names ``subjects.jsonl`` there, which :func:`quick_audit` writes."""
    return plan_quick_audit(model, corpus, options).config


#: comments beside the keys of the written config that are not a settings field's (each field's
#: is its note, :func:`~lmleak.settings.noted_lines`; each analysis's is the EXAMPLE config's)
_COMMENTS = {
    "out": "the run directory: this folder",
    "corpus.format": "null: from the file name (JSONL, CSV, Parquet, folder, HF dataset)",
    "corpus.doc_field": "optional in the data: derived stably when absent",
    "corpus.skip_bad_rows": "true: count and report bad rows instead of failing",
    "public_model": "a model that never saw the data (smollm2-135m, base, leave-out, folder): leakage ε",
    "device": "null: a GPU when torch sees one; cpu, cuda, cuda:N",
    "redact": "true: only numbers, labels and keyed-hash ids in the run",
    **{f"analyses.{name}": note for name, note in SECTION_NOTES.items()},
    **KEY_NOTES,
}
#: the column the comments start in
_COL = 34


def _emit(obj: Any, where: str, indent: str, notes: dict[str, str], lines: list[str]) -> None:
    """The fields of dataclass ``obj`` as YAML lines, each with its comment (and a note above the
    analyses :func:`plan_quick_audit` decided); a settings section's keys carry their fields' notes
    (:func:`~lmleak.settings.noted_lines`)."""
    for f in dataclasses.fields(obj):
        if f.name == "base_dir":
            continue
        key, value = f"{where}.{f.name}".strip("."), getattr(obj, f.name)
        note = notes.get(key.removeprefix("analyses."))
        if note and key.startswith("analyses."):
            lines.extend(f"{indent}# {part}" for part in _wrap(note, 96 - len(indent)))
        comment = _COMMENTS.get(key)
        if isinstance(value, Settings):
            lines.extend(commented(f"{indent}{f.name}:", comment, _COL))
            lines.extend(noted_lines(value, indent + "  ", _COL))
        elif dataclasses.is_dataclass(value):
            lines.extend(commented(f"{indent}{f.name}:", comment, _COL))
            _emit(value, key, indent + "  ", notes, lines)
        elif isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
            lines.extend(commented(f"{indent}{f.name}:", comment, _COL))
            for item in value:
                sub: list[str] = []
                _emit(item, key, indent + "    ", notes, sub)
                lines.append(f"{indent}  - " + sub[0].lstrip())
                lines.extend(sub[1:])
        else:
            lines.extend(commented(f"{indent}{f.name}: {yaml_scalar(value)}", comment, _COL))


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, max(width, 40), break_on_hyphens=False, break_long_words=False)


def config_text(cfg: AuditConfig, notes: dict[str, str], command: str, run: Path) -> str:
    """``RUN/audit.yaml``: every key of ``cfg`` with a comment, the decisions as notes, and a last
    line with the hash of the rest (a rerun of ``command`` overwrites the file only while it holds)."""
    lines = [
        "# The lmleak audit config written and run by:",
        f"#   {command}",
        "# Edit it and rerun it with:",
        f"#   lmleak audit {shlex.quote(str(run / CONFIG_FILE))}",
        "# Relative paths start at this file's folder; stages whose results are complete are skipped on a",
        "# rerun (change a stage's options and it runs again). Every key: `lmleak audit --example`.",
    ]
    _emit(cfg, "", "", notes, lines)
    body = "\n".join(lines) + "\n"
    return body + _TRAILER + hashlib.sha256(body.encode()).hexdigest() + "\n"


def _unedited(text: str) -> bool:
    """Whether ``text`` is a config :func:`config_text` wrote, unchanged since."""
    body, _, last = text.rstrip("\n").rpartition("\n")
    return (
        last.startswith(_TRAILER)
        and last[len(_TRAILER) :] == hashlib.sha256((body + "\n").encode()).hexdigest()
    )


def _subjects_text(subjects: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in subjects)


def _check_overwrite(plan: QuickPlan) -> None:
    """Refuse to overwrite a ``RUN/audit.yaml`` or subjects file changed since this command wrote it."""
    config = plan.run / CONFIG_FILE
    if config.exists() and not _unedited(config.read_text(encoding="utf-8")):
        raise ConfigError(
            f"{config} was edited (or not written by `lmleak audit --model`), so it is not overwritten",
            field="--out",
            hint=f"rerun it with `lmleak audit {config}`, or give another --out",
        )
    p = plan.subjects_path
    if p is not None and p.exists() and p.read_text(encoding="utf-8") != _subjects_text(plan.subjects):
        raise ConfigError(
            f"{p} differs from the subjects built from the corpus (edited?), so it is not overwritten",
            field="--out",
            hint=f"rerun the audit with `lmleak audit {config}`, or give another --out",
        )


def quick_audit(
    model: str,
    corpus: str | Path,
    options: QuickOptions = QuickOptions(),
    *,
    redact_key_file: str | Path | None = None,
    force: bool = False,
    echo: Callable[[str], None] | None = None,
) -> Path:
    """``lmleak audit --model M --corpus C``: check, write ``RUN/audit.yaml`` (and the subjects),
    run that file; returns the run directory (module docstring)."""
    # lazy: the runner imports every stage (models, attacks, render); quick's config builder needs none
    from lmleak.audit.runner import run_audit

    say = echo or (lambda s: None)
    plan = plan_quick_audit(model, corpus, options)
    _check_overwrite(plan)
    secure_dir(plan.run)
    if plan.subjects_path is not None:
        atomic_write_text(plan.subjects_path, _subjects_text(plan.subjects))
        read_subjects(plan.subjects_path)  # what the probe stage will read
    config = atomic_write_text(plan.run / CONFIG_FILE, plan.text)
    for analysis in ("report", "mia", "probe", "exposure"):
        say(f"{analysis}: {plan.notes[analysis]}")
    say(f"config: {config} (edit it and rerun: lmleak audit {config})")
    return run_audit(load_config(config), force=force, echo=echo, redact_key_file=redact_key_file)


def followups(run: Path, *, public_model: bool, redacted: bool) -> list[str]:
    """The two commands to run next: the gate, and a query that returns rows in this run — the
    user-unique leaked sequences, by perplexity ratio only where a public model filled it (else those
    holding PII first, then the longest), ids instead of text in a redacted run; without a leakage
    report, a table the run has."""
    # lazy: the query module is DuckDB's sandbox; only its list of the run's tables is needed here
    from lmleak.audit.query import parquet_views

    views = parquet_views(run)
    if "sequences" in views:
        col = "sequence_id" if redacted else "text"
        order = "perplexity_ratio DESC" if public_model else "len(pii_types) DESC, length_tokens DESC"
        sql = (
            f"SELECT k, {col}, length_tokens, pii_types FROM sequences WHERE users_in_d = 1 "
            f"ORDER BY {order} LIMIT 10"
        )
    else:
        known: list[str] = [t for t in ("mia_metrics", "exposure", "generations") if t in views]
        table = (known + list(views) + ["sequences"])[0]
        sql = f"SELECT * FROM {table} LIMIT 10"
    r = shlex.quote(str(run))
    return [f"lmleak gate {r} --profile release", f"lmleak query {r} {shlex.quote(sql)}"]
