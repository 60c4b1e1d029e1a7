"""A single-analysis command as a one-stage audit (issue 34 item 2: one path per analysis).

``lmleak mia`` runs what the audit's mia stage runs: the two sides from the one builder
(:func:`~lmleak.attacks.mia_texts.membership_texts`), :func:`~lmleak.attacks.membership.run_membership`
into the run folder, and ``users.parquet`` beside it (:func:`~lmleak.report.users.users_beside`), as the
audit writes it into the model's folder. ``tests/contracts/test_single_vs_audit.py`` holds each
command's summary to its stage's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmleak.attacks.membership import membership_of_model
from lmleak.attacks.mia_settings import MembershipSettings
from lmleak.attacks.mia_texts import MembershipTexts
from lmleak.data.loaders import load_corpus
from lmleak.report.redaction import Redactor, write_run
from lmleak.report.users import users_beside
from lmleak.shards import ShardEngine


def membership_command(
    model: str,
    out_dir: str | Path,
    settings: MembershipSettings,
    *,
    texts: MembershipTexts | None = None,
    engine: ShardEngine | None = None,
    echo: Callable[[str], None] | None = None,
    redact: bool = False,
    key_file: str | Path | None = None,
) -> dict[str, Any]:
    """The work of ``lmleak mia``: :func:`~lmleak.attacks.membership.membership_of_model` into
    ``out_dir`` (redacted with ``redact``, :func:`~lmleak.report.redaction.write_run`), then
    ``users.parquet`` from its scores, every user of ``settings.corpus`` a row when one is given.
    Returns the run's summary (its ``users`` the record of ``users.parquet``)."""

    def produce(folder: Path) -> None:
        membership_of_model(model, folder, settings, texts=texts, engine=engine, echo=echo)

    corpus = settings.corpus
    after = users_after("mia", model, corpus=load_corpus(corpus) if corpus is not None else None)
    summary: dict[str, Any] = write_run(out_dir, produce, redact=redact, key_file=key_file, after=after)
    return summary


def users_after(
    stage: str, model: str, *, corpus: Any = None, subjects: str | Path | None = None
) -> Callable[[Path, Redactor | None], dict[str, Any]]:
    """:func:`~lmleak.report.redaction.write_run`'s last step for a single ``stage`` run of ``model``:
    ``users.parquet`` beside the stage's files, built from the (redacted) files with the corpus's and
    the subjects' ids hashed under the run's key, the audit's way (every user of ``corpus`` a row;
    the model's held-out users from its ``holdout.json``)."""
    model_dir = model if Path(model).is_dir() else None

    def users(folder: Path, redactor: Redactor | None) -> dict[str, Any]:
        return users_beside(
            folder,
            stage,
            corpus=corpus,
            model_dir=model_dir,
            subjects=subjects,
            redactor=redactor,
            redacted=redactor is not None,
        )

    return users
