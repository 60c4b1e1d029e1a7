"""Made-up people of a person's form (issue 29 item 7, issue 32): the same items under a Faker name
of the locale and shape the person's name is written in, the name swapped for theirs inside every
item. :mod:`lmleak.probe.person` compares one person with them on the person's page;
:mod:`lmleak.probe.nulls` probes them beside many people as the null of a model with no held-out
people."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from lmleak.errors import ConfigError

#: made-up people compared by default: the person's item first among 20 happens 1 time in 20 by chance
MADE_UP_PEOPLE = 19
#: the fields that name the person rather than describe them (never copied to a made-up person)
ID_FIELDS = ("subject_id", "user_id")
_LETTER = r"[^\W\d_]"


def _case_like(new: str, old: str) -> str:
    """``new`` written in the case of ``old`` (lower, UPPER or Title)."""
    if old.islower():
        return new.lower()
    if old.isupper() and len(old) > 1:
        return new.upper()
    if old[:1].isupper() and old[1:].islower():
        return new[:1].upper() + new[1:].lower()
    return new


def _swap(text: str, pairs: list[tuple[str, str]]) -> str:
    """Replace each ``old`` of ``pairs`` (whole runs of letters, any case) by its ``new``, in one pass."""
    olds = [o for o, _ in pairs if o]
    if not olds:
        return text
    new_of = {o.lower(): n for o, n in pairs}
    pattern = re.compile(
        rf"(?<!{_LETTER})("
        + "|".join(re.escape(o) for o in sorted(olds, key=len, reverse=True))
        + rf")(?!{_LETTER})",
        re.IGNORECASE,
    )

    def new_for(found: str) -> str:
        # the pattern ignores case as re does, which lower() does not mirror: 'Yıldırım' matches
        # 'yildirim' (dotless ı ~ i), whose lower() is no key
        hit = new_of.get(found.lower())
        if hit is None:
            hit = next(n for o, n in pairs if o and re.fullmatch(re.escape(o), found, re.IGNORECASE))
        return hit

    return pattern.sub(lambda m: _case_like(new_for(m.group(0)), m.group(0)), text)


def _name_pairs(name: str, new: str) -> list[tuple[str, str]]:
    """Old -> new name parts: every word, and (for e-mail local parts) the joined forms
    first+last, last+first, initial+last and first+initial.

    Example:
        >>> _name_pairs("Ann Lee", "Kim Roe")[:3]
        [('Ann', 'Kim'), ('Lee', 'Roe'), ('AnnLee', 'KimRoe')]
    """
    old_w, new_w = name.split(), new.split()
    pairs = [(o, n) for o, n in zip(old_w, new_w, strict=True) if len(o) > 1]
    if len(old_w) > 1:
        (f, last), (nf, nl) = (old_w[0], old_w[-1]), (new_w[0], new_w[-1])
        pairs += [
            (f + last, nf + nl),
            (last + f, nl + nf),
            (f[0] + last, nf[0] + nl),
            (f + last[0], nf + nl[0]),
        ]
    return pairs


def _vary_digits(text: str, rng: np.random.Generator, last: int = 2) -> str:
    """``text`` with its last ``last`` digits drawn anew (never all as they were)."""
    spots = [i for i, c in enumerate(text) if c.isdigit()][-last:]
    if not spots:
        return text
    chars = list(text)
    while True:
        for i in spots:
            chars[i] = str(rng.integers(10))
        if any(chars[i] != text[i] for i in spots):
            return "".join(chars)


def name_locale(name: str) -> str:
    """The Faker locale whose names are written like ``name`` — the locale of its made-up people.

    The comparison with made-up people is a permutation test: it is fair only if the model has no
    other reason to tell the person's name from theirs. Made-up English names beside ``Платон
    Гаврилов`` or ``小林 翔太`` differ in script, which the model tells apart whether or not it saw the
    person. The locale is the one of :data:`~lmleak.data.synth.DEFAULT_LOCALES` whose names hold most
    of the name's letters (en_US on a tie, so an ASCII name keeps English made-up people).

    Example:
        >>> [name_locale(n) for n in ("Ann Lee", "Платон Гаврилов", "小林 翔太", "Urszula Głowiak", "Jürgen Weiß")]
        ['en_US', 'ru_RU', 'ja_JP', 'pl_PL', 'de_DE']
    """
    # lazy: the synthetic corpora's locale list, only when a person's page is made
    from lmleak.data.synth import DEFAULT_LOCALES

    letters = {c.lower() for c in name if c.isalpha()}
    if not letters or all(c.isascii() for c in letters):
        return "en_US"
    cover = {loc: len(letters & _alphabet(loc)) for loc in DEFAULT_LOCALES}
    return max(DEFAULT_LOCALES, key=lambda loc: cover[loc])  # max keeps the first of equals: en_US


_ALPHABETS: dict[str, frozenset[str]] = {}


def _alphabet(locale: str) -> frozenset[str]:
    """The lower-case letters of 400 of ``locale``'s Faker names (seeded; cached)."""
    if locale not in _ALPHABETS:
        from faker import Faker

        fake = Faker(locale)
        fake.seed_instance(0)
        text = " ".join(f"{fake.first_name()} {fake.last_name()}" for _ in range(400))
        _ALPHABETS[locale] = frozenset(c.lower() for c in text if c.isalpha())
    return _ALPHABETS[locale]


