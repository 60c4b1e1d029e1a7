"""Null models: models that never saw the audited people, to measure what the verdict says of them.

A release verdict is a statistical decision (docs/verdict.md): it must Fail a model that leaks the
people it was trained on, and must not Fail a model that never saw them. The second half needs a
*null model*, a model of the same recipe trained only on other people, audited exactly as the real
model is, against the same corpus and the same held-out people. Whatever it "leaks" there — template
text, mailing-list headers, dates that every mail-trained model predicts — is generalisation, and a
verdict that fails it fails for no reason.

:func:`null_model` trains one: the training corpus is ``other`` (its user ids renamed so that none
names an audited person), and the model's ``holdout.json`` records the audited corpus's held-out
people, as the real model's does. ``lmleak audit --model NULL --corpus AUDITED`` then treats the
audited corpus's other people as trained on, which they were not; its ``train.json`` says so under
``null_model`` (:data:`~lmleak.data.holdout.NULL_MODEL_KEY`), which is what lets the audit take them
as trained on (:func:`~lmleak.data.holdout.check_known_people` refuses such people for any other
model). ``benchmarks/bench_verdict.py`` audits several null models and several leaking models of
each size and prints the verdict's error rates; ``lmleak selftest`` audits one.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Corpus, Document
from lmleak.data.holdout import NULL_MODEL_KEY, TRAIN_FILE, Holdout, write_holdout
from lmleak.runs import atomic_write_json
from lmleak.train.config import TrainConfig

#: the prefix given to the other people's user ids (no audited id starts with it)
OTHER_PREFIX = "other-"


def renamed_people(corpus: Corpus, prefix: str = OTHER_PREFIX) -> Corpus:
    """``corpus`` with every user id (and document id) prefixed, so that none collides with another
    corpus's people: two synthetic corpora of different seeds both call their first author ``a-0000``.

    Example:
        >>> c = renamed_people(Corpus([Document("a-0000", "m0", "hi")]))
        >>> [(d.user_id, d.doc_id) for d in c]
        [('other-a-0000', 'other-m0')]
    """
    docs = [Document(prefix + d.user_id, prefix + d.doc_id, d.text) for d in corpus]
    return Corpus(docs, source=corpus.source)


def null_model(
    other: Corpus,
    out_dir: str | Path,
    held_out: Collection[str],
    *,
    audited_corpus: str | None = None,
    config: Any = None,
    progress: bool = False,
) -> Path:
    """Train a model on ``other`` people only and record ``held_out`` (audited people) as its
    held-out users: the null model of an audit whose real model holds out the same people.

    Args:
        other: the training corpus: people who are none of the audited ones (ids renamed here).
        out_dir: the model folder (as ``lmleak train --out``).
        held_out: the audited corpus's held-out user ids (the real model's ``holdout.json``).
        audited_corpus: the audited corpus's path, recorded in ``holdout.json``.
        config: a :class:`~lmleak.train.config.TrainConfig`; its ``holdout_users`` is set to 0 (the
            model trains on all of ``other``).

    Returns:
        ``out_dir``.
    """
    # lazy: training loads torch, and the verdict helpers below need none of it
    from lmleak.train.trainer import train_model

    cfg = replace(config or TrainConfig(), holdout_users=0.0)
    out = Path(out_dir)
    train_model(renamed_people(other), out, cfg, progress=progress)
    record = json.loads((out / TRAIN_FILE).read_text(encoding="utf-8"))
    record[NULL_MODEL_KEY] = {
        "trained_on": f"{len(other.users)} other people (user ids prefixed {OTHER_PREFIX!r})",
        "stands_in_for": "a model trained on the audited corpus's people outside holdout.json",
        "audited_corpus": audited_corpus,
    }
    atomic_write_json(out / TRAIN_FILE, record)
    write_holdout(out, Holdout(tuple(sorted(held_out)), 0.0, cfg.seed, audited_corpus))
    return out


def held_out_people(corpus: Corpus, fraction: float, seed: int) -> tuple[str, ...]:
    """The users ``lmleak train --holdout-users FRACTION --seed SEED`` holds out of ``corpus``
    (the same draw), sorted: a null model's claimed held-out people without training the real model."""
    # lazy: the trainer module loads torch
    from lmleak.train.trainer import split_users

    _, held = split_users(corpus, fraction, seed)
    return tuple(sorted(held.users)) if held is not None else ()


def release_status(run: str | Path) -> tuple[str, list[dict[str, Any]]]:
    """The release profile's verdict of a one-model run: its status (``pass``, ``fail``,
    ``inconclusive``, ``not_evaluable``) and the gate's rows (``lmleak gate RUN --profile release``)."""
    # lazy: the gate reads the render layer, which a training-only caller never needs
    from lmleak.audit.gate import gate_run

    verdict = gate_run(run, {}, profile="release")
    rows = [c.to_dict() for c in verdict.checks]
    models = sorted({c.model for c in verdict.checks})
    statuses = {verdict.model_status(m) for m in models}
    for status in ("fail", "inconclusive", "not_evaluable", "pass"):
        if status in statuses:
            return status, rows
    return "no_limits", rows


def audit_release(model: str | Path, corpus: str | Path, run: str | Path) -> tuple[str, list[dict[str, Any]]]:
    """``lmleak audit --model MODEL --corpus CORPUS --out RUN``, then :func:`release_status` of the run."""
    # lazy: the quick audit imports every stage (models, attacks, render)
    from lmleak.audit.quick import QuickOptions, quick_audit

    quick_audit(str(model), corpus, QuickOptions(out=run), force=True)
    return release_status(run)
