"""People's ids, compared as people: one person spelt two ways is one user (issue 33).

A user id is the unit of every guarantee lmleak states — ε "per person", membership "per person",
leaked PII "whose" — so ``alice``, ``Alice``, ``alice `` and a zero-width-prefixed ``alice`` must be
one person, not four people each granted their own ε. Every reader of a user id (the corpus
loaders, ``holdout.json``, subjects files, member / non-member files) passes it through
:func:`normalise_user_id`:

1. remove the format characters (Unicode category ``Cf``: zero-width space, joiners, the BOM,
   bidirectional marks), which are invisible and never part of a name;
2. NFKC (compatibility composition: ``josé`` in NFD and NFC, full-width ``ａｌｉｃｅ``, the ``ﬁ``
   ligature become one spelling), then case folding (``str.casefold``: ``Alice`` -> ``alice``,
   ``STRASSE`` and ``straße`` -> ``strasse``), then NFKC again (case folding can leave a string that
   is not NFKC; the Unicode standard's NFKC_Casefold does the same);
3. trim whitespace at both ends (inner spaces are kept: ``ann lee`` is not ``annlee``).

**The canonical id is the normalised form**, not the first spelling seen: it is the same whichever
file is read first and whichever order its rows come in, so a ``holdout.json`` written from one
corpus, a subjects file and a members file written by hand all name the same person without a
table of spellings travelling between them. Results therefore show ``alice`` for a corpus that
wrote ``Alice``.

What happens to spellings that collide is a :data:`POLICIES` choice, set once per process
(``lmleak --user-ids strict``, ``LMLEAK_USER_IDS=strict``, or :func:`use_user_id_policy`):

- ``merge`` (the default): the spellings are one user, and one line on stderr names them (a redacted
  command's line gives only the counts: its console output names no id);
- ``strict``: the second spelling is refused (:class:`~lmleak.errors.CorpusError` or
  :class:`~lmleak.errors.DataFileError`, exit 2) naming both spellings and where they were read.

An id that is empty after normalisation (only spaces and zero-width characters) is refused as an
empty id.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field

from lmleak.runs import current_run

#: What to do when two spellings normalise to one id.
POLICIES = ("merge", "strict")
#: The environment variable that sets the policy when no option does.
POLICY_ENV = "LMLEAK_USER_IDS"
#: What :func:`normalise_user_id` does, in the words privacy.json records.
NORMALISATION = "format characters removed, NFKC, case-folded, trimmed"
#: Groups of spellings named in one merge line before "and N more".
SHOWN_GROUPS = 4

_POLICY: contextvars.ContextVar[str | None] = contextvars.ContextVar("lmleak_user_ids", default=None)
_said: set[str] = set()  # merge lines already printed by this process (a corpus is read many times)
_hidden = False  # a redacted command: merge lines give counts, not ids (hide_user_ids)


def hide_user_ids(hidden: bool = True) -> None:
    """Merge lines name no id from now on in this process (a ``--redact`` command: its console output
    holds no plain id); they still say how many spellings of how many ids were merged."""
    global _hidden
    _hidden = hidden


def normalise_user_id(user_id: str) -> str:
    """The canonical form of a user id (see the module docstring for the steps and why).

    Example:
        >>> [normalise_user_id(s) for s in ("alice", "Alice", "alice ", "\\u200balice")]
        ['alice', 'alice', 'alice', 'alice']
        >>> normalise_user_id("jose\\u0301") == normalise_user_id("jos\\u00e9") == "jos\\u00e9"
        True
        >>> normalise_user_id("  Ann  Lee\\t"), normalise_user_id("\\uff35\\uff11")
        ('ann  lee', 'u1')
    """
    visible = "".join(ch for ch in user_id if unicodedata.category(ch) != "Cf")
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", visible).casefold())
    return folded.strip()


def user_id_policy() -> str:
    """The policy in force: :func:`use_user_id_policy`'s, else ``$LMLEAK_USER_IDS``, else ``merge``."""
    chosen = _POLICY.get()
    if chosen is not None:
        return chosen
    env = os.environ.get(POLICY_ENV, "").strip().lower()
    return env if env in POLICIES else "merge"


