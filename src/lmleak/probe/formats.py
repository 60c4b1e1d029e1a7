"""PII links in the formats real mail, tickets and changelogs use (the probe set of paper 003 §4.1 on
real data).

Paper 003 (appendix A.2) finds a person's phone and e-mail when they co-occur with a name in a
sentence. Real fine-tuning data rarely says "my e-mail is"; it writes the links as formats:

- ``From: "First Last" <email>``, ``From: First Last <email>``, ``From: "Last, First" <email>``,
  ``Cc:``/``To:`` lines, ``On <date>, First Last <email> wrote:``, and bare ``Name <email>`` /
  ``"Name" <email>`` / ``Name (email)`` / ``email (Name)`` anywhere (changelog sign-offs
  ``-- Full Name <email>  date`` included);
- signature blocks: a ``-- `` line, then the name, title/company, phone and address lines.

Quote markers (``> ``, ``> > ``) are stripped first, so a quoted reply's signature still counts.
Every link is counted; :class:`LinkCounter` aggregates them over a corpus streamed one document at a
time and resolves each person's e-mail, phone and address to the value seen most often with their
name (a person is keyed by their name without case or extra spaces; "Last, First" is turned round).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# A person's name: 2-4 capitalised words (O'Brien, Smith-Jones, McDonald, an initial "J.").
_WORD = r"[A-Z][a-zA-Z'\u2019-]*[a-z][a-zA-Z'\u2019-]*"
_NAME = rf"(?:{_WORD}|[A-Z]\.)(?: (?:{_WORD}|[A-Z]\.)){{1,3}}"
#: A person's name as written in headers and signatures (for other modules' patterns).
NAME_PATTERN = _NAME
_EMAIL = r"[A-Za-z0-9_.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
_QUOTE = re.compile(r"^(?:> ?)+", re.M)
# "Last, First" in quotes, then "Name" in quotes, then a bare name (at a line start or after a
# header, a comma, "-- " or whitespace), each followed by <email>
_LAST_FIRST_ANGLE = re.compile(
    rf'"(?P<last>{_WORD}), (?P<first>{_WORD}(?: {_WORD})?)" ?<(?P<email>{_EMAIL})>'
)
_QUOTED_ANGLE = re.compile(rf'"(?P<name>{_NAME})" ?<(?P<email>{_EMAIL})>')
_BARE_ANGLE = re.compile(rf"(?:^|(?<=[\s,:]))(?P<name>{_NAME}) ?<(?P<email>{_EMAIL})>", re.M)
_NAME_PAREN = re.compile(rf"(?:^|(?<=[\s,:]))(?P<name>{_NAME}) \((?P<email>{_EMAIL})\)", re.M)
_EMAIL_PAREN = re.compile(rf"(?P<email>{_EMAIL}) \((?P<name>{_NAME})\)")
_SIG_START = re.compile(r"^-- ?$", re.M)
_NAME_LINE = re.compile(rf"^(?P<name>{_NAME})$")
_PHONE = re.compile(
    r"(?<![\w+])(?:(?:\+1|001)[\s.-]?|1[\s.-])?(?:\(\d{3}\)[\s.-]?|\d{3}[\s.()-])\d{3}[\s.()-]\d{4}(?!\d)"
)
_ADDRESS = re.compile(
    r"\b\d{1,6}(?: [A-Z][A-Za-z]+){1,4}(?: (?:Apt\.|Suite|Unit|#) ?\d+)?,(?: [A-Z][A-Za-z]+){1,3}, [A-Z]{2} \d{5}(?:-\d{4})?\b"
)
#: Lines of a signature block read after the ``-- `` line.
SIGNATURE_LINES = 6


def name_key(name: str) -> str:
    """The key that identifies a person across spellings: case and spacing folded.

    Example:
        >>> name_key("  Ann   LEE "), name_key("Ann Lee")
        ('ann lee', 'ann lee')
    """
    return " ".join(name.split()).casefold()


@dataclass
class Links:
    """What one document says about people: (name, e-mail), (name, phone), (name, address) links."""

    emails: list[tuple[str, str]] = field(default_factory=list)
    phones: list[tuple[str, str]] = field(default_factory=list)
    addresses: list[tuple[str, str]] = field(default_factory=list)


def find_links(text: str) -> Links:
    """Every name<->e-mail/phone/address link written in a format of :mod:`this module <lmleak.probe.formats>`.

    Example:
        >>> text = 'From: "Lee, Ann" <ann@example.org>\\n> -- \\n> Bob Roe\\n> Dev, ACME\\n> (201) 555-0142\\n'
        >>> links = find_links(text)
        >>> links.emails, links.phones
        ([('Ann Lee', 'ann@example.org')], [('Bob Roe', '(201) 555-0142')])
    """
    text = _QUOTE.sub("", text)
    links = Links()
    taken: set[int] = set()  # e-mail start offsets already linked by a more specific pattern
    for m in _LAST_FIRST_ANGLE.finditer(text):
        links.emails.append((f"{m['first']} {m['last']}", m["email"]))
        taken.add(m.start("email"))
    for rx in (_QUOTED_ANGLE, _BARE_ANGLE, _NAME_PAREN, _EMAIL_PAREN):
        for m in rx.finditer(text):
            if m.start("email") not in taken:
                taken.add(m.start("email"))
                links.emails.append((m["name"], m["email"]))
    for m in _SIG_START.finditer(text):
        lines = text[m.end() :].lstrip("\n").split("\n", SIGNATURE_LINES)[:SIGNATURE_LINES]
        first = _NAME_LINE.match(lines[0].strip()) if lines else None
        if first is None:
            continue
        name = first["name"]
        for line in lines[1:]:
            line = line.strip()
            if not line or line.startswith(("_____", "On ", "From:")):
                break  # the block ends at a blank line, a footer or the next message
            for p in _PHONE.finditer(line):
                links.phones.append((name, p.group(0)))
            for a in _ADDRESS.finditer(line):
                links.addresses.append((name, a.group(0)))
    return links


class LinkCounter:
    """Counts links over a corpus and resolves each person's most frequent values."""

    def __init__(self) -> None:
        self.names: dict[str, Counter[str]] = defaultdict(Counter)  # key -> spellings seen
        self.fields: dict[str, dict[str, Counter[str]]] = {
            f: defaultdict(Counter) for f in ("email", "phone", "address")
        }
        self.users: dict[str, Counter[str]] = defaultdict(
            Counter
        )  # key -> user ids whose documents name them

    def add(self, text: str, user_id: str | None = None) -> None:
        links = find_links(text)
        for fname, pairs in (("email", links.emails), ("phone", links.phones), ("address", links.addresses)):
            for name, value in pairs:
                key = name_key(name)
                self.names[key][" ".join(name.split())] += 1
                self.fields[fname][key][value] += 1
                if user_id is not None:
                    self.users[key][user_id] += 1

    def subjects(self, *, min_count: int = 1) -> list[dict[str, Any]]:
        """One subject per person with an e-mail, phone or address seen ``min_count`` times or more.

        An e-mail linked to several names goes to the name it was seen with most often (a display
        name that is a nickname or a typo loses it), so no two subjects share an e-mail.
        """
        owner: dict[str, tuple[int, str]] = {}
        for key, values in self.fields["email"].items():
            for email, n in values.items():
                if email not in owner or (n, key) > owner[email]:
                    owner[email] = (n, key)
        out = []
        for i, key in enumerate(sorted(self.names, key=lambda k: (-sum(self.names[k].values()), k))):
            rec: dict[str, Any] = {"subject_id": f"s{i:05d}", "name": self.names[key].most_common(1)[0][0]}
            seen: dict[str, int] = {}
            for fname in ("email", "phone", "address"):
                values = self.fields[fname].get(key, Counter())
                if fname == "email":
                    values = Counter({e: n for e, n in values.items() if owner[e][1] == key})
                best = values.most_common(1)
                if best and best[0][1] >= min_count:
                    rec[fname], seen[fname] = best[0]
                else:
                    rec[fname] = None
            if not seen:
                continue
            rec["seen"] = seen
            users = self.users.get(key)
            if users:
                rec["user_id"] = users.most_common(1)[0][0]
            out.append(rec)
        for i, rec in enumerate(out):
            rec["subject_id"] = f"s{i:05d}"
        return out


def discover(texts: Iterable[tuple[str, str | None]], *, min_count: int = 1) -> list[dict[str, Any]]:
    """Subjects from ``(text, user_id)`` pairs, streamed (see :class:`LinkCounter`).

    Example:
        >>> docs = [("From: Ann Lee <ann@example.org>", "u1"), ("Ann Lee <ann@example.org> wrote:", "u2")]
        >>> [(s["name"], s["email"], s["seen"]) for s in discover(docs)]
        [('Ann Lee', 'ann@example.org', {'email': 2})]
    """
    counter = LinkCounter()
    for text, user in texts:
        counter.add(text, user)
    return counter.subjects(min_count=min_count)
