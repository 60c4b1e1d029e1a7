"""Documents owned by users, and the corpus that holds them.

Invariants:
    - ``doc_id`` is unique within a corpus (loaders reject duplicates with the file and line).
    - ``text`` is a non-empty ``str``; ``user_id`` and ``doc_id`` are non-empty ``str``.
    - Iteration order is the load order, and every pass over a corpus sees the same order, so
      results keyed by position are reproducible.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.user_ids import NORMALISATION
from lmleak.errors import CorpusError
from lmleak.words import plural


@dataclass(frozen=True, slots=True)
class Document:
    """One training document and the user who wrote (or is described by) it."""

    user_id: str
    doc_id: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"user_id": self.user_id, "doc_id": self.doc_id, "text": self.text}


def stable_doc_id(user_id: str, text: str, ordinal: int) -> str:
    """A doc_id derived from the row's content and its position among the user's rows.

    Stable across runs and machines (SHA-1, not Python's salted ``hash``), so a corpus without ids
    gets the same ids every time it is loaded.

    Example:
        >>> stable_doc_id("u1", "hello", 0)
        'u1-0-aaf4c61ddc'
    """
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]
    return f"{user_id}-{ordinal}-{digest}"


class Corpus:
    """An ordered collection of documents, iterable by document and by user.

    Example:
        >>> c = Corpus([Document("u1", "d1", "hi there"), Document("u2", "d2", "hello"),
        ...             Document("u1", "d3", "bye")])
        >>> len(c), c.users
        (3, ['u1', 'u2'])
        >>> [d.doc_id for d in c.by_user()["u1"]]
        ['d1', 'd3']
    """

    def __init__(
        self,
        documents: Iterable[Document],
        *,
        source: str | None = None,
        user_id_merges: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.documents: list[Document] = list(documents)
        self.source = source
        #: canonical user id -> the spellings the loader merged into it (:mod:`lmleak.data.user_ids`)
        self.user_id_merges: dict[str, list[str]] = {k: list(v) for k, v in (user_id_merges or {}).items()}
        seen: dict[str, int] = {}
        for i, doc in enumerate(self.documents):
            if doc.doc_id in seen:
                raise CorpusError(
                    f"duplicate doc_id {doc.doc_id!r} (first at document {seen[doc.doc_id] + 1})",
                    path=source,
                    line=i + 1,
                    field="doc_id",
                    hint="give every document a unique doc_id, or omit the column to derive ids",
                )
            seen[doc.doc_id] = i
        self._index = seen

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents)

    def __len__(self) -> int:
        return len(self.documents)

    def __getitem__(self, i: int) -> Document:
        return self.documents[i]

    def __repr__(self) -> str:
        return f"Corpus({plural(len(self), 'document')}, {plural(len(self.users), 'user')}, source={self.source!r})"

    def get(self, doc_id: str) -> Document:
        return self.documents[self._index[doc_id]]

    @property
    def users(self) -> list[str]:
        """Distinct user ids in order of first appearance."""
        return list(dict.fromkeys(d.user_id for d in self.documents))

    def by_user(self) -> dict[str, list[Document]]:
        """Documents grouped by user, users in order of first appearance."""
        groups: dict[str, list[Document]] = {}
        for doc in self.documents:
            groups.setdefault(doc.user_id, []).append(doc)
        return groups

    def select_users(self, users: Iterable[str]) -> Corpus:
        """The sub-corpus of the given users' documents (order kept)."""
        keep = set(users)
        return self._subset([d for d in self.documents if d.user_id in keep])

    def without_users(self, users: Iterable[str]) -> Corpus:
        """The sub-corpus without the given users' documents (order kept)."""
        drop = set(users)
        return self._subset([d for d in self.documents if d.user_id not in drop])

    def _subset(self, documents: list[Document]) -> Corpus:
        """A sub-corpus keeping the source and the merges of the users it keeps."""
        kept = {d.user_id for d in documents}
        merges = {u: s for u, s in self.user_id_merges.items() if u in kept}
        return Corpus(documents, source=self.source, user_id_merges=merges)

    @property
    def extra_spellings(self) -> int:
        """How many user id spellings the loader folded into another user (privacy.json's
        ``user_ids_merged``): 4 for ``alice, Alice, alice_, \u200balice`` and ``josé`` in NFC and NFD."""
        return sum(len(v) - 1 for v in self.user_id_merges.values())

    def people_record(self) -> dict[str, Any]:
        """What ``privacy.json`` says about the people counted: ``num_users`` after merging the
        spellings of one id, ``user_ids_merged`` (spellings folded into another) and how ids compare.

        Example:
            >>> Corpus([Document("alice", "d1", "hi")], user_id_merges={"alice": ["alice", "Alice"]}).people_record()
            {'num_users': 1, 'user_ids_merged': 1, 'user_id_normalisation': 'format characters removed, NFKC, case-folded, trimmed'}
        """
        return {
            "num_users": len(self.users),
            "user_ids_merged": self.extra_spellings,
            "user_id_normalisation": NORMALISATION,
        }

    def texts(self) -> list[str]:
        return [d.text for d in self.documents]

    def write_jsonl(self, path: str | Path) -> Path:
        """Write ``{"user_id", "doc_id", "text"}`` lines atomically (temporary name, then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for doc in self.documents:
                f.write(json.dumps(doc.to_dict(), ensure_ascii=False) + "\n")
        os.replace(tmp, path)
        return path
