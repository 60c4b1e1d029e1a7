"""Non-members: the people a model never saw, and the documents of the people it was trained on.

Membership inference needs texts of people outside the training data.
:func:`~lmleak.attacks.mia_texts.membership_sets` (re-exported here) takes them from the model's held-out users (``holdout.json`` of ``lmleak train --holdout-users``) or from a
corpus of other people (``analyses.mia.non_members`` alone, ``lmleak audit --holdout``), and the
members from the training corpus's other users — refusing a "never seen" person who is a training
user. ``lmleak mia``, the audit's mia stage (both through
:func:`~lmleak.attacks.mia_texts.membership_texts`) and ``lmleak audit --model`` (:mod:`lmleak.audit.quick`) use it; :func:`mia_fix` is the line that runs the stage for a model
with neither.
"""

from __future__ import annotations

import shlex

# re-exported: the one builder of the two sides moved to lmleak.attacks.mia_texts (issue 34)
from lmleak.attacks.mia_texts import MembershipSets as MembershipSets
from lmleak.attacks.mia_texts import cut_text as cut_text
from lmleak.attacks.mia_texts import membership_sets as membership_sets
from lmleak.audit.config import AuditConfig

#: why the mia stage is skipped for a model without held-out users when no non-members are named
NO_NON_MEMBERS = (
    "no non-members: the model records no held-out users (holdout.json) and the config names no "
    "analyses.mia.non_members (people the model never saw; with analyses.mia.members: two files)"
)


def quick_command(
    model: str,
    corpus: str,
    *,
    out: str | None = None,
    public_model: str | None = None,
    canaries: str | None = None,
    holdout: str | None = None,
    redact: bool = False,
) -> str:
    """The ``lmleak audit --model ... --corpus ...`` line for these options (shell-quoted).

    Example:
        >>> quick_command("my model", "c.jsonl", holdout="PEOPLE.jsonl")
        "lmleak audit --model 'my model' --corpus c.jsonl --holdout PEOPLE.jsonl"
    """
    parts = ["lmleak", "audit", "--model", model, "--corpus", corpus]
    for option, value in (
        ("--out", out),
        ("--public-model", public_model),
        ("--canaries", canaries),
        ("--holdout", holdout),
    ):
        if value is not None:
            parts += [option, value]
    return shlex.join(parts + (["--redact"] if redact else []))


def mia_fix(cfg: AuditConfig, model_path: str) -> str:
    """The line that runs membership inference for a model that records no held-out users: the same
    audit with ``--holdout`` (a corpus of people the model never saw), or its config key."""
    line = quick_command(
        model_path,
        cfg.resolve(cfg.corpus.path),
        out=cfg.resolve(cfg.out),
        public_model=cfg.resolve(cfg.public_model),
        canaries=None if cfg.analyses.exposure is None else cfg.resolve(cfg.analyses.exposure.canaries),
        holdout="PEOPLE.jsonl",
        redact=cfg.redact,
    )
    return (
        f"`{line}` (PEOPLE.jsonl: documents of people the model never saw, in the corpus's format), or in "
        "the config `analyses.mia.non_members: PEOPLE.jsonl`, or retrain with `lmleak train --holdout-users 0.1`"
    )