def _made_up_names(name: str, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct made-up names with as many words as ``name``, sharing no word with it, written
    like it (:func:`name_locale`: Faker's en_US lists for an ASCII name, else that locale's names)."""
    locale = name_locale(name)
    if locale != "en_US":
        return _local_names(name, n, rng, locale)
    # lazy: faker is imported only when a person's page is made
    from faker.providers.person.en_US import Provider

    own = {w.lower() for w in name.split()}
    firsts = [w for w in sorted(Provider.first_names) if w.lower() not in own]
    lasts = [w for w in sorted(Provider.last_names) if w.lower() not in own]
    words = len(name.split()) or 1
    out: list[str] = []
    while len(out) < n:
        parts = [str(firsts[rng.integers(len(firsts))]) for _ in range(words - 1)]
        parts.append(str((lasts if words > 1 else firsts)[rng.integers(len(lasts if words > 1 else firsts))]))
        cand = " ".join(parts)
        if cand not in out:
            out.append(cand)
    return out


def _local_names(name: str, n: int, rng: np.random.Generator, locale: str) -> list[str]:
    """:func:`_made_up_names` from ``locale``'s Faker names (seeded from ``rng``)."""
    from faker import Faker

    fake = Faker(locale)
    fake.seed_instance(int(rng.integers(2**31)))
    own = {w.lower() for w in name.split()}
    words = len(name.split()) or 1
    out: list[str] = []
    for _ in range(200 * n):  # small locales repeat names: bounded, then a clear error
        parts = [fake.first_name() for _ in range(words - 1)]
        parts.append(fake.last_name() if words > 1 else fake.first_name())
        cand = " ".join(" ".join(parts).split()[:words])  # a two-word Faker name counts as two
        if cand not in out and not own & {w.lower() for w in cand.split()}:
            out.append(cand)
            if len(out) == n:
                return out
    raise ConfigError(f"made-up people: {locale} has too few names for {n} people like {name!r}")


def _map_values(value: Any, fn: Any) -> Any:
    """``fn`` applied to every text inside ``value`` (a text, a list of texts or a mapping)."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list | tuple):
        return [_map_values(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map_values(v, fn) for k, v in value.items()}
    return value


def made_up_people(
    subject: dict[str, Any], n: int = MADE_UP_PEOPLE, *, seed: int = 0
) -> list[dict[str, Any]]:
    """``n`` made-up people of the subject's form: the same items under another name, the name
    swapped for theirs inside every item (``relations``' surnames, an e-mail's local part).

    :func:`person_report` further changes a digit or two (:func:`_vary_digits`) in the items a
    prompt *gives*, never in the item it asks for.

    Example:
        >>> s = {"subject_id": "s1", "name": "Ann Lee", "email": "ann.lee6@example.org",
        ...      "relations": {"father": "Sam Lee"}}
        >>> p = made_up_people(s, 1, seed=3)[0]
        >>> first, last = p["name"].split()
        >>> p["email"] == f"{first.lower()}.{last.lower()}6@example.org", p["relations"]["father"] == f"Sam {last}"
        (True, True)
    """
    if n < 1:
        raise ConfigError(f"made-up people: need at least 1, got {n}")
    rng = np.random.default_rng(seed)
    name = str(subject["name"])
    people = []
    for i, drawn in enumerate(_made_up_names(name, n, rng)):
        new = " ".join(_case_like(d, o) for d, o in zip(drawn.split(), name.split() or [drawn], strict=True))
        pairs = _name_pairs(name, new)
        person = {
            k: _map_values(v, lambda t, pairs=pairs: _swap(t, pairs))
            for k, v in subject.items()
            if k not in ID_FIELDS
        }
        person.update(name=new, subject_id=f"__made_up_{i}__")
        people.append(person)
    return people
