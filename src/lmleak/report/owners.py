"""Whose PII a leaked sequence holds, and how many people's documents hold its text (issue 32).

A user-unique leaked sequence is "leaked PII of its owner" only if two things hold:

- **It is unique as text, not only as token ids.** The corpus index counts users by token ids; the
  same text tokenised differently elsewhere (a leading space folded into the first token, another
  merge at a boundary) is one user's as ids and several users' as text. :func:`users_with_text`
  counts, for each sequence's text, the users whose documents (the ledger's tokens decoded, the
  text the sequence was decoded from) contain it verbatim: ``users_with_text``. A sequence with
  ``users_with_text >= 2`` is not user-unique and is not headlined; 0 (the decoded text is found in
  no decoded document: a tokenizer that normalises) leaves the token-id count in charge.
- **Whose value it is.** A mail writer's documents hold other people's addresses (quoted replies,
  Cc: lines, list footers). The writer's *identity* is read from their own documents
  (:func:`identities`): the e-mail of each document's sender (a ``From:`` header on its first line),
  the names the formats of :mod:`lmleak.probe.formats` link to that e-mail, and the phones and
  postal addresses of the signature blocks of those names. A leaked value is the writer's **own**
  when it is one of these (e-mails compared case-folded, phones by their digits, names by
  :func:`~lmleak.data.names.name_key`); **third_party** when the sequence holds an e-mail, phone,
  name or address and none is the writer's while the writer's identity is known; **unknown**
  otherwise (no ``From:`` header in the writer's documents — prose, dialogs — or only kinds the
  identity cannot hold, such as card numbers). A sequence holding both is ``own``.

The identity is read only for the owners of PII sequences, so its cost is that of the formats'
regular expressions over those users' documents.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ahocorasick

from lmleak.data.names import name_key
from lmleak.probe.formats import find_links
from lmleak.report.features import PII_VALUES
from lmleak.report.null import HEADLINE_PII_TYPES, headline_pii_mask

#: ``pii_owner`` values.
OWN, THIRD_PARTY, UNKNOWN = "own", "third_party", "unknown"
#: PII kinds an identity can hold (the entity names of the regex and Presidio detectors).
_EMAIL_KINDS = frozenset({"EMAIL", "EMAIL_ADDRESS"})
_PHONE_KINDS = frozenset({"PHONE", "PHONE_NUMBER", "FAX"})
_NAME_KINDS = frozenset({"PERSON", "NAME"})
_ADDRESS_KINDS = frozenset({"ADDRESS"})
_SENDER = re.compile(r"\A\s*From: ?[^\n]*?<(?P<email>[^<>\s@]+@[^<>\s]+)>")


@dataclass
class Identity:
    """What one writer's own documents say is theirs (all values normalised by :func:`normalise`)."""

    emails: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    phones: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)

    def holds(self, entity: str, value: str) -> bool | None:
        """Whether ``value`` is this writer's; None for a kind an identity cannot hold."""
        kind = _kind(entity)
        if kind is None:
            return None
        return normalise(entity, value) in getattr(self, kind)


def _kind(entity: str) -> str | None:
    for kinds, attr in (
        (_EMAIL_KINDS, "emails"),
        (_PHONE_KINDS, "phones"),
        (_NAME_KINDS, "names"),
        (_ADDRESS_KINDS, "addresses"),
    ):
        if entity in kinds:
            return attr
    return None


def normalise(entity: str, value: str) -> str:
    """A PII value in the form identities are compared in.

    Example:
        >>> normalise("EMAIL", " Ann.Lee@Example.org"), normalise("PHONE", "(201) 555-0142")
        ('ann.lee@example.org', '2015550142')
        >>> normalise("PERSON", "Lee, Ann") == normalise("PERSON", "ann  lee")
        True
    """
    kind = _kind(entity)
    if kind == "emails":
        return value.strip().casefold()
    if kind == "phones":
        digits = re.sub(r"\D", "", value)
        return digits[1:] if len(digits) == 11 and digits.startswith("1") else digits
    if kind == "names":
        if "," in value:  # "Last, First" as the headers write it
            last, _, first = value.partition(",")
            value = f"{first.strip()} {last.strip()}"
        return name_key(value)
    return " ".join(value.split()).casefold()


