"""PII links in the formats real mail, tickets and changelogs use (the probe set of paper 003 §4.1 on
real data), for every shape of name (issue 28).

Paper 003 (appendix A.2) finds a person's phone and e-mail when they co-occur with a name in a
sentence. Real fine-tuning data rarely says "my e-mail is"; it writes the links as formats:

- ``From: "First Last" <email>``, ``From: First Last <email>``, ``From: "Last, First" <email>``,
  ``Cc:``/``To:`` lines, ``On <date>, First Last <email> wrote:``, and bare ``Name <email>`` /
  ``"Name" <email>`` / ``Name (email)`` / ``email (Name)`` anywhere (changelog sign-offs
  ``-- Full Name <email>  date`` included);
- signature blocks: a ``-- `` line, then the name, title/company, phone and address lines.

A name is any shape :mod:`lmleak.data.names` knows: letters of any script (``Jürgen Weiß``,
``佐藤 陽子``), apostrophes and particles (``Anna d'Amico``, ``Juan de la Cruz``), a nickname in
parentheses (``Gábor Kovács (GK)``: the name, with the nickname kept beside it). Where a format
says the text is a name — a header, an attribution, a changelog sign-off, a line holding only a
name and an address, the first line of a signature — a single-token handle (``zephyr``) is a
name too; in running text it is not.

Quote markers (``> ``, ``> > ``) are stripped first, so a quoted reply's signature still counts.
Every link is counted; :class:`LinkCounter` aggregates them over a corpus streamed one document at a
time. One person is one group of name keys (:func:`~lmleak.data.names.name_key`: case, spacing,
accents and mojibake folded, "Last, First" turned round) joined by the addresses they share: an
address seen with at most :data:`MAX_NAMES_PER_ADDRESS` names is one person's (a variant, a
transliteration, a nickname), one seen with more is a shared address (a list, a role) and goes to
the name seen with it most. Each person keeps every address seen with them (``emails``, most
frequent first; ``email`` is the first), the phone and address seen most, and the spelling to
probe with (:func:`~lmleak.data.names.best_spelling`: never mojibake or an accent-stripped copy
while the corpus writes the intact name). A name that ends up with nothing is recorded with the
reason (:meth:`LinkCounter.left_out`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from lmleak.data.names import (
    HANDLE_PATTERN,
    NAME_PATTERN,
    NAME_WORD,
    NOT_A_HANDLE,
    PARTICLES,
    best_spelling,
    fix_mojibake,
    name_key,
    name_shape,
    split_nickname,
)

_NAME = NAME_PATTERN
_EMAIL = r"[A-Za-z0-9_.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
_NICK = r"(?: \([^()\n<>@]{1,24}\))?"
_QUOTE = re.compile(r"^(?:> ?)+", re.M)
# the document's own sender: a From: header on its first line (not a quoted or digested message's)
_SENDER = re.compile(rf"\A\s*From: ?[^\n]*?<(?P<email>{_EMAIL})>")
# formats that say "this is a name": the display text is read whatever its shape
_HEADER = re.compile(
    r"^(?:From|Cc|CC|To|Reply-To|Sender|Author|Signed-off-by|Reviewed-by|Co-authored-by): ?(?P<rest>[^\n]*)$",
    re.M,
)
_ADDRESS_IN_LIST = re.compile(rf'(?P<display>"[^"\n]*"|[^,<>"\n]*?) ?<(?P<email>{_EMAIL})>')
_ATTRIBUTION = re.compile(
    rf'^On [^\n]*?, (?P<display>"[^"\n]*"|[^,<>"\n]+?) <(?P<email>{_EMAIL})> wrote:', re.M
)
_CHANGELOG = re.compile(rf"^[ \t]*-- (?P<display>[^<>\n]+?) <(?P<email>{_EMAIL})>", re.M)
_LINE_ANGLE = re.compile(rf'^[ \t]*(?P<display>"[^"\n]*"|[^<>\n@:"]+?) ?<(?P<email>{_EMAIL})>[ \t]*$', re.M)
_LINE_PAREN = re.compile(rf"^[ \t]*(?P<display>[^()<>\n@:]+?) \((?P<email>{_EMAIL})\)[ \t]*$", re.M)
# formats found anywhere, running text included: the name must look like one
_QUOTED_ANGLE = re.compile(rf'"(?P<display>[^"\n]{{1,80}})" ?<(?P<email>{_EMAIL})>')
_BARE_ANGLE = re.compile(rf"(?:^|(?<=[\s,:]))(?P<display>{_NAME}{_NICK}) ?<(?P<email>{_EMAIL})>", re.M)
_NAME_PAREN = re.compile(rf"(?:^|(?<=[\s,:]))(?P<display>{_NAME}) \((?P<email>{_EMAIL})\)", re.M)
_EMAIL_PAREN = re.compile(rf"(?<![\w.+-])(?P<email>{_EMAIL}) \((?P<display>{_NAME}{_NICK})\)")
# each pattern with a string its lines must hold (a cheap test before the costly name patterns)
_STRONG = ((_ATTRIBUTION, "On "), (_CHANGELOG, "--"), (_LINE_ANGLE, "<"), (_LINE_PAREN, "("))
_AT_LINE = re.compile(r"^[^\n@]*@[^\n]*$", re.M)
_ANYWHERE = ((_QUOTED_ANGLE, '"'), (_BARE_ANGLE, "<"), (_NAME_PAREN, "("), (_EMAIL_PAREN, "("))
_SIG_START = re.compile(r"^-- ?$", re.M)
_PHONE = re.compile(
    r"(?<![\w+])(?:(?:\+1|001)[\s.-]?|1[\s.-])?(?:\(\d{3}\)[\s.-]?|\d{3}[\s.()-])\d{3}[\s.()-]\d{4}(?!\d)"
)
_ADDRESS = re.compile(
    r"\b\d{1,6}(?: [A-Z][A-Za-z]+){1,4}(?: (?:Apt\.|Suite|Unit|#) ?\d+)?,(?: [A-Z][A-Za-z]+){1,3}, [A-Z]{2} \d{5}(?:-\d{4})?\b"
)
_PARTICLE = "(?:" + "|".join(sorted(PARTICLES, key=lambda p: (-len(p), p))) + ")"
_LAST_FIRST = re.compile(
    rf"(?P<last>(?:{_PARTICLE} )*{NAME_WORD}(?:[ -]{NAME_WORD})?), (?P<first>{NAME_WORD}(?: {NAME_WORD})?)"
)
_NAME_FULL = re.compile(_NAME)
_HANDLE_FULL = re.compile(HANDLE_PATTERN)
#: Lines of a signature block read after the ``-- `` line.
SIGNATURE_LINES = 6
#: An address seen with more names than this is shared (a list, a role), not one person's.
MAX_NAMES_PER_ADDRESS = 3


def read_display(display: str, *, strong: bool = True) -> tuple[str, str | None] | None:
    """The name and nickname a display text holds (``"Kovács, Gábor"`` -> ``("Gábor Kovács", None)``,
    ``Gábor Kovács (GK)`` -> ``("Gábor Kovács", "GK")``), or None when it holds no name. ``strong``:
    the format says it is a name, so a single-token handle counts.

    Example:
        >>> read_display('"de la Cruz, Juan"'), read_display("zephyr"), read_display("zephyr", strong=False)
        (('Juan de la Cruz', None), ('zephyr', None), None)
    """
    d = " ".join(display.strip().strip("\"'").split())
    if not d or "@" in d or len(d) > 80:
        return None
    m = _LAST_FIRST.fullmatch(d)
    if m is not None:
        d = f"{m['first']} {m['last']}"
    name, nick = split_nickname(d)
    if nick is not None and ("@" in nick or not nick.strip()):
        return None
    shaped = fix_mojibake(name)  # mojibake is read as the name it garbles, and kept as written
    if _NAME_FULL.fullmatch(shaped):
        return name, nick
    if (
        strong
        and " " not in shaped
        and _HANDLE_FULL.fullmatch(shaped)
        and shaped.casefold() not in NOT_A_HANDLE
    ):
        return name, nick
    return None


@dataclass
class Links:
    """What one document says about people: (name, e-mail), (name, phone), (name, address) links,
    the nicknames written beside names, and the displays a format called a name that could not be read."""

    emails: list[tuple[str, str]] = field(default_factory=list)
    phones: list[tuple[str, str]] = field(default_factory=list)
    addresses: list[tuple[str, str]] = field(default_factory=list)
    nicknames: list[tuple[str, str]] = field(default_factory=list)
    unread: list[tuple[str, str]] = field(default_factory=list)  # (display, e-mail)

    def email(self, display: str, email: str, *, strong: bool) -> bool:
        """Link ``email`` to the name ``display`` holds; False (and, when ``strong``, noted as
        unread) when it holds none."""
        read = read_display(display, strong=strong)
        if read is None:
            if strong and display.strip(' "'):
                self.unread.append((display.strip(), email))
            return False
        name, nick = read
        self.emails.append((name, email))
        if nick is not None:
            self.nicknames.append((name, nick))
        return True


def find_links(text: str) -> Links:
    """Every name<->e-mail/phone/address link written in a format of :mod:`this module <lmleak.probe.formats>`.

    Example:
        >>> text = 'From: "Lee, Ann" <ann@example.org>\\n> -- \\n> Bob Roe\\n> Dev, ACME\\n> (201) 555-0142\\n'
        >>> links = find_links(text)
        >>> links.emails, links.phones
        ([('Ann Lee', 'ann@example.org')], [('Bob Roe', '(201) 555-0142')])
        >>> find_links("Cc: zephyr <z@example.org>, Gábor Kovács (GK) <gk@example.org>").emails
        [('zephyr', 'z@example.org'), ('Gábor Kovács', 'gk@example.org')]
    """
    text = _QUOTE.sub("", text)
    links = Links()
    taken: set[int] = set()  # e-mail start offsets already linked by a more specific pattern
    # every e-mail pattern matches within one line holding an "@": only those lines are searched
    # (most of a corpus — prose, diffs, logs — has none, and the name patterns are the costly part)
    lines = [(m.start(), m.group()) for m in _AT_LINE.finditer(text)]
    for base, line in lines:
        for m in _HEADER.finditer(line):
            for a in _ADDRESS_IN_LIST.finditer(m["rest"]):
                at = base + m.start("rest") + a.start("email")
                if at not in taken and a["display"].strip(' "'):
                    taken.add(at)
                    links.email(a["display"], a["email"], strong=True)
    for strong, patterns in ((True, _STRONG), (False, _ANYWHERE)):
        for rx, needed in patterns:
            for base, line in lines:
                if needed not in line:
                    continue
                for m in rx.finditer(line):
                    at = base + m.start("email")
                    if at not in taken and (links.email(m["display"], m["email"], strong=strong) or strong):
                        taken.add(at)
    _signatures(text, links)
    return links


def _signatures(text: str, links: Links) -> None:
    """Phones and addresses of signature blocks: a ``-- `` line, the name, then up to
    :data:`SIGNATURE_LINES` lines until a blank line, a footer or the next message."""
    for m in _SIG_START.finditer(text):
        lines = text[m.end() :].lstrip("\n").split("\n", SIGNATURE_LINES)[:SIGNATURE_LINES]
        read = read_display(lines[0]) if lines and "<" not in lines[0] else None
        if read is None:
            continue
        name, nick = read
        if nick is not None:
            links.nicknames.append((name, nick))
        for line in lines[1:]:
            line = line.strip()
            if not line or line.startswith(("_____", "On ", "From:")):
                break  # the block ends at a blank line, a footer or the next message
            for p in _PHONE.finditer(line):
                links.phones.append((name, p.group(0)))
            for a in _ADDRESS.finditer(line):
                links.addresses.append((name, a.group(0)))


class _Groups:
    """Union-find over name keys (the people)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, k: str) -> str:
        self.parent.setdefault(k, k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


class LinkCounter:
    """Counts links over a corpus and resolves each person's names, addresses and most frequent values."""

    def __init__(self) -> None:
        self.names: dict[str, Counter[str]] = defaultdict(Counter)  # key -> spellings seen
        self.nicknames: dict[str, Counter[str]] = defaultdict(Counter)
        self.fields: dict[str, dict[str, Counter[str]]] = {
            f: defaultdict(Counter) for f in ("email", "phone", "address")
        }
        self.users: dict[str, Counter[str]] = defaultdict(
            Counter
        )  # key -> user ids whose documents name them
        self.senders: dict[str, Counter[str]] = defaultdict(
            Counter
        )  # address -> users whose documents it sent
        self.unread: Counter[tuple[str, str]] = Counter()
        self._left_out: list[dict[str, Any]] = []

    def add(self, text: str, user_id: str | None = None) -> None:
        if user_id is not None and (sender := _SENDER.match(text)) is not None:
            self.senders[sender["email"]][user_id] += 1
        links = find_links(text)
        for fname, pairs in (("email", links.emails), ("phone", links.phones), ("address", links.addresses)):
            for name, value in pairs:
                key = name_key(name)
                self.names[key][" ".join(name.split())] += 1
                self.fields[fname][key][value] += 1
                if user_id is not None:
                    self.users[key][user_id] += 1
        for name, nick in links.nicknames:
            self.nicknames[name_key(name)][nick] += 1
        self.unread.update(links.unread)

    def _people(self) -> tuple[_Groups, dict[str, str]]:
        """The groups of keys that are one person, and the owner key of every shared address."""
        groups = _Groups()
        shared_owner: dict[str, str] = {}
        by_email: dict[str, Counter[str]] = defaultdict(Counter)
        for key, values in self.fields["email"].items():
            groups.find(key)
            for email, n in values.items():
                by_email[email][key] += n
        for key in self.names:
            groups.find(key)
        for email, keys in by_email.items():
            if len(keys) <= MAX_NAMES_PER_ADDRESS:
                first = next(iter(keys))
                for k in keys:
                    groups.union(first, k)
            else:  # a shared address: the name seen with it most (ties: the first key in order)
                shared_owner[email] = min(keys, key=lambda k: (-keys[k], k))
        return groups, shared_owner

    def _owner(self, emails: list[str], users: Counter[str]) -> tuple[str | None, bool]:
        """The person's own user id and whether they are a third party: the user whose documents
        their addresses send (a From: header on a document's first line). Counting mentions alone
        gave a prolific author's or a digest's id to people quoted there more often than they wrote
        (5 of 45 people of ``synth mail --scale 0.1``, two of them held out of training, so probing
        counted them as members, not controls).

        In a corpus that records senders, a person who sends none of its documents is a *third
        party* (issue 32: quoted, cc'd, signed in someone else's message): no user id of their own
        (``(None, True)``); the user whose documents name them most is kept as ``found_in``, never as
        theirs — their membership is unknown. A corpus with no From: header at all (tickets, notes)
        has no writer to tell apart: the user whose documents name them most (``(user, False)``)."""
        sent: Counter[str] = Counter()
        for email in emails:
            sent.update(self.senders.get(email, Counter()))
        if sent:
            return min(sent, key=lambda u: (-sent[u], u)), False
        if self.senders:
            return None, True
        return (users.most_common(1)[0][0] if users else None), False

    def subjects(self, *, min_count: int = 1) -> list[dict[str, Any]]:
        """One subject per person with an e-mail, phone or address seen ``min_count`` times or more
        (see the module docstring); :meth:`left_out` says why the other names were dropped."""
        groups, shared_owner = self._people()
        members: dict[str, list[str]] = defaultdict(list)
        for key in self.names:
            members[groups.find(key)].append(key)
        order = sorted(members, key=lambda r: (-sum(sum(self.names[k].values()) for k in members[r]), r))
        out: list[dict[str, Any]] = []
        self._left_out = []
        for root in order:
            keys = members[root]
            spellings: Counter[str] = Counter()
            nicks: Counter[str] = Counter()
            users: Counter[str] = Counter()
            for k in keys:
                spellings.update(self.names[k])
                nicks.update(self.nicknames.get(k, Counter()))
                users.update(self.users.get(k, Counter()))
            name = best_spelling(spellings)
            values = {f: Counter() for f in ("email", "phone", "address")}  # type: dict[str, Counter[str]]
            for f in values:
                for k in keys:
                    for v, n in self.fields[f].get(k, Counter()).items():
                        if f != "email" or shared_owner.get(v, k) == k:
                            values[f][v] += n
            kept = {f: [(v, n) for v, n in c.most_common() if n >= min_count] for f, c in values.items()}
            kept["email"].sort(key=lambda vn: (-vn[1], vn[0]))
            if not any(kept.values()):
                self._left_out.append(self._reason(name, keys, values, min_count))
                continue
            nick = nicks.most_common(1)[0][0] if nicks else None
            rec: dict[str, Any] = {"subject_id": "", "name": name}
            rec["email"] = kept["email"][0][0] if kept["email"] else None
            rec["emails"] = [v for v, _ in kept["email"]]
            for f in ("phone", "address"):
                rec[f] = kept[f][0][0] if kept[f] else None
            rec["seen"] = {f: kept[f][0][1] for f in ("email", "phone", "address") if kept[f]}
            rec["name_shape"] = name_shape(f"{name} ({nick})" if nick else name)
            if nick:
                rec["nickname"] = nick
            variants = [s for s, _ in spellings.most_common() if s != name]
            if variants:
                rec["variants"] = variants
            owner, third_party = self._owner(rec["emails"], users)
            if owner is not None:
                rec["user_id"] = owner
            if third_party:
                rec["third_party"] = True
                if users:
                    rec["found_in"] = min(users, key=lambda u: (-users[u], u))
            out.append(rec)
        for i, rec in enumerate(out):
            rec["subject_id"] = f"s{i:05d}"
        return out

    def _reason(
        self, name: str, keys: list[str], values: dict[str, Counter[str]], min_count: int
    ) -> dict[str, Any]:
        """Why a person with links has no subject: every value seen too rarely, or their only
        addresses are shared ones that belong to another name."""
        if any(values.values()):
            seen = max(n for c in values.values() for n in c.values())
            return {"name": name, "reason": "below_min_count", "seen": seen, "min_count": min_count}
        emails = sorted({e for k in keys for e in self.fields["email"].get(k, Counter())})
        return {"name": name, "reason": "shared_address", "emails": emails}

    def left_out(self) -> list[dict[str, Any]]:
        """The names :meth:`subjects` dropped, each with its ``reason`` (``below_min_count``,
        ``shared_address``), then every display a format called a name that could not be read as
        one (``unreadable_display``, with the address and how often it was seen)."""
        rows = list(self._left_out)
        for (display, email), n in sorted(self.unread.items(), key=lambda kv: (-kv[1], kv[0])):
            rows.append({"display": display, "email": email, "reason": "unreadable_display", "seen": n})
        return rows
