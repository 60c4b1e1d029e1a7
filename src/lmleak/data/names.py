"""People's names in any script: their shape, one key per person, and spellings that are mangled.

A tool that finds, probes and redacts ``Ann Lee`` but not ``Jürgen Weiß``, ``Anna d'Amico``,
``Gábor Kovács (GK)``, ``zephyr`` or ``佐藤 陽子`` protects people unequally — exactly those whose
names are rarer in training data, and so most identifying. Everything here is pure text handling
(the standard library's :mod:`unicodedata` and :mod:`re`), shared by the synthetic corpora, the
probe-set builder and the PII detectors:

- :func:`name_shape`: one of :data:`NAME_SHAPES`, the small fixed vocabulary in which
  ``secrets.jsonl``, ``subjects.jsonl`` and every per-shape table report names (see
  ``docs/GLOSSARY.md``): ``handle`` (one token: ``zephyr``), ``nickname`` (``Name (Nick)``),
  ``particle`` (an apostrophe or a lowercase particle: ``Anna d'Amico``, ``Juan de la Cruz``),
  ``non_latin`` (a letter of another script: ``Иван Петров``, ``佐藤 陽子``), ``accented`` (a
  Latin letter outside ASCII: ``José Núñez``) and ``ascii``; the first that applies wins, in that
  order.
- :func:`name_key`: the key that identifies a person across spellings — case, spacing, accents
  (``Iñaki`` = ``Inaki``) and mojibake (``JosÃ©`` = ``José``) folded.
- :func:`best_spelling`: of the spellings a corpus writes for one person, the one to put in a
  probing prompt: never a mangled one (mojibake, an accent-stripped or romanised copy of another
  spelling seen) unless the corpus writes no other.
- :data:`NAME_PATTERN` and its parts: a name as headers and signatures write it, in any script (the
  standard :mod:`re` has no Unicode categories, so the letter classes are built from
  :meth:`str.isupper` / :meth:`str.islower` over the Basic Multilingual Plane).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping

#: Name shapes, in the order :func:`name_shape` tests them.
NAME_SHAPES = ("handle", "nickname", "particle", "non_latin", "accented", "ascii")
#: Lowercase particles written inside a name (``van``, ``de la``, ``bin``...).
PARTICLES = frozenset(
    "van von der den de del della dei di da dos das do du la le les ten ter zu y e bin ibn al af av".split()
)


def _classes() -> tuple[str, str, str]:
    """Uppercase, lowercase and caseless letters of the BMP as bodies of ``[...]`` classes."""
    found: dict[str, list[list[int]]] = {"upper": [], "lower": [], "caseless": []}
    for i in range(0x10000):
        c = chr(i)
        if not c.isalpha():
            continue
        kind = "upper" if c.isupper() or c.istitle() else "lower" if c.islower() else "caseless"
        ranges = found[kind]
        if ranges and ranges[-1][1] == i - 1:
            ranges[-1][1] = i
        else:
            ranges.append([i, i])

    def char(i: int) -> str:  # the literal character (an escape costs the regex parser far more)
        c = chr(i)
        return "\\" + c if c in "\\]^-[" else c

    def body(ranges: list[list[int]]) -> str:
        return "".join(char(a) if a == b else f"{char(a)}-{char(b)}" for a, b in ranges)

    return body(found["upper"]), body(found["lower"]), body(found["caseless"])


UPPER, LOWER, CASELESS = _classes()
#: What may follow a name word's first letter: letters (``\\w``: digits too, a price paid for a
#: short pattern that compiles fast), the combining marks of decomposed (NFD) text, apostrophes
#: and hyphens.
_REST = "[\\w\\u0300-\\u036f'\\u2019-]"
_PARTICLE = "(?:" + "|".join(sorted(PARTICLES, key=lambda p: (-len(p), p))) + ")"
#: One word of a name: capitalised in a cased script (``Weiß``, ``O'Brien``, ``d'Amico``,
#: ``Hans-Jürgen``, ``Иванов``), an initial (``J.``), or a run of caseless letters (``佐藤``). Each
#: class appears once: the classes are long, and a regex compiles in time proportional to them.
NAME_WORD = (
    rf"(?:(?:[dlDL]['\u2019])?[{UPPER}](?:\.|{_REST}*[{LOWER}]{_REST}*)"
    rf"|[{CASELESS}\u3005\u30fc]{{1,8}})"
)
#: A name as written in headers and signatures: 2-4 words or initials, lowercase particles between
#: them (``Juan de la Cruz``, ``Ludwig van der Berg``), a generational suffix after them (``Jr.``, ``II``).
NAME_PATTERN = rf"{NAME_WORD}(?: (?:{_PARTICLE} )*{NAME_WORD}){{1,3}}(?: (?:Jr\.|Sr\.|II|III|IV))?"
#: A single-token handle (``zephyr``, ``k_lopez``, ``nightowl42``): read as a name only where a
#: format says it is one (a ``From:`` header, a signature line), never in running text.
HANDLE_PATTERN = r"[^\W\d_][\w.\u2019'-]{0,38}[^\W_]"
_NICKNAME = re.compile(r"(?P<name>.*?\S) \((?P<nick>[^()]{1,24})\)")
#: Single words a header, a signature or a greeting may hold that name nobody: roles, lists, and
#: the short words a clause ends with ("this is fine.").
NOT_A_HANDLE = frozenset(
    "admin administrator all undisclosed-recipients recipients list digest noreply no-reply mailer-daemon "
    "postmaster root support team thanks regards cheers best sent it that this there here fine done sure "
    "great good ok okay yes no me us you we them correct right wrong true false fixed broken possible "
    "expected needed known new old everyone someone nobody".split()
)

# letters that do not decompose under NFKD, and apostrophe look-alikes
_FOLD = str.maketrans(
    {"ł": "l", "Ł": "L", "ß": "ss", "ẞ": "SS", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ı": "i",
     "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "þ": "th", "Þ": "Th", "ð": "d", "ħ": "h", "Ħ": "H",
     "ŧ": "t", "Ŧ": "T", "ŀ": "l", "Ŀ": "L", "\u2019": "'", "\u02bc": "'"}
)  # fmt: skip
# GOST-style romanisation of Russian Cyrillic (what e-mail addresses and Latin signatures use)
_CYRILLIC = dict(
    zip(
        "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
        "a b v g d e e zh z i y k l m n o p r s t u f kh ts ch sh shch - y - e yu ya".split(),
        strict=True,
    )
)
_ROMAN = str.maketrans(
    {**{k: v.strip("-") for k, v in _CYRILLIC.items()},
     **{k.upper(): v.strip("-").capitalize() for k, v in _CYRILLIC.items()}}
)  # fmt: skip


def strip_accents(text: str) -> str:
    """The text with the accents of Latin letters removed (``Iñaki Ibáñez`` -> ``Inaki Ibanez``,
    ``Weiß`` -> ``Weiss``, ``Łukasz`` -> ``Lukasz``); other scripts are left as they are (a kana's
    voicing mark is part of the letter, not an accent).

    Example:
        >>> strip_accents("Iñaki Ibáñez"), strip_accents("Jürgen Weiß"), strip_accents("İsmail Çağlar")
        ('Inaki Ibanez', 'Jurgen Weiss', 'Ismail Caglar')
        >>> strip_accents("ガ"), strip_accents("Йосиф")
        ('ガ', 'Йосиф')
    """
    out: list[str] = []
    base = ""
    for c in unicodedata.normalize("NFKD", text.translate(_FOLD)):
        if unicodedata.combining(c) and base.isascii() and base.isalpha():
            continue  # an accent on a Latin letter
        out.append(c)
        if not unicodedata.combining(c):
            base = c
    return unicodedata.normalize("NFC", "".join(out))


def romanize(text: str) -> str:
    """Latin letters for a name: accents stripped and Russian Cyrillic transliterated (GOST-style);
    other scripts are left as they are.

    Example:
        >>> romanize("Всеволод Ермаков"), romanize("Łukasz Wójcik")
        ('Vsevolod Ermakov', 'Lukasz Wojcik')
    """
    return strip_accents(text.translate(_ROMAN))


def _cp1252_table() -> dict[str, int]:
    """The byte each character of mis-read UTF-8 came from: as cp1252 read it, or as Latin-1 did."""
    table = {chr(b): b for b in range(256)}
    for b in range(128, 160):
        try:
            table[bytes([b]).decode("cp1252")] = b
        except UnicodeDecodeError:
            pass  # one of the five bytes cp1252 leaves undefined: Latin-1 reads it
    return table


_BYTE_OF = _cp1252_table()
_MOJIBAKE = re.compile(
    "[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
    "\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]"
)


def fix_mojibake(text: str) -> str:
    """UTF-8 text that was read as cp1252 / Latin-1, repaired (``JosÃ© NÃºÃ±ez`` -> ``José Núñez``);
    any other text unchanged.

    Example:
        >>> fix_mojibake("JosÃ© NÃºÃ±ez"), fix_mojibake("José Núñez"), fix_mojibake("Ð˜Ð²Ð°Ð½")
        ('José Núñez', 'José Núñez', 'Иван')
    """
    if _MOJIBAKE.search(text) is None:
        return text
    try:
        return bytes(_BYTE_OF[c] for c in text).decode("utf-8")
    except (KeyError, UnicodeDecodeError):
        return text  # a character no single byte gives, or not UTF-8 after all


@functools.lru_cache(maxsize=1 << 16)
def name_key(name: str) -> str:
    """The key that identifies a person across spellings: mojibake repaired, accents stripped,
    Cyrillic transliterated (:func:`romanize`), case and spacing folded (``Iñaki IBÁÑEZ``,
    ``Inaki Ibanez`` and ``IÃ±aki IbÃ¡Ã±ez`` share one; so do ``Иван Петров`` and ``Ivan Petrov``).
    Kanji have no rule to fold them by: ``佐藤 陽子`` and ``Yoko Sato`` are joined, if at all, by an
    address they share (:mod:`lmleak.probe.formats`).

    Example:
        >>> name_key("  Ann   LEE "), name_key("Iñaki Ibáñez") == name_key("inaki  IBANEZ")
        ('ann lee', True)
        >>> name_key("Иван Петров")
        'ivan petrov'
    """
    return " ".join(romanize(fix_mojibake(name)).casefold().split())


def split_nickname(display: str) -> tuple[str, str | None]:
    """``"Gábor Kovács (GK)"`` -> ``("Gábor Kovács", "GK")``; a display without one -> ``(display, None)``.

    Example:
        >>> split_nickname("Gábor Kovács (GK)"), split_nickname("Ann Lee")
        (('Gábor Kovács', 'GK'), ('Ann Lee', None))
    """
    m = _NICKNAME.fullmatch(" ".join(display.split()))
    return (m["name"], m["nick"]) if m else (display, None)


@functools.lru_cache(maxsize=4096)
def _latin(c: str) -> bool:
    return unicodedata.name(c, "").startswith("LATIN")


def name_shape(display: str) -> str:
    """The shape of a name as written (one of :data:`NAME_SHAPES`; the first that applies).

    Example:
        >>> [name_shape(n) for n in ("zephyr", "Gábor Kovács (GK)", "Anna d'Amico", "Juan de la Cruz",
        ...                          "佐藤 陽子", "Иван Петров", "Jürgen Weiß", "Ann Lee")]
        ['handle', 'nickname', 'particle', 'particle', 'non_latin', 'non_latin', 'accented', 'ascii']
    """
    name, nick = split_nickname(display)
    if nick is not None:
        return "nickname"
    tokens = name.split()
    if len(tokens) <= 1:
        return "handle"
    if any(t in PARTICLES for t in tokens[:-1]) or any("'" in t or "\u2019" in t for t in tokens):
        return "particle"
    if any(c.isalpha() and not _latin(c) for c in name):
        return "non_latin"
    if not name.isascii():
        return "accented"
    return "ascii"


def _non_ascii_letters(s: str) -> int:
    return sum(1 for c in s if c.isalpha() and not c.isascii())


def is_mangled(spelling: str, others: Mapping[str, int] | set[str] | list[str]) -> bool:
    """Whether ``spelling`` is a damaged copy of a name: mojibake, or an accent-stripped or
    romanised copy of another spelling in ``others``.

    Example:
        >>> is_mangled("Jose Nunez", ["José Núñez"]), is_mangled("JosÃ© NÃºÃ±ez", []), is_mangled("José Núñez", ["Jose Nunez"])
        (True, True, False)
    """
    if fix_mojibake(spelling) != spelling:
        return True
    return any(o != spelling and romanize(o) == spelling for o in others)


def best_spelling(spellings: Mapping[str, int]) -> str:
    """The spelling of one person to probe with: never a mangled one (:func:`is_mangled`) while an
    intact one is seen; then the one in the richer script (more letters outside ASCII: a romanised
    ``Yoko Sato`` loses to ``佐藤 陽子`` whatever the counts); then the most frequent, then the
    first in sort order. Always one of ``spellings``: the corpus writes it.

    Example:
        >>> best_spelling({"Jose Nunez": 5, "José Núñez": 1, "JosÃ© NÃºÃ±ez": 9})
        'José Núñez'
        >>> best_spelling({"Jose Nunez": 3})
        'Jose Nunez'
    """
    return min(
        spellings,
        key=lambda s: (is_mangled(s, spellings), -_non_ascii_letters(s), -spellings[s], s),
    )