@contextlib.contextmanager
def use_user_id_policy(policy: str) -> Iterator[None]:
    """Inside the block, colliding spellings are merged or refused (``lmleak --user-ids``).

    Raises:
        ValueError: a policy not in :data:`POLICIES` (the CLI checks the option first).
    """
    if policy not in POLICIES:
        raise ValueError(f"user id policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    token = _POLICY.set(policy)
    try:
        yield
    finally:
        _POLICY.reset(token)


def shown(spelling: str) -> str:
    """A spelling as an error line shows it: ``repr``, or ``ascii`` when the difference would be
    invisible (a zero-width or combining character).

    Example:
        >>> shown("Alice"), shown("\\u200balice"), shown("jose\\u0301")
        ("'Alice'", "'\\\\u200balice'", "'jose\\\\u0301'")
    """
    plain = spelling.isprintable() and unicodedata.normalize("NFC", spelling) == spelling
    return repr(spelling) if plain else ascii(spelling)


@dataclass
class UserIds:
    """The spellings of user ids one reader has met: each canonical id -> its spellings in order,
    and where (a line number, or a label) each first appeared.

    Example:
        >>> ids = UserIds("corpus.jsonl")
        >>> [ids.canonical(s, where=i) for i, s in enumerate(["Alice", "bob", "alice "], 1)]
        ['alice', 'bob', 'alice']
        >>> ids.merged
        {'alice': ['Alice', 'alice ']}
        >>> ids.extra_spellings
        1
    """

    source: str
    spellings: dict[str, dict[str, object]] = field(default_factory=dict)

    def canonical(self, spelling: str, *, where: object = None) -> str:
        """The canonical id of ``spelling``; under ``strict``, a :class:`Collision` for a second
        spelling of an id already met."""
        key = normalise_user_id(spelling)
        seen = self.spellings.setdefault(key, {})
        if spelling not in seen:
            if seen and user_id_policy() == "strict":
                first, at = next(iter(seen.items()))
                raise Collision(key, first, at, spelling, where)
            seen[spelling] = where
        return key

    @property
    def merged(self) -> dict[str, list[str]]:
        """Canonical id -> its spellings, for the ids written more than one way."""
        return {k: list(v) for k, v in self.spellings.items() if len(v) > 1}

    @property
    def extra_spellings(self) -> int:
        """How many spellings were folded into another one (4 for six spellings of two people)."""
        return sum(len(v) - 1 for v in self.spellings.values())

    def merge_line(self, *, hidden: bool = False) -> str | None:
        """The one line that names the merged spellings (None when nothing was merged).

        Example:
            >>> ids = UserIds("c.jsonl")
            >>> _ = [ids.canonical(s) for s in ("alice", "Alice", "bob")]
            >>> ids.merge_line()
            "c.jsonl: 2 spellings of 1 user id were merged after normalisation (format characters removed, NFKC, case-folded, trimmed): 'alice', 'Alice' -> 'alice'. Pass `lmleak --user-ids strict` to refuse them instead"
        """
        groups = self.merged
        if not groups:
            return None
        total = sum(len(v) for v in groups.values())
        ids = "user id" if len(groups) == 1 else "user ids"
        if hidden:
            return (
                f"{total} spellings of {len(groups)} {ids} were merged after normalisation ({NORMALISATION}); "
                "the ids are not shown in a redacted run. Pass `lmleak --user-ids strict` to refuse them instead"
            )
        parts = [
            f"{', '.join(shown(s) for s in spellings)} -> {shown(key)}"
            for key, spellings in list(groups.items())[:SHOWN_GROUPS]
        ]
        more = f"; and {len(groups) - SHOWN_GROUPS} more" if len(groups) > SHOWN_GROUPS else ""
        return (
            f"{self.source}: {total} spellings of {len(groups)} {ids} were merged after normalisation "
            f"({NORMALISATION}): {'; '.join(parts)}{more}. Pass `lmleak --user-ids strict` to refuse them instead"
        )

    def say_merges(self) -> None:
        """Print :meth:`merge_line` on stderr, once per process for the same line; without the ids
        in a redacted command or while a redacted run is being written."""
        run = current_run()
        line = self.merge_line(hidden=_hidden or (run is not None and run[1]))
        if line is not None and line not in _said:
            _said.add(line)
            print(f"[lmleak] {line}", file=sys.stderr, flush=True)


class Collision(Exception):
    """Two spellings of one user id under ``--user-ids strict`` (readers turn it into their own error
    type, with their file and line)."""

    def __init__(self, key: str, first: str, first_at: object, second: str, second_at: object) -> None:
        self.key, self.first, self.first_at, self.second, self.second_at = (
            key,
            first,
            first_at,
            second,
            second_at,
        )
        at = f" (line {first_at})" if isinstance(first_at, int) else f" ({first_at})" if first_at else ""
        super().__init__(
            f"user id {shown(second)} is {shown(first)}{at} after normalisation ({NORMALISATION}): "
            f"both are {shown(key)}"
        )

    HINT = "write one person's id one way, or drop `--user-ids strict` to merge the spellings"


def canonical_ids(spellings: list[str], *, source: str, where: list[object] | None = None) -> list[str]:
    """Each spelling's canonical id (order and repeats kept), saying the merges in one line.

    Raises:
        Collision: under ``strict``, a second spelling of one id (``where``: each spelling's place,
            a line number or a label, for the message).

    Example:
        >>> canonical_ids(["U1", "u2"], source="holdout.json")
        ['u1', 'u2']
    """
    ids = UserIds(source)
    out = [ids.canonical(s, where=None if where is None else where[i]) for i, s in enumerate(spellings)]
    ids.say_merges()
    return out
