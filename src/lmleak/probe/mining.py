"""Probing templates mined from the corpus: the contexts in which a person's PII follows their name.

Paper 003's templates (appendix A.3) are prose — "Please contact {name} by email address" — because
its pile-derived subjects appear in prose. A model fine-tuned on mail or changelogs saw its users'
e-mails as ``From: {name} <`` and phones under ``-- \\n{name}\\n``; probing it in prose understates
what it leaks (measured on a real changelog corpus: 1.7 % exact match with the appendix templates,
70.4 % with templates shaped like the corpus). A template here is what the corpus itself writes
before a value:

    <lead> {name} <between> <value>

``lead`` is the text from the start of the name's line (with the line before it when the name opens
its line, e.g. ``-- \\n``); ``between`` is the text from the end of the name to the value, cut after
its first newline. Both are kept only when short (:data:`MAX_LEAD`, :data:`MAX_BETWEEN` characters).
A candidate counts once per subject whose value it precedes; candidates are ranked by that count
(``support``), then by how often the named person's own value follows within :data:`WINDOW`
characters among all their uses with any subject's name (``precision``),
and the top ones are written as template groups named after the target type (``email``,
``phone``, ``address``), which :func:`lmleak.probe.templates.build_probes` uses at every level.

Names of every shape (issue 28): a person is looked for under every spelling the subjects file
gives (``name`` and ``variants``), but a template has only the ``{name}`` slot, which probing fills
with the subject's ``name`` — never a mangled spelling the builder set aside. A nickname written in
parentheses after the name becomes a ``{nickname}`` slot (``From: {name} ({nickname}) <``). The
candidates are ranked again among the subjects of each name shape; where a shape's best context is
not among everyone's best, that shape gets a group of its own (``email:nickname``), which probing
uses for the subjects of that shape.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Document
from lmleak.data.names import name_shape, split_nickname
from lmleak.errors import ConfigError, DataFileError
from lmleak.ledger.ledger import StreamedCorpus
from lmleak.pii.regex import RegexDetector
from lmleak.probe.subjects import read_subjects
from lmleak.probe.templates import MAX_NEW_TOKENS, STRUCTURED
from lmleak.runs import atomic_write_text

#: Characters of text kept before the name, and between the name and the value.
MAX_LEAD = 24
MAX_BETWEEN = 24
#: How far before a value the name is looked for.
WINDOW = 160


@dataclass(frozen=True, slots=True)
class MinedTemplate:
    """One mined template and the evidence for it."""

    target_type: str
    template: str  # with a ``{name}`` slot (and a ``{nickname}`` one where the corpus writes it); the value follows it
    support: int  # subjects whose value it precedes (of the template's shape, for a shape's group)
    uses: int  # occurrences of the context with any subject's name
    hits: int  # of those, followed by the subject's own value within WINDOW characters
    gap_chars: int = 0  # median characters between the template's end and the value (0: adjacent)
    shape: str | None = None  # the name shape of a shape's own group (None: every subject)

    @property
    def precision(self) -> float:
        return self.hits / self.uses if self.uses else 0.0

    @property
    def group(self) -> str:
        """The templates-file group it goes in: the target type, or ``type:shape``."""
        return self.target_type if self.shape is None else f"{self.target_type}:{self.shape}"


@dataclass
class _Person:
    """One subject as mining sees it: the spellings to look for, the nickname, the name shape."""

    spellings: tuple[str, ...]
    nickname: str | None
    shape: str


def _lead(text: str, name_start: int) -> str:
    line_start = text.rfind("\n", 0, name_start) + 1
    if line_start == name_start and line_start > 0:  # the name opens its line: take the line before
        line_start = text.rfind("\n", 0, line_start - 1) + 1
    lead = text[line_start:name_start]
    return lead if len(lead) <= MAX_LEAD else ""


def _between(text: str, name_end: int, value_start: int) -> str | None:
    between = text[name_end:value_start]
    cut = between.find("\n")
    if cut >= 0:
        between = between[: cut + 1]
    return between if len(between) <= MAX_BETWEEN else None


def _escape(s: str) -> str:
    return s.replace("{", "{{").replace("}", "}}")


def _template(key: str) -> str:
    """The template of a candidate key (``lead NUL between``, the nickname already a ``{nickname}`` slot)."""
    lead, between = key.split("\x00")
    return _escape(lead) + "{name}" + _escape(between).replace(_NICK_MARK, "{nickname}")


_NICK_MARK = "\x01"  # stands for the nickname inside a candidate key


def mine_templates(
    documents: Iterable[Document],
    subjects: list[dict[str, Any]],
    *,
    targets: tuple[str, ...] = STRUCTURED,
    top: int = 5,
) -> dict[str, list[MinedTemplate]]:
    """The ``top`` templates per target type (see the module docstring), from two streamed passes over
    ``documents`` (which must be re-iterable: a :class:`~lmleak.data.corpus.Corpus` or a
    :class:`~lmleak.ledger.ledger.StreamedCorpus`): candidates and their support, then the precision
    of the best ones. Values are found by the PII regular expressions, so a pass costs the same
    whatever the number of subjects.

    Every spelling of a person counts (``name`` and ``variants``: a context is the same whether
    the corpus writes ``José Núñez`` or ``Jose Nunez`` before the address, and the template only
    ever gets the subject's ``name``), every address (``emails``), and a nickname written after the
    name becomes a ``{nickname}`` slot. Per name shape (``name_shape``), the templates are ranked
    again on that shape's subjects; where a shape's best context is not among the overall list's
    (``{name} ({nickname}) <`` for nicknames), its list is returned as group ``type:shape`` too.

    Example:
        >>> docs = [Document("u", f"d{i}", f"From: {n} <{e}>") for i, (n, e) in
        ...         enumerate([("Ann Lee", "a@example.org"), ("Bob Roe", "b@example.org")])]
        >>> subs = [{"name": "Ann Lee", "email": "a@example.org"}, {"name": "Bob Roe", "email": "b@example.org"}]
        >>> [(t.template, t.support, t.precision) for t in mine_templates(docs, subs)["email"]]
        [('From: {name} <', 2, 1.0)]
    """
    people, owners, own_values = _subject_values(subjects, targets)
    support = _candidate_support(documents, people, owners)
    ranked = _ranked(support, people, top)
    keep = {(t, key) for lists in ranked.values() for t, key, _ in lists}
    uses, hits, gaps = _precision_pass(documents, {k: _Context.of(k[1]) for k in keep}, own_values)

    def mined(t: str, key: str, n: int, shape: str | None) -> MinedTemplate:
        g = sorted(gaps[(t, key)])
        return MinedTemplate(
            t, _template(key), n, uses[(t, key)], hits[(t, key)], g[len(g) // 2] if g else 0, shape
        )

    out: dict[str, list[MinedTemplate]] = {t: [] for t in targets}
    for (t, shape), lists in sorted(ranked.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        ms = [mined(t, key, n, shape) for tt, key, n in lists if tt == t]
        ms.sort(key=lambda m: (-m.support, -m.precision, len(m.template), m.template))
        ms = ms[:top]
        if shape is None:
            out[t] = ms
        elif ms and ms[0].template not in {m.template for m in out.get(t, [])}:
            out[f"{t}:{shape}"] = ms  # this shape's best context is not among everyone's best
    return out


def _subject_values(
    subjects: list[dict[str, Any]], targets: tuple[str, ...]
) -> tuple[list[_Person], dict[str, list[tuple[str, int]]], dict[tuple[str, str], set[str]]]:
    """The people; value -> its (type, person) owners; (type, spelling) -> that person's values."""
    people: list[_Person] = []
    owners: dict[str, list[tuple[str, int]]] = defaultdict(list)  # value -> (type, person)
    own_values: dict[tuple[str, str], set[str]] = defaultdict(set)  # (type, any spelling) -> values
    for s in subjects:
        if not s.get("name"):
            continue
        name, nick = str(s["name"]), s.get("nickname") or None
        spellings = tuple(
            dict.fromkeys([name, *(split_nickname(str(v))[0] for v in s.get("variants") or ())])
        )
        shape = s.get("name_shape") or name_shape(f"{name} ({nick})" if nick else name)
        people.append(_Person(spellings, nick, shape))
        for t in targets:
            values = [s.get(t)] + (list(s.get("emails") or ()) if t == "email" else [])
            for v in dict.fromkeys(str(x) for x in values if x):
                owners[v].append((t, len(people) - 1))
                for sp in spellings:
                    own_values[(t, sp)].add(v)
    return people, owners, own_values


def _candidate_support(
    documents: Iterable[Document], people: list[_Person], owners: dict[str, list[tuple[str, int]]]
) -> dict[tuple[str, str], set[int]]:
    """First pass: (type, lead NUL between) -> the people whose own value that context precedes."""
    finder = RegexDetector(entities={"EMAIL", "PHONE", "ADDRESS"})
    support: dict[tuple[str, str], set[int]] = defaultdict(set)
    for doc in documents:
        text = doc.text
        for span in finder.detect(text):
            for t, who in owners.get(text[span.start : span.end], ()):
                window = text[max(0, span.start - WINDOW) : span.start]
                # the closest spelling of the person before the value
                found = max(((window.rfind(sp), sp) for sp in people[who].spellings), default=(-1, ""))
                if found[0] < 0:
                    continue
                name_start = span.start - len(window) + found[0]
                between = _between(text, name_start + len(found[1]), span.start)
                if between is None:
                    continue
                nick = people[who].nickname
                if nick and between.startswith(f" ({nick})"):
                    between = f" ({_NICK_MARK})" + between[len(nick) + 3 :]
                support[(t, _lead(text, name_start) + "\x00" + between)].add(who)
    return support


def _ranked(
    support: dict[tuple[str, str], set[int]], people: list[_Person], top: int
) -> dict[tuple[str, str | None], list[tuple[str, str, int]]]:
    """The candidates per type seen with two subjects or more (or the only one) that can rank among
    the ``top`` (support at least the ``top``-th best; precision breaks ties), overall (shape None)
    and among each name shape's subjects: ``(type, key, support)``."""
    ranked: dict[tuple[str, str | None], list[tuple[str, str, int]]] = defaultdict(list)
    for (t, key), who in support.items():
        ranked[(t, None)].append((t, key, len(who)))
        for shape, n in Counter(people[i].shape for i in who).items():
            ranked[(t, shape)].append((t, key, n))
    out: dict[tuple[str, str | None], list[tuple[str, str, int]]] = {}
    for group, items in ranked.items():
        items = [c for c in items if c[2] >= 2 or len(items) == 1]
        items.sort(key=lambda c: (-c[2], len(c[1]), c[1]))
        cut = items[min(top, len(items)) - 1][2] if items else 0
        out[group] = [c for c in items[: 3 * top] if c[2] >= cut]
    return out


@dataclass(frozen=True)
class _Context:
    """A candidate's text around the name: ``lead`` before it, ``between`` after it (up to the value;
    :data:`_NICK_MARK` where any nickname in parentheses stands)."""

    lead: str
    between: str

    @classmethod
    def of(cls, key: str) -> _Context:
        lead, between = key.split("\x00")
        return cls(lead, between)

    def around(self, text: str, start: int, end: int) -> int | None:
        """Where the context ends when the name at ``text[start:end]`` sits in it, else None."""
        if text[max(0, start - len(self.lead)) : start] != self.lead:
            return None
        head, mark, tail = self.between.partition(_NICK_MARK)
        if not text.startswith(head, end):
            return None
        if not mark:
            return end + len(head)
        close = text.find(")", end + len(head), end + len(head) + 25)
        if close < 0 or not text.startswith(tail, close):
            return None
        return close + len(tail)


#: A word where a name can start: an initial, or a word of letters, apostrophes and hyphens.
_WORD = re.compile(r"[^\W\d_](?:\.|[\w'\u2019-]*)")


def _precision_pass(
    documents: Iterable[Document],
    keep: dict[tuple[str, str], _Context],
    own_values: dict[tuple[str, str], set[str]],
) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]], dict[tuple[str, str], list[int]]]:
    """Second pass: uses of each kept context with a subject's name (any spelling), hits (that
    person's own value follows within :data:`WINDOW` characters) and the gaps to it. Names are found
    by their first word (one dictionary look-up per word), not by a name regex per context."""
    uses: Counter[tuple[str, str]] = Counter()
    hits: Counter[tuple[str, str]] = Counter()
    gaps: dict[tuple[str, str], list[int]] = defaultdict(list)
    by_first: dict[str, list[str]] = defaultdict(list)
    for sp in sorted({sp for _, sp in own_values}, key=len, reverse=True):
        by_first[sp.split(" ", 1)[0]].append(sp)
    for doc in documents:  # how reliably each kept context precedes the person's own value
        text = doc.text
        for m in _WORD.finditer(text):
            for sp in by_first.get(m.group(), ()):
                start, end = m.start(), m.start() + len(sp)
                if not text.startswith(sp, start) or (end < len(text) and text[end].isalnum()):
                    continue
                for (t, key), ctx in keep.items():
                    own = own_values.get((t, sp))
                    if not own:
                        continue  # a name without a known value of this type says nothing either way
                    stop = ctx.around(text, start, end)
                    if stop is None:
                        continue  # not this context
                    uses[(t, key)] += 1
                    after = text[stop : stop + WINDOW]  # exact match means "generated within its budget"
                    found = [after.find(v) + len(v) for v in own if v in after]
                    if found:
                        hits[(t, key)] += 1
                        gaps[(t, key)].append(min(found))
    return uses, hits, gaps


