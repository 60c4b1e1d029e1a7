"""Non-members: the people a model never saw, and the documents of the people it was trained on.

Membership inference needs texts of people outside the training data. :func:`membership_sets` takes
them from the model's held-out users (``holdout.json`` of ``lmleak train --holdout-users``) or from a
corpus of other people (``analyses.mia.non_members`` alone, ``lmleak audit --holdout``), and the
members from the training corpus's other users — refusing a "never seen" person who is a training
user. The audit's mia stage (:mod:`lmleak.audit.runner`) and ``lmleak audit --model``
(:mod:`lmleak.audit.quick`) use it; :func:`mia_fix` is the line that runs the stage for a model
with neither.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from lmleak.attacks.membership import CANDIDATE_WORDS
from lmleak.attacks.mia_texts import first_words
from lmleak.audit.config import AuditConfig
from lmleak.data.corpus import Document
from lmleak.errors import ConfigError
from lmleak.words import plural

#: why the mia stage is skipped for a model without held-out users when no non-members are named
NO_NON_MEMBERS = (
    "no non-members: the model records no held-out users (holdout.json) and the config names no "
    "analyses.mia.non_members (people the model never saw; with analyses.mia.members: two files)"
)


@dataclass(frozen=True, slots=True)
class MembershipSets:
    """The two sides of a membership run and each text's user (aligned), and where they came from."""

    members: list[str]
    non_members: list[str]
    member_users: list[str]
    non_member_users: list[str]
    source: str


def cut_text(doc: Document) -> str:
    """A document as a membership candidate: its first :data:`~lmleak.attacks.membership.CANDIDATE_WORDS` words."""
    return first_words(doc.text, CANDIDATE_WORDS)


# long: a doctest and three refusals, each naming its fix; the split itself is a 12-line loop
def membership_sets(
    corpus: Iterable[Document],
    held_out: Collection[str],
    never_seen: Iterable[Document] | None = None,
    *,
    corpus_name: str = "the corpus",
    never_seen_name: str = "the non-members file",
    field: str = "analyses.mia.non_members",
    trained_on: str | None = None,
) -> MembershipSets:
    """Members and non-members from people the model never saw, each text cut to its first
    :data:`~lmleak.attacks.membership.CANDIDATE_WORDS` words (as :func:`~lmleak.attacks.membership.split_by_holdout`).

    Members are the documents of the corpus's users outside ``held_out`` (the users the model was
    trained on). Non-members are the documents of ``never_seen`` when given (a corpus of other
    people), else the corpus's documents of the ``held_out`` users.

    Example:
        >>> docs = [Document("u1", "a", "x y"), Document("u2", "b", "p q"), Document("u3", "c", "r")]
        >>> s = membership_sets(docs, ["u2"])
        >>> s.members, s.non_members, s.member_users, s.non_member_users
        (['x y', 'r'], ['p q'], ['u1', 'u3'], ['u2'])
        >>> membership_sets(docs, [], [Document("u3", "d", "s t")])
        Traceback (most recent call last):
        ...
        lmleak.errors.ConfigError: field 'analyses.mia.non_members': 1 person of the non-members file is a user the model was trained on (u3): they write in the corpus and the model records no held-out users, so every user of the corpus counts as trained on. Fix: non-members must be people the model never saw: drop them (or rename their user ids if they are other people); if the model never saw them, audit a corpus without their documents (the one it was trained on)

    ``trained_on``: the corpus the model's ``holdout.json`` records, named when no held-out user is
    in ``corpus``.

    Raises:
        ConfigError: a never-seen person who is a training user; no member or no non-member text.
    """
    held = set(held_out)
    mem: list[str] = []
    mem_users: list[str] = []
    non: list[str] = []
    non_users: list[str] = []
    for d in corpus:
        if d.user_id in held:
            if never_seen is None:
                non.append(cut_text(d))
                non_users.append(d.user_id)
            continue
        mem.append(cut_text(d))
        mem_users.append(d.user_id)
    if never_seen is not None:
        trained = set(mem_users)
        for d in never_seen:
            non.append(cut_text(d))
            non_users.append(d.user_id)
        both = sorted(set(non_users) & trained)
        if both:
            people = "person" if len(both) == 1 else "people"
            # what lmleak knows is that they write in the corpus and are not held out; a model behind
            # an API records no held-out users, so a corpus that still holds them reads as "trained on"
            why = (
                "the model records no held-out users, so every user of the corpus counts as trained on"
                if not held
                else "the model's holdout.json does not hold them out"
            )
            raise ConfigError(
                f"{len(both)} {people} of {never_seen_name} {'is a user' if len(both) == 1 else 'are users'} "
                f"the model was trained on ({', '.join(both[:3])}{', ...' if len(both) > 3 else ''}): "
                f"they write in {corpus_name} and {why}",
                field=field,
                hint="non-members must be people the model never saw: drop them (or rename their user ids "
                "if they are other people); if the model never saw them, audit a corpus without their "
                "documents (the one it was trained on)",
            )
    if not non:
        raise ConfigError(
            f"none of the {plural(len(held), 'user')} the model held out (holdout.json) writes in {corpus_name}",
            field=field,
            hint="audit with the corpus the model was trained on"
            + (f" (holdout.json records {trained_on})" if trained_on else ""),
        )
    if not mem:
        raise ConfigError(
            f"every user of {corpus_name} is held out: the model was trained on none of its documents",
            field=field,
            hint="audit with the corpus the model was trained on",
        )
    if never_seen is None:
        source = (
            f"non-members: {plural(len(non), 'document')} of the {plural(len(set(non_users)), 'user')} held out "
            f"of training (holdout.json); members: {plural(len(mem), 'document')} of the "
            f"{plural(len(set(mem_users)), 'user')} trained on"
        )
    else:
        source = (
            f"non-members: {plural(len(non), 'document')} of the {plural(len(set(non_users)), 'person')} of "
            f"{never_seen_name}, none of them a training user; members: {plural(len(mem), 'document')} of the "
            f"{plural(len(set(mem_users)), 'user')} trained on"
        )
    return MembershipSets(mem, non, mem_users, non_users, source)


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
