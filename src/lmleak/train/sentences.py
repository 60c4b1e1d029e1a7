"""Sentence splitting, the first pre-processing step of CRT (paper 002, appendix A.5 rules 2-3).

Rule 2: split into data points *before* dedup and redaction, or an approximate policy shifts
boundaries and misaligns almost every data point between D and its neighbour D'. Rule 3: each
data point holds whole natural sentences, so a secret is never cut across two data points.

The splitter is rule-based and deterministic (no model, no download): a line break ends a
sentence, and so does ``.``/``!``/``?`` (plus closing quotes/brackets) followed by whitespace and an
upper-case letter, a quote, a bracket or ``<`` — except after a known abbreviation ("Mr.", "Apt.",
"St.") or a single initial ("J. Smith"). A period inside a token (e-mail, URL, decimal, "ORD-1.")
is followed by no whitespace and never splits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lmleak.data.corpus import Corpus, Document

ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st apt ave blvd rd ln jr sr inc co ltd corp no vs etc mt ft gen rep sen gov "
    "lt col sgt capt dept univ est approx fig eq e.g i.e u.s a.m p.m".split()
)
_END = re.compile(r"[.!?]+[\"')\]]*(?=\s+[A-Z\"'(<\[])")
_SENTENCE_ID = re.compile(r"#s\d+$")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (whitespace around each trimmed).

    Example:
        >>> t = "Agent: Hello Mr. Smith. Your order ORD-12345678 shipped!\\nCustomer: Thanks, bye."
        >>> [t[a:b] for a, b in sentence_spans(t)]
        ['Agent: Hello Mr. Smith.', 'Your order ORD-12345678 shipped!', 'Customer: Thanks, bye.']
    """
    cuts: list[int] = []
    for line in re.finditer(r"[^\n]+", text):
        start = line.start()
        for m in _END.finditer(text, line.start(), line.end()):
            word = re.search(r"([\w.]+)$", text[start : m.start()])
            prev = word.group(1).lower() if word else ""
            if prev in ABBREVIATIONS or (len(prev) == 1 and prev.isalpha()):
                continue
            cuts.extend((start, m.end()))
            start = m.end()
        cuts.extend((start, line.end()))
    out = []
    for a, b in zip(cuts[::2], cuts[1::2], strict=True):
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((a, b))
    return out


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``.

    Example:
        >>> split_sentences("It rained. We stayed in.")
        ['It rained.', 'We stayed in.']
    """
    return [text[a:b] for a, b in sentence_spans(text)]


def is_sentence_id(doc_id: str) -> bool:
    """Whether ``doc_id`` names a sentence already split out (``<orig>#s<i>``)."""
    return _SENTENCE_ID.search(doc_id) is not None


def iter_sentence_documents(corpus: Corpus) -> Iterator[Document]:
    """One document per sentence, ``doc_id`` ``<orig>#s<i>``, ``user_id`` kept, order kept.

    Documents whose id already ends in ``#s<i>`` are passed through unchanged, so the
    ``lmleak dedup`` / ``redact`` / ``split`` commands can be chained.
    """
    for doc in corpus:
        if is_sentence_id(doc.doc_id):
            yield doc
            continue
        for i, sentence in enumerate(split_sentences(doc.text)):
            yield Document(doc.user_id, f"{doc.doc_id}#s{i}", sentence)


def sentence_corpus(corpus: Corpus) -> Corpus:
    """The corpus split into sentence documents (see :func:`iter_sentence_documents`).

    Example:
        >>> c = sentence_corpus(Corpus([Document("u", "d", "One. Two.")]))
        >>> [(d.doc_id, d.text) for d in c]
        [('d#s0', 'One.'), ('d#s1', 'Two.')]
    """
    return Corpus(iter_sentence_documents(corpus), source=corpus.source)