#: Characters per token assumed when turning a mined gap into a generation budget (a low estimate
#: for English BPE, so the budget errs long: a longer generation can only find more).
CHARS_PER_TOKEN = 2


def mined_budgets(mined: dict[str, list[MinedTemplate]]) -> dict[str, int]:
    """Generation budgets (new tokens) for mined templates: the value may sit a line or two after
    the template (``-- \n{name}\n`` then title, company, phone), so the budget covers the largest
    median distance from template end to the end of the value — and never less than A.3's budget.

    A name shape's group (``email:nickname``) counts towards its target type's budget.

    Example:
        >>> mined_budgets({"phone": [MinedTemplate("phone", "-- \\n{name}\\n", 5, 5, 5, 60)]})
        {'phone': 30}
    """
    out: dict[str, int] = {}
    for group, ms in mined.items():
        if ms:
            t = group.split(":", 1)[0]
            need = max(MAX_NEW_TOKENS.get(t, 1), -(-max(m.gap_chars for m in ms) // CHARS_PER_TOKEN))
            out[t] = max(out.get(t, 0), need)
    return out


def write_templates(mined: dict[str, list[MinedTemplate]], path: str | Path) -> Path:
    """Write mined templates as a templates YAML file (groups named after the target type, and
    ``type:shape`` for a name shape's own), with the evidence for each as a comment and the
    generation budgets they need (``max_new_tokens``)."""
    import yaml

    lines = [
        "# Templates mined from the corpus by `lmleak probe templates`: the value follows each template.",
        "# support = subjects whose value it precedes; precision = share of its uses followed by the own value.",
    ]
    groups = {t: [m.template for m in ms] for t, ms in mined.items() if ms}
    if not groups:
        raise DataFileError(
            "no template found: no subject's value follows their name in the corpus",
            path=path,
            hint="check that the subjects file was built from this corpus",
        )
    for t, ms in mined.items():
        for m in ms:
            lines.append(
                f"# {t}: {m.template!r} support={m.support} precision={m.precision:.3f} "
                f"value within {m.gap_chars} characters (median)"
            )
    lines.append(yaml.safe_dump(groups, sort_keys=True, allow_unicode=True, default_style='"').rstrip())
    lines.append(yaml.safe_dump({"max_new_tokens": mined_budgets(mined)}, sort_keys=True).rstrip())
    return atomic_write_text(path, "\n".join(lines) + "\n")


def mine_templates_file(
    corpus: str | Path, subjects: str | Path, out_file: str | Path, *, top: int = 5
) -> list[dict[str, Any]]:
    """:func:`mine_templates` from a corpus file and a subjects file, written by :func:`write_templates`
    to ``out_file``; returns one row per template (``target``: its group, the target type or
    ``type:shape``; ``shape``, ``template``, ``support``, ``uses``, ``precision`` rounded to 4 places)."""
    if top < 1:
        raise ConfigError("must be >= 1", field="--top")
    mined = mine_templates(StreamedCorpus(corpus), read_subjects(subjects), top=top)
    write_templates(mined, out_file)
    return [
        {
            "target": t,
            "shape": m.shape,
            "template": m.template,
            "support": m.support,
            "uses": m.uses,
            "precision": round(m.precision, 4),
        }
        for t, ms in mined.items()
        for m in ms
    ]
