"""Where the texts of a membership run come from (paper 002 A.4; issue 26): two files of member and
non-member texts (:func:`read_texts`), or one corpus split by the users a model held out of
training (its ``holdout.json``), each document cut to its first :data:`CANDIDATE_WORDS` words and
kept with its user, so that every interval, fold and half of :mod:`lmleak.attacks.membership` is
drawn over people.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Document
from lmleak.data.holdout import check_known_people, document_counts, read_holdout
from lmleak.data.loaders import iter_documents
from lmleak.data.sidefiles import read_side_file
from lmleak.data.user_ids import Collision, canonical_ids
from lmleak.errors import ConfigError, CorpusError, DataFileError
from lmleak.jsonl import iter_jsonl
from lmleak.words import plural


def read_texts(path: str | Path, *, field: str = "text") -> list[str]:
    """Read member / non-member texts: JSONL objects with ``field``, or plain text, one per line.

    A file is JSONL when its name ends in ``.jsonl``/``.json`` or its first non-blank line starts
    with ``{``. Blank lines are skipped in plain text; in JSONL every line must be an object with a
    non-empty string ``field``.

    Raises:
        DataFileError: with the path, line and field of the first bad line.
    """
    p = Path(path)
    lines = read_side_file(p, hint="give a JSONL file with a 'text' field or a text file").splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    is_jsonl = p.suffix in {".jsonl", ".json"} or first.lstrip().startswith("{")
    out: list[str] = [] if is_jsonl else [ln for ln in lines if ln.strip()]
    for i, obj in iter_jsonl(p, hint=f'write {{"{field}": "..."}} per line') if is_jsonl else ():
        val = obj.get(field)
        if not isinstance(val, str) or not val.strip():
            raise DataFileError(
                "missing or empty",
                path=p,
                line=i,
                field=field,
                hint=f"every line needs a non-empty string '{field}' (or use --field)",
            )
        out.append(val)
    if not out:
        raise DataFileError(
            "no texts in file", path=p, hint="one text per line, or JSONL with a 'text' field"
        )
    return out


#: Words of a document kept as its candidate text when members and non-members come from a corpus
#: (a digest of 40k tokens is not a "text" an attacker tests; its opening is).
CANDIDATE_WORDS = 200

_WORD = re.compile(r"\S+")


def first_words(text: str, max_words: int = CANDIDATE_WORDS) -> str:
    r"""The opening of ``text`` up to the end of its ``max_words``-th word, whitespace kept as written.

    Subtle: the candidate must be the text the model was trained on, byte for byte. Joining the
    words with single spaces (as lmleak did before) turns every newline of an e-mail or a dialogue
    into a space, so the attack scored texts the model never saw in that form and understated
    membership (docs/membership.md, "Candidate texts").

    Example:
        >>> first_words("From: a@example.org\nTo: b\n\nHi  there", 4)
        'From: a@example.org\nTo: b'
        >>> first_words("  short text\n", 200)
        '  short text\n'
    """
    end = None
    for i, m in enumerate(_WORD.finditer(text)):
        if i + 1 == max_words:
            end = m.end()
            break
    if end is None or end == len(text.rstrip()):
        return text
    return text[:end]


def split_by_holdout(
    documents: Any, held_out: Sequence[str], *, max_words: int = CANDIDATE_WORDS
) -> tuple[list[str], list[str]]:
    """Members and non-members from a corpus: documents of users the model was trained on, and of
    the users it held out (``holdout.json``), each cut to its first ``max_words`` words
    (:func:`first_words`: whitespace as written, so a member is the text the model was trained on).

    Example:
        >>> from lmleak.data.corpus import Document
        >>> docs = [Document("u1", "a", "x y z"), Document("u2", "b", "p q"), Document("u3", "c", "m n o")]
        >>> split_by_holdout(docs, ["u2"], max_words=2)
        (['x y', 'm n'], ['p q'])
    """
    mem, non, _, _ = split_users_by_holdout(documents, held_out, max_words=max_words)
    return mem, non


def split_users_by_holdout(
    documents: Any, held_out: Sequence[str], *, max_words: int = CANDIDATE_WORDS
) -> tuple[list[str], list[str], list[str], list[str]]:
    """:func:`split_by_holdout` with each text's user: (members, non-members, their users, in order).

    Example:
        >>> from lmleak.data.corpus import Document
        >>> docs = [Document("u1", "a", "x y z"), Document("u2", "b", "p q")]
        >>> split_users_by_holdout(docs, ["u2"])
        (['x y z'], ['p q'], ['u1'], ['u2'])
    """
    texts: tuple[list[str], list[str]] = ([], [])
    users: tuple[list[str], list[str]] = ([], [])
    held = set(held_out)
    for d in documents:
        side = 1 if d.user_id in held else 0
        texts[side].append(first_words(d.text, max_words))
        users[side].append(d.user_id)
    return texts[0], texts[1], users[0], users[1]


def members_from_holdout(model_dir: str | Path, documents: Any) -> tuple[list[str], list[str], str]:
    """Members and non-members of a model trained by ``lmleak train``: the corpus documents of the
    users it held out (its ``holdout.json``) are the non-members, the other users' the members.

    Returns ``(members, non_members, source)``, ``source`` saying where the two sides came from.

    Raises:
        ConfigError: the model folder records no held-out users.
    """
    holdout = read_holdout(model_dir)
    if holdout is None or not holdout.users:
        raise ConfigError(
            f"{model_dir}: the model records no held-out users (holdout.json), so there are no non-members",
            field="--members",
            hint="give members and non-members files, or retrain with --holdout-users 0.1",
        )
    mem, non = split_by_holdout(documents, holdout.users)
    return mem, non, _holdout_source(len(mem), len(non), len(holdout.users))


@dataclass
class MembershipTexts:
    """The two sides of a membership run, where they came from, and (split by user) their users."""

    members: list[str]
    non_members: list[str]
    source: str | None = None  # None: the two files given
    groups: tuple[list[str], list[str]] | None = None  # each side's users, aligned with the texts


def read_texts_and_users(path: str | Path, *, field: str = "text") -> tuple[list[str], list[str] | None]:
    """:func:`read_texts` and, when every line of a JSONL file names its ``user_id``, each text's
    user (else None): a membership run over two files then groups texts by person, as a split by
    ``holdout.json`` does, and the audit's users.parquet gets a score per person.

    Raises:
        DataFileError: a bad text (:func:`read_texts`), ``user_id`` on some lines but not all, or a
            ``user_id`` that is neither a string nor an integer (a float, a boolean, a list).

    Example:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "m.jsonl"
        >>> _ = f.write_text('{"text": "a", "user_id": "u1"}\\n{"text": "b", "user_id": 7}\\n')
        >>> read_texts_and_users(f)
        (['a', 'b'], ['u1', '7'])
    """
    texts = read_texts(path, field=field)
    p = Path(path)
    first = next((ln for ln in read_side_file(p, hint="").splitlines() if ln.strip()), "")
    if not (p.suffix in {".jsonl", ".json"} or first.lstrip().startswith("{")):
        return texts, None
    users: list[str | None] = []
    lines: list[int] = []
    for i, obj in iter_jsonl(p, hint='write {"text": "...", "user_id": "..."} per line'):
        lines.append(i)
        uid = obj.get("user_id")
        # a string or an integer names one person; 7.0 and 7 (or true, a list) would be two groups
        if uid is not None and (isinstance(uid, bool) or not isinstance(uid, str | int)):
            raise DataFileError(
                f"expected a string, got {type(uid).__name__}",
                path=p,
                line=i,
                field="user_id",
                hint='quote the value: "user_id": "u17"',
            )
        users.append(None if uid is None or (isinstance(uid, str) and not uid.strip()) else str(uid))
    named = [i for i, u in enumerate(users) if u is not None]
    if not named:
        return texts, None
    if len(named) < len(users):
        line = next(i for i, u in enumerate(users) if u is None) + 1
        raise DataFileError(
            f"user_id on {len(named)} of {len(users)} lines",
            path=p,
            line=line,
            field="user_id",
            hint="give every line its user_id (texts are then grouped by person), or none",
        )
    return texts, _canonical_users([u for u in users if u is not None], lines, p)


def _canonical_users(users: list[str], lines: list[int], path: Path) -> list[str]:
    """The canonical ids of a file's users (:mod:`lmleak.data.user_ids`): ``Alice`` and ``alice `` are one
    person; two spellings under ``--user-ids strict``, or an id of only invisible characters: DataFileError."""
    try:
        ids = canonical_ids(users, source=str(path), where=list(lines))
    except Collision as e:
        line = e.second_at if isinstance(e.second_at, int) else None
        raise DataFileError(str(e), path=path, line=line, field="user_id", hint=Collision.HINT) from None
    empty = next((i for i, u in enumerate(ids) if not u), None)
    if empty is not None:
        raise DataFileError(
            "user id is empty (only spaces or invisible format characters)",
            path=path,
            line=lines[empty],
            field="user_id",
            hint="give every line its user_id, or none",
        )
    return ids


def user_groups(
    members: str | Path, mem_users: list[str] | None, non_members: str | Path, non_users: list[str] | None
) -> tuple[list[str], list[str]] | None:
    """Both sides' users when both files name them (else None), refusing a person on both sides: a
    member is someone the model trained on, a non-member someone it never saw.

    Raises:
        DataFileError: a user id in both files (the first few named).

    Example:
        >>> user_groups("m.jsonl", ["a", "b"], "n.jsonl", ["c"])
        (['a', 'b'], ['c'])
        >>> user_groups("m.jsonl", ["a", "b"], "n.jsonl", None) is None
        True
    """
    if mem_users is None or non_users is None:
        return None
    both = sorted(set(mem_users) & set(non_users))
    if both:
        shown = ", ".join(both[:3]) + (", ..." if len(both) > 3 else "")
        raise DataFileError(
            f"{plural(len(both), 'user')} in both {Path(members).name} and this file ({shown})",
            path=non_members,
            field="user_id",
            hint="a member is a person the model trained on and a non-member one it never saw: keep each "
            "person on one side",
        )
    return mem_users, non_users


@dataclass(frozen=True, slots=True)
class MembershipSets:
    """The two sides of a membership run and each text's user (aligned), and where they came from."""

    members: list[str]
    non_members: list[str]
    member_users: list[str]
    non_member_users: list[str]
    source: str


def cut_text(doc: Document) -> str:
    """A document as a membership candidate: its first :data:`CANDIDATE_WORDS` words."""
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
    :data:`CANDIDATE_WORDS` words (as :func:`split_by_holdout`).

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
    mem, non, mem_users, non_users = split_users_by_holdout(corpus, list(held))
    if never_seen is not None:  # the held-out users' documents give way to the never-seen people's
        trained = set(mem_users)
        seen = list(never_seen)
        non, non_users = [cut_text(d) for d in seen], [d.user_id for d in seen]
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


# long: the three ways to the two sides, each refusal naming its fix; the work is membership_sets'
def membership_texts(
    model: str | Path,
    *,
    members: str | Path | None = None,
    non_members: str | Path | None = None,
    corpus: str | Path | Iterable[Document] | None = None,
    field: str = "text",
    corpus_name: str | None = None,
    load: Callable[[str | Path], Iterable[Document]] | None = None,
    where: str | None = None,
) -> MembershipTexts:
    """The two sides of a membership run, the one builder of ``lmleak mia`` and the audit's mia stage
    (issue 34): two files (``members`` and ``non_members``: each line a text, grouped by person when
    every line names its ``user_id``); else the training ``corpus``'s users the model (a folder from
    ``lmleak train``) was trained on as the members, and as the non-members the people of
    ``non_members`` alone (a corpus of people it never saw) or its held-out users (``holdout.json``),
    by :func:`membership_sets`, with each side's users for the blind baseline's folds.

    ``corpus`` is a path (read by ``load``, default :func:`~lmleak.data.loaders.iter_documents` with
    ``field``) or the documents already loaded; ``corpus_name`` names it in the source (default: the
    path); ``load`` also reads a never-seen corpus. ``where`` is the option or config key a refusal
    names (default: ``--non-members`` with a never-seen corpus, else ``--corpus``).

    Raises:
        ConfigError: neither both files nor a corpus with a never-seen corpus or a model with held-out
            users; a never-seen person who is a training user; an empty side.
        DataFileError: a bad line in a file (:func:`read_texts`).
    """
    if members is not None and non_members is not None:
        mem, mem_users = read_texts_and_users(members, field=field)
        non, non_users = read_texts_and_users(non_members, field=field)
        return MembershipTexts(mem, non, groups=user_groups(members, mem_users, non_members, non_users))
    if corpus is None and non_members is not None:
        raise ConfigError(
            "--non-members alone names people the model never saw; the members come from the training corpus",
            field="--non-members",
            hint="give --corpus C (the corpus the model was trained on), or --members too (two files)",
        )
    if isinstance(corpus, str | Path) and not Path(corpus).exists():  # named before what the model lacks
        raise CorpusError("no such file or folder", path=corpus, field="--corpus", hint="check the path")
    holdout = read_holdout(model)
    if corpus is None or (non_members is None and (holdout is None or not holdout.users)):
        raise ConfigError(
            "no member / non-member texts: give --members and --non-members, or --corpus with a model "
            "trained by `lmleak train` (its holdout.json names the users it never saw)",
            field="--members",
            hint="retrain with --holdout-users 0.1, or write the two files",
        )
    read = load or (lambda path: iter_documents(path, text_field=field))
    documents = read(corpus) if isinstance(corpus, str | Path) else corpus
    if corpus_name is None:  # a path as given, else a loaded corpus's source
        corpus_name = (
            str(corpus) if isinstance(corpus, str | Path) else getattr(corpus, "source", None) or "the corpus"
        )
    sets = membership_sets(
        documents,
        holdout.users if holdout else (),
        None if non_members is None else read(non_members),
        corpus_name=corpus_name,
        never_seen_name=str(non_members),
        field=where or ("--non-members" if non_members is not None else "--corpus"),
        trained_on=holdout.corpus if holdout else None,
    )
    check_known_people(  # nobody on the members' side whom the model's records leave out
        model,
        set(sets.member_users),
        corpus_name=corpus_name,
        field="corpus.path" if where else "--corpus",
        never_seen=sets.non_member_users if non_members is not None else (),
        never_seen_name=str(non_members),
        never_seen_field=where or "--non-members",
        documents=document_counts(sets.member_users),
    )
    return MembershipTexts(
        sets.members, sets.non_members, sets.source, (sets.member_users, sets.non_member_users)
    )


def _holdout_source(members: int, non_members: int, held_out_users: int) -> str:
    """Where the two sides of a split by ``holdout.json`` came from, in words.

    Example:
        >>> _holdout_source(40, 12, 3)
        'non-members: 12 documents of the 3 users held out of training (holdout.json); members: 40 documents of the other users'
    """
    return (
        f"non-members: {plural(non_members, 'document')} of the {plural(held_out_users, 'user')} held out of "
        f"training (holdout.json); members: {plural(members, 'document')} of the other users"
    )
