# long: the archive's writer (messages, quoting, digests, canaries of either design) and its summary share the draws of one module
"""Synth mail: a mailing-list archive with known PII, shaped like the data users really audit.

CustomerSim (:mod:`lmleak.data.synth.customersim`) writes short, uniform dialogues in which PII
sits in sentences. Real fine-tuning data — mail, tickets, changelogs — looks otherwise, and each of
these traits broke something in an audit built on CustomerSim alone:

- **Formats, not prose.** PII comes as ``From: "First Last" <email>`` headers, attribution lines
  (``On <date>, First Last <email> wrote:``), signature blocks (``-- `` then name, title,
  company, phone, address) and changelog sign-offs (``-- Full Name <email>  date``).
- **Other people's PII.** Replies quote their parent (``> `` lines, nested ``> >``), so a message
  holds the quoted author's name, e-mail and signature too. ``secrets.jsonl`` records both the
  document's owner (``user_id``) and whose PII each span is (``subject_id``).
- **A few authors write most of it.** Messages per author follow a Zipf law (exponent 1.1).
- **Heavy duplication.** List footers, disclaimers, auto-replies, quoted text and digests repeat
  lines across documents (about half of all non-empty lines occur more than once).
- **Long documents.** Patch mails carry long diffs and logs, and the list's digests concatenate
  dozens of messages, so the longest documents run to tens of thousands of tokens.

- **Names in every shape** (issue 28): authors come from nine Faker locales with handles,
  nicknames, particles, accent-stripped or romanised variants they sometimes sign with, and two or
  three addresses (:mod:`lmleak.data.synth.people`); ``secrets.jsonl`` gives every span the
  ``name_shape`` of its person, ``subjects.jsonl`` every address written (``emails``).
  ``locales=("en_US",)`` writes the English-only archive of earlier versions, byte for byte.

A document is one message (or one digest, owned by the list's digest account ``list-digest``).
Authors are ``a-0000``, ``a-0001``, ... (``a-0000`` writes the most). Everything is fictional:
names, companies and street addresses from Faker (seeded), e-mails on example.org/.com/.net,
phones in the reserved 555-0100..0199 range. Spans are recorded as the text is written, never
re-found by pattern matching. Same seed -> byte-identical files.

Size: ``scale=1`` writes about 10^6 tokens of the small GPT's digit-splitting BPE — counted as
:data:`TOKENS_PER_WORD` × whitespace words, a factor measured on this corpus with a 4k BPE
trained by ``lmleak train`` (see ``docs/synth-mail.md``). ``scale`` multiplies the number of
messages (and authors, by its square root), so the size grows linearly.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from faker import Faker

from lmleak.data.canaries import CanaryDesign, check_design
from lmleak.data.names import name_shape
from lmleak.data.synth import (
    DEFAULT_LOCALES,
    EMAIL_DOMAINS,
    ENGLISH,
    DocDraft,
    english_record,
    subjects_per_shape,
    write_jsonl_files,
)
from lmleak.data.synth.mail_text import (
    AUTO_REPLY,
    BODY,
    CLOSINGS,
    COMPONENTS,
    CONDITIONS,
    DISCLAIMER,
    FOOTER,
    LIST,
    LIST_ADDRESS,
    OPENERS,
    REPLIES,
    TITLES,
    VERBS,
)
from lmleak.data.synth.people import PeopleDrawer, Person
from lmleak.errors import ConfigError
from lmleak.jsonl import read_jsonl
from lmleak.runs import secure_dir
from lmleak.words import plural

DIGEST_USER = "list-digest"
CANARY_PREFIX = "My access token is: "
#: The alphabet of the random design's access tokens.
HEX = "0123456789abcdef"
#: Tokens of the small GPT's 4k BPE per whitespace word on this corpus (measured; docs/synth-mail.md).
TOKENS_PER_WORD = 2.07
#: Messages at scale 1 (about 10^6 tokens with the digests).
MESSAGES_PER_SCALE = 1500
AUTHORS_PER_SCALE = 300
ZIPF_EXPONENT = 1.1


@dataclass
class Author:
    """One list member: the profile and the habits that shape how their PII appears."""

    user_id: str
    first: str
    last: str
    email: str
    phone: str | None
    address: str | None
    company: str
    title: str
    signature: str  # block | name_email | quoted_email | paren_email | changelog | none
    from_style: str  # quoted | plain | last_first
    messages: int = 0
    wrote_phone: bool = False  # ground truth is what the corpus shows, not the profile
    wrote_address: bool = False
    person: Person | None = None  # the multilingual generator's person (None: the old en_US one)

    @property
    def name(self) -> str:
        """The name as the person writes it (with the nickname: ``Gábor Kovács (GK)``)."""
        return self.person.display if self.person else f"{self.first} {self.last}"

    @property
    def shape(self) -> str:
        return self.person.shape if self.person else name_shape(self.name)

    def message(self, rng: random.Random) -> tuple[str, str]:
        """The name one message is signed with (now and then a variant) and the address it is sent
        from (one of several); no draw for the English-only generator."""
        return self.person.message(rng) if self.person else (self.name, self.email)

    def last_first(self) -> str | None:
        return self.person.last_first() if self.person else f"{self.last}, {self.first}"

    def subject(self) -> dict[str, Any]:
        names = self.person.record() if self.person else english_record(self.name, self.email)
        return {
            "subject_id": self.user_id,
            "user_id": self.user_id,
            "name": names.pop("name"),
            "email": names.pop("email"),
            "phone": self.phone if self.wrote_phone else None,
            "address": self.address if self.wrote_address else None,
            "company": self.company,
            "messages": self.messages,
            **names,
        }


SIGNATURES = ("block", "name_email", "quoted_email", "paren_email", "changelog", "none")
SIGNATURE_WEIGHTS = (0.35, 0.2, 0.1, 0.1, 0.15, 0.1)


def _phone(rng: random.Random) -> str:
    # 555-0100..0199 is reserved for fiction; the area code is any plausible one
    return rng.choice(("({a}) 555-01{b:02d}", "+1 {a} 555 01{b:02d}", "{a}-555-01{b:02d}")).format(
        a=rng.randint(201, 989), b=rng.randint(0, 99)
    )


def _author(fake: Faker, rng: random.Random, user_id: str, taken: set[str]) -> Author:
    """An author of the English-only generator (``locales=("en_US",)``: the corpus as it always was)."""
    while True:
        first, last = fake.first_name(), fake.last_name()
        local = rng.choice(
            (f"{first}.{last}", f"{first[0]}{last}", f"{first}", f"{last}{rng.randint(1, 99)}")
        )
        email = f"{local.lower()}@{rng.choice(EMAIL_DOMAINS)}"
        if email not in taken and f"{first} {last}" not in taken:
            taken.update((email, f"{first} {last}"))
            break
    return Author(user_id=user_id, first=first, last=last, email=email, **_habits(fake, rng))


def _person_author(
    people: PeopleDrawer, fake: Faker, rng: random.Random, user_id: str, taken: set[str]
) -> Author:
    """An author of the multilingual generator: a :class:`~lmleak.data.synth.people.Person` and the
    same habits as an English one (a name that cannot be turned round is never written "Last, First")."""
    p = people.draw(taken)
    a = Author(
        user_id=user_id, first=p.given, last=p.family, email=p.emails[0], person=p, **_habits(fake, rng)
    )
    if a.from_style == "last_first" and a.last_first() is None:
        a.from_style = "quoted"
    return a


def _habits(fake: Faker, rng: random.Random) -> dict[str, Any]:
    """Phone, address, company, title, signature and From: styles (drawn in the old order)."""
    address = f"{fake.street_address()}, {fake.city()}, {fake.state_abbr()} {fake.zipcode()}"
    signature = rng.choices(SIGNATURES, SIGNATURE_WEIGHTS)[0]
    return {
        "phone": _phone(rng) if rng.random() < 0.8 else None,
        "address": address if rng.random() < 0.6 else None,
        "company": fake.company(),
        "title": rng.choice(TITLES),
        "signature": signature,
        "from_style": rng.choices(("quoted", "plain", "last_first"), (0.5, 0.4, 0.1))[0],
    }


def zipf_weights(n: int, exponent: float = ZIPF_EXPONENT) -> list[float]:
    """Normalised Zipf weights ``1/rank^s`` for ranks 1..n.

    Example:
        >>> [round(w, 3) for w in zipf_weights(3, 1.0)]
        [0.545, 0.273, 0.182]
    """
    raw = [1.0 / (r**exponent) for r in range(1, n + 1)]
    total = sum(raw)
    return [w / total for w in raw]


class _Writer:
    """Writes messages; owns the RNG so every choice is in one seeded order."""

    def __init__(self, rng: random.Random, fake: Faker) -> None:
        self.rng, self.fake = rng, fake
        self.day = 0.0

    def date(self) -> str:
        self.day += self.rng.random() * 0.6
        d = int(self.day)
        month, dom = 1 + (d // 28) % 12, 1 + d % 28
        year = 2019 + d // 336
        hh, mm = self.rng.randint(0, 23), self.rng.randint(0, 59)
        wd = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[d % 7]
        mon = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")[month - 1]
        return f"{wd}, {dom:02d} {mon} {year} {hh:02d}:{mm:02d}:00 +0000"

    def words(self) -> dict[str, tuple[str, str, str]]:
        r = self.rng
        return {
            "component": (r.choice(COMPONENTS), "", ""),
            "verb": (r.choice(VERBS), "", ""),
            "condition": (r.choice(CONDITIONS), "", ""),
            "version": (f"{r.randint(1, 4)}.{r.randint(0, 19)}.{r.randint(0, 9)}", "", ""),
            "date": (f"{r.randint(1, 28)} {r.choice(('March', 'June', 'August', 'December'))}", "", ""),
        }

    def from_line(self, doc: DocDraft, a: Author, name: str, email: str) -> None:
        """``From:`` with the name ``name`` (the message's signing) and the address ``email``."""
        if a.from_style == "last_first":
            name = a.last_first() or name
        quoted = a.from_style in ("quoted", "last_first")
        doc.fill('From: "{name}" <{email}>\n' if quoted else "From: {name} <{email}>\n", _pii(a, name, email))

    def signature(self, doc: DocDraft, a: Author, date: str, name: str, email: str) -> None:
        """The sign-off in ``a``'s habitual style (now and then another), signed ``name`` <``email``>."""
        r, v = self.rng, _pii(a, name, email)
        style = a.signature if r.random() < 0.85 else r.choice(SIGNATURES)  # habits, not rules
        if style == "none":
            doc.fill(f"{r.choice(CLOSINGS)}\n{{first}}\n", v)
        elif style == "block":
            doc.fill(f"{r.choice(CLOSINGS)}\n{{first}}\n\n-- \n{{name}}\n{{title}}, {{company}}\n", v)
            if a.phone:
                doc.fill(r.choice(("Phone: ", "Tel: ", "Mobile: ", "")) + "{phone}\n", v)
                a.wrote_phone = True
            if a.address:
                doc.fill("{address}\n", v)
                a.wrote_address = True
        elif style == "changelog":
            doc.fill(" -- {name} <{email}>  {date}\n", {**v, "date": (date, "", "")})
        else:
            tail = {"name_email": " <{email}>\n", "quoted_email": '\n"{name}" <{email}>\n'}.get(
                style, " ({email})\n"
            )
            doc.fill(f"{r.choice(CLOSINGS)}\n{{name}}" + tail, v)

    def body(self, doc: DocDraft, reply: bool, long_patch: bool) -> None:
        r = self.rng
        v = self.words()
        doc.fill(r.choice(REPLIES if reply else OPENERS) + "\n", v)
        for _ in range(r.randint(1, 5)):
            v = self.words()
            doc.fill(" ".join(r.choice(BODY) for _ in range(r.randint(1, 3))) + "\n", v)
        if long_patch:
            self.patch(doc)
        doc.add("\n")

    def patch(self, doc: DocDraft) -> None:
        """A diff plus a build log: long, technical, no PII (the long documents of real archives)."""
        r = self.rng
        name = r.choice(("core", "util", "io", "net", "sched")) + r.choice(("", "_impl", "_test")) + ".py"
        doc.add(
            f"\n---\n src/{name} | {r.randint(10, 400)} ++++----\n\ndiff --git a/src/{name} b/src/{name}\n"
        )
        for _ in range(r.randint(100, 700)):
            sign = r.choice(("+", "-", " ", " "))
            var = r.choice(("buf", "size", "offset", "cache", "state", "count", "key", "node"))
            doc.add(
                f"{sign}    {var} = {r.choice(('self.', ''))}{r.choice(('read', 'load', 'parse', 'flush'))}"
                f"_{var}({r.randint(0, 4096)})\n"
            )
        doc.add("\nBuild log:\n")
        for i in range(r.randint(30, 200)):
            doc.add(
                f"[{i:05d}] test_{r.choice(COMPONENTS).replace(' ', '_')}_{r.randint(0, 99)} "
                f"{r.choices(('PASSED', 'FAILED', 'SKIPPED'), (0.9, 0.05, 0.05))[0]}\n"
            )

    def footer(self, doc: DocDraft, a: Author) -> None:
        r = self.rng
        if r.random() < 0.25:
            doc.add("\n" + "\n".join(DISCLAIMER) + "\n")
        doc.add("\n" + "\n".join(FOOTER) + "\n")


def _pii(a: Author, name: str, email: str) -> dict[str, tuple[str, str, str]]:
    """The slots of a From: line or a sign-off: ``a``'s PII as spans of ``a`` (the title plain text)."""
    u = a.user_id
    return {
        "first": (a.first, "PERSON", u),
        "name": (name, "PERSON", u),
        "email": (email, "EMAIL", u),
        "company": (a.company, "ORGANIZATION", u),
        "phone": (a.phone or "", "PHONE", u),
        "address": (a.address or "", "ADDRESS", u),
        "title": (a.title, "", ""),
    }


def _quote(doc: DocDraft, parent: DocDraft, author: Author, date: str, rng: random.Random) -> None:
    """``On <date>, Name <email> wrote:`` and the parent's lines (at most 25 of them) quoted."""
    doc.fill(
        "On {date}, {name} <{email}> wrote:\n",
        {**_pii(author, author.name, author.email), "date": (date, "", "")},
    )
    text = parent.text
    # quote the body and signature, not the headers (up to the first blank line)
    cut = text.find("\n\n") + 2 if "\n\n" in text else 0
    lines = text[cut:].split("\n")
    keep = min(len(lines), rng.randint(4, 25))
    part = DocDraft()
    part.add(text[cut:])
    part.spans = [(s - cut, e - cut, en, v, o) for s, e, en, v, o in parent.spans if s >= cut]
    trimmed = DocDraft()
    end = sum(len(ln) + 1 for ln in lines[:keep])
    trimmed.add(part.text[:end].rstrip("\n"))
    trimmed.spans = [sp for sp in part.spans if sp[1] <= len(trimmed.text)]
    doc.extend(trimmed, prefix="> ")


# long: 27 of its lines are the docstring (every argument, a doctest); the body is one loop
def synthesize(
    out_dir: str | Path,
    *,
    scale: float = 1.0,
    seed: int = 0,
    canaries: int = 0,
    canary_repeats: int = 1,
    digest_every: int = 375,
    digest_size: int = 50,
    locales: Sequence[str] = DEFAULT_LOCALES,
    canary_design: str = "random",
) -> dict[str, Path]:
    """Write ``corpus.jsonl``, ``subjects.jsonl``, ``canaries.jsonl`` and ``secrets.jsonl`` to ``out_dir``.

    Args:
        out_dir: the output folder (created).
        scale: 1.0 is about 10^6 tokens; the size grows linearly with it.
        seed: same seed, byte-identical files.
        canaries: secrets ``My access token is: <8 hex digits>`` to insert, one owner each.
        canary_repeats: copies of each canary, each a document of its own by its owner.
        digest_every: one list digest per this many messages (scale >= 0.25 has some); 0 for none.
        digest_size: messages a digest concatenates (the latest ones): a long document.
        locales: Faker locales of the authors' names (:mod:`lmleak.data.synth.people`: every name
            shape); ``("en_US",)`` alone writes the English-only corpus of earlier versions, byte
            for byte.
        canary_design: ``random`` (hex tokens) or ``crafted`` (the same draws as rune secrets behind
            :data:`~lmleak.data.canaries.CRAFTED_PREFIX`, Panda et al. 2025).

    Returns:
        The paths by name (``corpus``, ``subjects``, ``canaries``, ``secrets``).

    Example:
        >>> import tempfile, json
        >>> paths = synthesize(tempfile.mkdtemp(), scale=0.02, seed=1, canaries=1, canary_repeats=2)
        >>> [json.loads(line)["repeats"] for line in open(paths["canaries"])]
        [2]
    """
    _check_args(scale, canaries, canary_repeats, digest_every)
    check_design(canary_design)
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    n_messages = max(20, round(MESSAGES_PER_SCALE * scale))
    n_authors = max(10, round(AUTHORS_PER_SCALE * math.sqrt(scale)))
    if canaries > n_authors:
        raise ConfigError(
            f"{plural(canaries, 'canary')} need{'s' if canaries == 1 else ''} at least as many authors (got {n_authors})",
            field="canaries",
            hint="lower --canaries or raise --scale",
        )
    secure_dir(out_dir)  # an output folder that cannot be made fails now, not after the work
    taken: set[str] = set()
    if tuple(locales) == ENGLISH:
        authors = [_author(fake, rng, f"a-{i:04d}", taken) for i in range(n_authors)]
    else:
        people = PeopleDrawer(locales, seed, rng)
        authors = [_person_author(people, fake, rng, f"a-{i:04d}", taken) for i in range(n_authors)]
    weights = zipf_weights(n_authors)
    w = _Writer(rng, fake)

    docs: list[tuple[str, DocDraft]] = []  # (owner user id, document) in writing order
    recent: list[tuple[Author, DocDraft, str]] = []  # candidate parents: (author, doc, date)
    since_digest: list[DocDraft] = []
    for i in range(n_messages):
        a = rng.choices(authors, weights)[0]
        a.messages += 1
        date = w.date()
        parent = rng.choice(recent[-30:]) if recent and rng.random() < 0.65 else None
        doc = _message(w, rng, a, date, parent)
        docs.append((a.user_id, doc))
        recent.append((a, doc, date))
        since_digest.append(doc)
        if digest_every and len(since_digest) >= digest_every:
            docs.append((DIGEST_USER, _digest(rng, i // digest_every + 1, since_digest[-digest_size:])))
            since_digest = []
    design = CanaryDesign(canary_design, ("".join(d.parts) for _, d in docs))
    canary_rows = _add_canaries(rng, authors, canaries, canary_repeats, docs, design)
    return _write(Path(out_dir), docs, authors, canary_rows)


def _check_args(scale: float, canaries: int, canary_repeats: int, digest_every: int) -> None:
    """Refuse a non-positive scale, negative canaries or repeats below 1, a negative digest interval."""
    if not (scale > 0 and math.isfinite(scale)):
        raise ConfigError(
            f"scale must be a positive number, got {scale}", field="scale", hint="e.g. --scale 0.1"
        )
    if canaries < 0 or canary_repeats < 1:
        raise ConfigError("canaries must be >= 0 and canary repeats >= 1", field="canaries")
    if digest_every < 0:
        raise ConfigError("digest_every must be >= 0", field="digest_every")


def _message(
    w: _Writer, rng: random.Random, a: Author, date: str, parent: tuple[Author, DocDraft, str] | None
) -> DocDraft:
    """One list message by ``a``: headers, a body (or an auto-reply), signature, quote of ``parent``, footer."""
    doc = DocDraft()
    name, email = a.message(rng)
    w.from_line(doc, a, name, email)
    doc.add(f"To: {LIST_ADDRESS}\n")
    if parent is not None and rng.random() < 0.4:
        doc.fill("Cc: {name} <{email}>\n", _pii(parent[0], parent[0].name, parent[0].email))
    subject = f"{rng.choice(COMPONENTS)} {rng.choice(VERBS)}"
    doc.add(f"Date: {date}\nSubject: [{LIST}] {'Re: ' if parent else ''}{subject}\n")
    doc.add(f"Message-ID: <{rng.getrandbits(48):012x}@lists.example.org>\n\n")
    if rng.random() < 0.03:  # auto-replies: pure boilerplate
        doc.fill("\n".join(AUTO_REPLY) + "\n", w.words())
    else:
        w.body(doc, reply=parent is not None, long_patch=parent is None and rng.random() < 0.05)
        w.signature(doc, a, date, name, email)
        if parent is not None:
            doc.add("\n")
            _quote(doc, parent[1], parent[0], parent[2], rng)
    w.footer(doc, a)
    return doc


def _digest(rng: random.Random, volume: int, parts: list[DocDraft]) -> DocDraft:
    """A list digest (volume ``volume``) concatenating ``parts``: one long document."""
    digest = DocDraft()
    digest.add(f"{LIST} Digest, Vol {volume}, Issue {rng.randint(1, 60)}\n\n")
    digest.add(f"Send {LIST} mailing list submissions to\n\t{LIST_ADDRESS}\n\nToday's Topics:\n\n")
    for j, part in enumerate(parts, 1):
        digest.add(
            f"----------------------------------------------------------------------\n\nMessage: {j}\n"
        )
        digest.extend(part)
    return digest


def _add_canaries(
    rng: random.Random,
    authors: list[Author],
    canaries: int,
    canary_repeats: int,
    docs: list[tuple[str, DocDraft]],
    design: CanaryDesign | None = None,
) -> list[dict[str, Any]]:
    """Append each canary's copies to ``docs``; the canary rows.

    Distinct owners among the authors, unique secrets, each copy a document of its own (drawn the
    same way for either ``design``; a crafted one maps the hex digits to runes).
    """
    design = design or CanaryDesign()
    owners = rng.sample(authors, canaries)
    canary_rows = []
    used: set[str] = set()
    for owner in owners:
        secret = f"{rng.getrandbits(32):08x}"
        while secret in used:
            secret = f"{rng.getrandbits(32):08x}"
        used.add(secret)
        prefix, shown = design.prefix(CANARY_PREFIX), design.secret(secret, HEX)
        for _ in range(canary_repeats):
            d = DocDraft()
            d.add(prefix)
            d.pii(shown, "CANARY", owner.user_id)
            docs.append((owner.user_id, d))
        row = {
            "text": prefix + shown,
            "prefix": prefix,
            "secret": shown,
            "user_id": owner.user_id,
            "repeats": canary_repeats,
            "doc_ids": [],
            "alphabet": HEX,
        }
        canary_rows.append({**row, **design.row_fields(HEX)})
    return canary_rows


def _write(
    out: Path, docs: list[tuple[str, DocDraft]], authors: list[Author], canary_rows: list[dict[str, Any]]
) -> dict[str, Path]:
    secure_dir(out)  # owner-only (the synthetic secrets are the test oracle)
    counters: dict[str, int] = {}
    corpus_lines, secret_lines = [], []
    canary_of = {(c["user_id"], c["text"]): c for c in canary_rows}
    by_id = {a.user_id: a for a in authors}
    for uid, d in docs:
        j = counters.get(uid, 0)
        counters[uid] = j + 1
        doc_id = f"{uid}-m{j}"
        text = d.text.rstrip("\n")
        corpus_lines.append(json.dumps({"user_id": uid, "doc_id": doc_id, "text": text}, ensure_ascii=False))
        if (uid, text) in canary_of:
            canary_of[(uid, text)]["doc_ids"].append(doc_id)
        for start, end, entity, value, owner in d.spans:
            if end > len(text):
                continue  # only trailing newlines are stripped: no span can end there
            assert text[start:end] == value  # the spans are the ground truth; never let them drift
            person = by_id[owner].person
            if person is not None and entity in ("PERSON", "EMAIL"):
                person.wrote(**{"name" if entity == "PERSON" else "email": value})
            secret_lines.append(
                json.dumps(
                    {
                        "doc_id": doc_id,
                        "user_id": uid,
                        "subject_id": owner,
                        "start": start,
                        "end": end,
                        "entity": entity,
                        "value": value,
                        "name_shape": by_id[owner].shape,
                    },
                    ensure_ascii=False,
                )
            )
    files = {
        "corpus": ("corpus.jsonl", corpus_lines),
        "subjects": (
            "subjects.jsonl",
            [json.dumps(a.subject(), ensure_ascii=False) for a in authors if a.messages],
        ),
        "canaries": ("canaries.jsonl", [json.dumps(c, ensure_ascii=False) for c in canary_rows]),
        "secrets": ("secrets.jsonl", secret_lines),
    }
    return write_jsonl_files(out, files)


@dataclass(frozen=True, slots=True)
class MailCorpus:
    """What ``lmleak synth mail`` wrote: sizes, repeated-line share, canaries, PII spans, the files."""

    documents: int
    authors: int
    words: int
    tokens_estimate: int
    duplicate_line_share: float
    longest_document_words: int
    canaries: int
    canary_repeats: int
    secrets_per_entity: dict[str, int]
    locales: list[str]
    subjects_per_shape: dict[str, int]  # people of the corpus per name shape (lmleak.data.names)
    files: dict[str, str]
    canary_design: str = "random"

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object, keys in the order above."""
        return asdict(self)


def summarize(
    paths: dict[str, Path],
    canaries: int,
    canary_repeats: int,
    locales: Sequence[str] = DEFAULT_LOCALES,
    canary_design: str = "random",
) -> MailCorpus:
    """Sizes, repeated-line share, PII spans per entity and people per name shape of a written
    mailing-list archive."""
    docs = read_jsonl(paths["corpus"])
    entities = Counter(row["entity"] for row in read_jsonl(paths["secrets"]))
    words = sum(len(d["text"].split()) for d in docs)
    lines = Counter(ln for d in docs for ln in d["text"].split("\n") if ln.strip())
    return MailCorpus(
        documents=len(docs),
        authors=len({d["user_id"] for d in docs}),
        words=words,
        tokens_estimate=round(words * TOKENS_PER_WORD),
        duplicate_line_share=round(sum(c for c in lines.values() if c > 1) / max(sum(lines.values()), 1), 4),
        longest_document_words=max(len(d["text"].split()) for d in docs),
        canaries=canaries,
        canary_repeats=canary_repeats,
        secrets_per_entity=dict(sorted(entities.items())),
        locales=list(locales),
        subjects_per_shape=subjects_per_shape(paths["subjects"]),
        files={k: str(v) for k, v in paths.items()},
        canary_design=canary_design,
    )


def synthesize_corpus(
    out_dir: str | Path,
    *,
    scale: float = 1.0,
    seed: int = 0,
    canaries: int = 0,
    canary_repeats: int = 1,
    locales: Sequence[str] = DEFAULT_LOCALES,
    canary_design: str = "random",
) -> MailCorpus:
    """:func:`synthesize`, then :func:`summarize` what it wrote (``lmleak synth mail``)."""
    paths = synthesize(
        out_dir,
        scale=scale,
        seed=seed,
        canaries=canaries,
        canary_repeats=canary_repeats,
        locales=locales,
        canary_design=canary_design,
    )
    return summarize(paths, canaries, canary_repeats, locales, canary_design)
