"""Where the texts of a membership run come from (paper 002 A.4; issue 26): two files of member and
non-member texts (:func:`read_texts`), or one corpus split by the users a model held out of
training (its ``holdout.json``), each document cut to its first :data:`CANDIDATE_WORDS` words and
kept with its user, so that every interval, fold and half of :mod:`lmleak.attacks.membership` is
drawn over people.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.holdout import read_holdout
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
    out: tuple[list[str], list[str]] = ([], [])
    held = set(held_out)
    for d in documents:
        out[1 if d.user_id in held else 0].append(first_words(d.text, max_words))
    return out


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


def membership_texts(
    model: str | Path,
    *,
    members: str | Path | None = None,
    non_members: str | Path | None = None,
    corpus: str | Path | None = None,
    field: str = "text",
) -> MembershipTexts:
    """Members and non-members from two files, or else from ``corpus`` split by the users ``model``
    (a folder from ``lmleak train``) held out, with each side's users for the blind baseline's folds.

    Raises:
        ConfigError: neither both files nor a corpus and a model with held-out users.
        DataFileError: a bad line in a file (:func:`read_texts`).
    """
    if members is not None and non_members is not None:
        mem, mem_users = read_texts_and_users(members, field=field)
        non, non_users = read_texts_and_users(non_members, field=field)
        return MembershipTexts(mem, non, groups=user_groups(members, mem_users, non_members, non_users))
    if corpus is not None and not Path(corpus).exists():  # named before what the model folder lacks
        raise CorpusError("no such file or folder", path=corpus, field="--corpus", hint="check the path")
    holdout = read_holdout(model)
    if corpus is None or holdout is None or not holdout.users:
        raise ConfigError(
            "no member / non-member texts: give --members and --non-members, or --corpus with a model "
            "trained by `lmleak train` (its holdout.json names the users it never saw)",
            field="--members",
            hint="retrain with --holdout-users 0.1, or write the two files",
        )
    mem, non, mem_users, non_users = split_users_by_holdout(iter_documents(corpus), holdout.users)
    source = _holdout_source(len(mem), len(non), len(holdout.users))
    return MembershipTexts(mem, non, source, (mem_users, non_users))


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