def identities(docs_by_user: Mapping[str, Iterable[str]]) -> dict[str, Identity]:
    """Each writer's identity from their own documents (see the module docstring).

    Example:
        >>> docs = {"u1": ["From: Ann Lee <ann@example.org>\\nhi\\n-- \\nAnn Lee\\n(201) 555-0142\\n",
        ...                "> Bob Roe <bob@example.org> wrote:\\n> hello"]}
        >>> i = identities(docs)["u1"]
        >>> sorted(i.emails), i.holds("PHONE", "201-555-0142"), i.holds("EMAIL", "bob@example.org")
        (['ann@example.org'], True, False)
    """
    out: dict[str, Identity] = {}
    for user, texts in docs_by_user.items():
        ident = Identity()
        links = []
        for text in texts:
            sender = _SENDER.match(text)
            if sender is not None:
                ident.emails.add(normalise("EMAIL", sender["email"]))
            links.append(find_links(text))
        for found in links:
            for name, email in found.emails:
                if normalise("EMAIL", email) in ident.emails:
                    ident.names.add(normalise("PERSON", name))
        for found in links:
            for name, phone in found.phones:
                if normalise("PERSON", name) in ident.names:
                    ident.phones.add(normalise("PHONE", phone))
            for name, address in found.addresses:
                if normalise("PERSON", name) in ident.names:
                    ident.addresses.add(normalise("ADDRESS", address))
        out[str(user)] = ident
    return out


def owner_of_values(values: Sequence[tuple[str, str]] | None, identity: Identity | None) -> str | None:
    """``own`` / ``third_party`` / ``unknown`` for one sequence's ``(entity, value)`` PII pairs
    (None: no PII). See the module docstring.

    Example:
        >>> ident = Identity(emails={"ann@example.org"})
        >>> owner_of_values([("EMAIL", "ann@example.org")], ident), owner_of_values([("EMAIL", "b@x.org")], ident)
        ('own', 'third_party')
        >>> owner_of_values([("EMAIL", "b@x.org")], Identity()), owner_of_values([("SSN", "1")], ident)
        ('unknown', 'unknown')
    """
    if not values:
        return None
    known = identity is not None and bool(identity.emails)
    checkable = False
    for entity, value in values:
        held = None if identity is None else identity.holds(entity, value)
        if held:
            return OWN
        checkable = checkable or held is not None
    return THIRD_PARTY if known and checkable else UNKNOWN


def users_with_text(
    needles: Iterable[str], doc_texts: Sequence[str], doc_users: Sequence[str]
) -> dict[str, int]:
    """For each text, the number of users whose documents contain it verbatim.

    One Aho–Corasick automaton over the texts, one pass over each user's documents: linear in the
    corpus and the texts (plus the matches), where a scan of the corpus per text grows with their
    product (:func:`users_with_text_by_scan`, the obvious count the tests compare it with;
    ``benchmarks/bench_owners.py`` measures both).

    Example:
        >>> users_with_text(["Jan 2019", "ann@x.org"], ["On Jan 2019 ann@x.org", " Jan 2019"], ["u1", "u2"])
        {'Jan 2019': 2, 'ann@x.org': 1}
    """
    wanted = list(dict.fromkeys(n for n in needles if n))
    if not wanted:
        return {}
    automaton = ahocorasick.Automaton()
    for i, needle in enumerate(wanted):
        automaton.add_word(needle, i)
    automaton.make_automaton()
    users_of: list[set[str]] = [set() for _ in wanted]
    for user, body in _user_bodies(doc_texts, doc_users).items():
        for _end, i in automaton.iter(body):
            users_of[i].add(user)
    return {needle: len(users) for needle, users in zip(wanted, users_of, strict=True)}


def users_with_text_by_scan(
    needles: Iterable[str], doc_texts: Sequence[str], doc_users: Sequence[str]
) -> dict[str, int]:
    """:func:`users_with_text` by the obvious scan of every user's documents per text (the oracle).

    Example:
        >>> users_with_text_by_scan(["Jan 2019", "ann@x.org"], ["On Jan 2019 ann@x.org", " Jan 2019"], ["u1", "u2"])
        {'Jan 2019': 2, 'ann@x.org': 1}
    """
    bodies = _user_bodies(doc_texts, doc_users).values()
    out: dict[str, int] = {}
    for needle in needles:
        if needle and needle not in out:
            out[needle] = sum(1 for body in bodies if needle in body)
    return out


