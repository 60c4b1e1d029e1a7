"""Counts in words: ``1 person``, ``2 people``, ``1 probe``, ``3 analyses`` (for every message, summary
line and page that puts a number before a noun; a release manager reading "1 people" stops trusting
the rest).

Pure text, no lmleak imports: the lowest layer, beside :mod:`lmleak.errors` and :mod:`lmleak.intervals`.
"""

from __future__ import annotations

#: Plurals English does not make by a rule (the nouns lmleak counts).
IRREGULAR = {
    "person": "people",
    "analysis": "analyses",
    "child": "children",
    "datum": "data",
    "this": "these",
    "was": "were",
    "is": "are",
    "has": "have",
}

_VOWELS = set("aeiou")


def plural_of(word: str) -> str:
    """The plural of a singular English ``word`` (the last word of a phrase: ``made-up person``).

    Example:
        >>> [plural_of(w) for w in ("user", "person", "canary", "day", "address", "match", "analysis")]
        ['users', 'people', 'canaries', 'days', 'addresses', 'matches', 'analyses']
        >>> plural_of("made-up person"), plural_of("Person")
        ('made-up people', 'People')
    """
    head, sep, last = word.rpartition(" ")
    low = last.lower()
    if low in IRREGULAR:
        many = IRREGULAR[low]
        many = many.capitalize() if last[:1].isupper() else many
    elif low.endswith("y") and len(low) > 1 and low[-2] not in _VOWELS:
        many = last[:-1] + "ies"
    elif low.endswith(("s", "x", "z", "ch", "sh")):
        many = last + "es"
    else:
        many = last + "s"
    return head + sep + many


def plural(count: float | None, word: str, many: str | None = None) -> str:
    """``count`` and ``word``, the word in the plural unless the count is exactly 1 (``many``: the
    plural when no rule gives it). Integers print as they are; other numbers in ``:g`` form; a count
    that a record lacks (None) as "an unknown number of".

    Example:
        >>> plural(1, "person"), plural(0, "person"), plural(2, "probe"), plural(1.0, "user")
        ('1 person', '0 people', '2 probes', '1 user')
        >>> plural(3, "criterion", "criteria"), plural(2.5, "token"), plural(None, "probe")
        ('3 criteria', '2.5 tokens', 'an unknown number of probes')
    """
    many = many or plural_of(word)
    if count is None:
        return f"an unknown number of {many}"
    number = f"{count:g}" if isinstance(count, float) else str(count)
    return f"{number} {word if count == 1 else many}"
