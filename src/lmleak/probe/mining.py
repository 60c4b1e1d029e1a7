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
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Document
from lmleak.errors import ConfigError, DataFileError
from lmleak.ledger.ledger import StreamedCorpus
from lmleak.pii.regex import RegexDetector
from lmleak.probe.formats import NAME_PATTERN
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
    template: str  # with a ``{name}`` slot; the value follows it
    support: int  # subjects whose value it precedes
    uses: int  # occurrences of the context with any subject's name
    hits: int  # of those, followed by the subject's own value within WINDOW characters
    gap_chars: int = 0  # median characters between the template's end and the value (0: adjacent)

    @property
    def precision(self) -> float:
        return self.hits / self.uses if self.uses else 0.0


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

    Example:
        >>> docs = [Document("u", f"d{i}", f"From: {n} <{e}>") for i, (n, e) in
        ...         enumerate([("Ann Lee", "a@example.org"), ("Bob Roe", "b@example.org")])]
        >>> subs = [{"name": "Ann Lee", "email": "a@example.org"}, {"name": "Bob Roe", "email": "b@example.org"}]
        >>> [(t.template, t.support, t.precision) for t in mine_templates(docs, subs)["email"]]
        [('From: {name} <', 2, 1.0)]
    """
    owners, own_values = _subject_values(subjects, targets)
    support = _candidate_support(documents, owners)
    keep = _kept_candidates(support, top)
    uses, hits, gaps = _precision_pass(documents, keep, own_values)
    out: dict[str, list[MinedTemplate]] = {t: [] for t in targets}
    for t, key in keep:
        lead, between = key.split("\x00")
        tpl = _escape(lead) + "{name}" + _escape(between)
        g = sorted(gaps[(t, key)])
        out[t].append(
            MinedTemplate(
                t, tpl, len(support[(t, key)]), uses[(t, key)], hits[(t, key)], g[len(g) // 2] if g else 0
            )
        )
    for t in out:
        out[t].sort(key=lambda m: (-m.support, -m.precision, len(m.template), m.template))
        out[t] = out[t][:top]
    return out


def _subject_values(
    subjects: list[dict[str, Any]], targets: tuple[str, ...]
) -> tuple[dict[str, list[tuple[str, str]]], dict[tuple[str, str], set[str]]]:
    """Value -> its (type, name) owners, and (type, name) -> that person's values."""
    owners: dict[str, list[tuple[str, str]]] = defaultdict(list)  # value -> (type, name)
    own_values: dict[tuple[str, str], set[str]] = defaultdict(set)  # (type, name) -> values
    for s in subjects:
        for t in targets:
            if s.get(t) and s.get("name"):
                owners[str(s[t])].append((t, str(s["name"])))
                own_values[(t, str(s["name"]))].add(str(s[t]))
    return owners, own_values


def _candidate_support(
    documents: Iterable[Document], owners: dict[str, list[tuple[str, str]]]
) -> dict[tuple[str, str], set[str]]:
    """First pass: (type, lead NUL between) -> the names whose own value that context precedes."""
    finder = RegexDetector(entities={"EMAIL", "PHONE", "ADDRESS"})
    support: dict[tuple[str, str], set[str]] = defaultdict(set)
    for doc in documents:
        text = doc.text
        for span in finder.detect(text):
            for t, name in owners.get(text[span.start : span.end], ()):
                window = text[max(0, span.start - WINDOW) : span.start]
                j = window.rfind(name)
                if j < 0:
                    continue
                name_start = span.start - len(window) + j
                between = _between(text, name_start + len(name), span.start)
                if between is not None:
                    support[(t, _lead(text, name_start) + "\x00" + between)].add(name)
    return support


def _kept_candidates(
    support: dict[tuple[str, str], set[str]], top: int
) -> dict[tuple[str, str], re.Pattern[str]]:
    """The best ``3 * top`` candidates per type seen with two subjects or more, as name regexes."""
    ranked: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for (t, key), who in support.items():
        ranked[t].append((key, len(who)))
    keep: dict[tuple[str, str], re.Pattern[str]] = {}
    for t, items in ranked.items():
        items.sort(key=lambda kv: (-kv[1], len(kv[0]), kv[0]))
        for key, n in items[: 3 * top]:
            if n >= 2 or len(items) == 1:
                lead, between = key.split("\x00")
                keep[(t, key)] = re.compile(
                    re.escape(lead) + f"(?P<name>{NAME_PATTERN})" + re.escape(between)
                )
    return keep


def _precision_pass(
    documents: Iterable[Document],
    keep: dict[tuple[str, str], re.Pattern[str]],
    own_values: dict[tuple[str, str], set[str]],
) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]], dict[tuple[str, str], list[int]]]:
    """Second pass: uses of each kept context, hits (own value follows) and the gaps to it."""
    uses: Counter[tuple[str, str]] = Counter()
    hits: Counter[tuple[str, str]] = Counter()
    gaps: dict[tuple[str, str], list[int]] = defaultdict(list)
    for doc in documents:  # second pass: how reliably each kept context precedes the person's own value
        text = doc.text
        for (t, key), rx in keep.items():
            for m in rx.finditer(text):
                own = own_values.get((t, m["name"]))
                if not own:
                    continue  # a name without a known value of this type says nothing either way
                uses[(t, key)] += 1
                after = text[m.end() : m.end() + WINDOW]  # exact match means "generated within its budget"
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

    Example:
        >>> mined_budgets({"phone": [MinedTemplate("phone", "-- \\n{name}\\n", 5, 5, 5, 60)]})
        {'phone': 30}
    """
    return {
        t: max(MAX_NEW_TOKENS.get(t, 1), -(-max(m.gap_chars for m in ms) // CHARS_PER_TOKEN))
        for t, ms in mined.items()
        if ms
    }


def write_templates(mined: dict[str, list[MinedTemplate]], path: str | Path) -> Path:
    """Write mined templates as a templates YAML file (groups named after the target type), with the
    evidence for each as a comment and the generation budgets they need (``max_new_tokens``)."""
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
    to ``out_file``; returns one row per template (``target``, ``template``, ``support``, ``uses``,
    ``precision`` rounded to 4 places)."""
    if top < 1:
        raise ConfigError("must be >= 1", field="--top")
    mined = mine_templates(StreamedCorpus(corpus), read_subjects(subjects), top=top)
    write_templates(mined, out_file)
    return [
        {
            "target": t,
            "template": m.template,
            "support": m.support,
            "uses": m.uses,
            "precision": round(m.precision, 4),
        }
        for t, ms in mined.items()
        for m in ms
    ]