def _user_bodies(doc_texts: Sequence[str], doc_users: Sequence[str]) -> dict[str, str]:
    """Each user's documents joined by NUL (no text holds one), so no match spans two documents."""
    by_user: dict[str, list[str]] = {}
    for text, user in zip(doc_texts, doc_users, strict=True):
        by_user.setdefault(str(user), []).append(text)
    return {user: "\x00".join(texts) for user, texts in by_user.items()}


def decoded_documents(ledger: Any, tokenizer: Any) -> list[str]:
    """Every ledger document decoded from its token ids (the text sequences are decoded from)."""
    rows = [
        ledger.token_ids[ledger.offsets[d] : ledger.offsets[d + 1]].tolist() for d in range(ledger.num_docs)
    ]
    many = getattr(tokenizer, "decode_many", None)
    if many is not None:
        return list(many(rows))
    return [tokenizer.decode(r) if r else "" for r in rows]


def owner_columns(
    seqs: Any, ledger: Any, tokenizer: Any, headline_types: Collection[str] = HEADLINE_PII_TYPES
) -> tuple[list[int | None], list[str | None], list[bool | None]]:
    """``users_with_text``, ``pii_owner`` and ``pii_personal`` of every row of the features table: set
    for the user-unique rows holding PII (the headline's candidates), None for the others.

    ``pii_personal``: the row's text holds a whole value of a ``headline_types`` kind (one of the
    values detected around it, not only overlapping it) that one person's documents hold, no one
    else's: a personal value reproduced, not template text touching an address or a list's address
    every writer quotes (docs/verdict.md, "What a stricter count would change")."""
    n = len(seqs)
    if n == 0 or PII_VALUES not in seqs.columns:
        return [None] * n, [None] * n, [None] * n
    rows = [
        i
        for i, (u, ty) in enumerate(zip(seqs["users_in_d"], seqs["pii_types"], strict=True))
        if int(u) == 1 and ty is not None and len(ty) > 0
    ]
    if not rows:
        return [None] * n, [None] * n, [None] * n
    docs = decoded_documents(ledger, tokenizer)
    kinds = set(headline_types)
    whole = {
        i: [
            v
            for e, v in (seqs[PII_VALUES].iat[i] or ())
            if e in kinds and v and v in str(seqs["text"].iat[i])
        ]
        for i in rows
    }
    # one pass over the documents counts the holders of the texts and of the values they hold whole
    texts = [str(seqs["text"].iat[i]) for i in rows]
    counts = users_with_text([*texts, *(v for vs in whole.values() for v in vs)], docs, ledger.user_ids)
    owners = sorted({str(seqs["user_ids"].iat[i][0]) for i in rows})
    wanted = set(owners)
    docs_of: dict[str, list[str]] = {u: [] for u in owners}
    for text, user in zip(docs, ledger.user_ids, strict=True):
        if str(user) in wanted:
            docs_of[str(user)].append(text)
    ident = identities(docs_of)
    n_text: list[int | None] = [None] * n
    owner: list[str | None] = [None] * n
    personal: list[bool | None] = [None] * n
    for i in rows:
        n_text[i] = counts.get(str(seqs["text"].iat[i]), 0)
        owner[i] = owner_of_values(seqs[PII_VALUES].iat[i], ident.get(str(seqs["user_ids"].iat[i][0])))
        personal[i] = any(counts.get(v) == 1 for v in whole[i])
    return n_text, owner, personal


def add_owner_columns(
    seqs: Any, ledger: Any, tokenizer: Any, *, min_tokens: int, headline_types: Collection[str]
) -> None:
    """Add ``users_with_text``, ``pii_owner``, ``pii_personal`` and ``pii_headline`` (:func:`~lmleak.report.null.headline_pii_mask`)
    to the features table in place, and drop the PII values they were read from."""
    import pandas as pd

    with_text, owner, personal = owner_columns(seqs, ledger, tokenizer, headline_types)
    seqs["users_with_text"] = pd.array(with_text, dtype="Int64")
    seqs["pii_owner"] = pd.Series(owner, index=seqs.index, dtype=object)
    seqs["pii_personal"] = pd.array(personal, dtype="boolean")
    seqs["pii_headline"] = headline_pii_mask(
        seqs["users_in_d"].to_numpy(),
        seqs["pii_types"] if "pii_types" in seqs.columns else [None] * len(seqs),
        seqs["length_tokens"].to_numpy(),
        min_tokens=min_tokens,
        headline_types=headline_types,
        users_with_text=with_text,
    )
    if PII_VALUES in seqs.columns:
        seqs.drop(columns=[PII_VALUES], inplace=True)
