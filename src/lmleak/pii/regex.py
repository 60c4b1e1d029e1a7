"""Regular-expression PII detectors: structured PII that follows a pattern.

Paper 003 (ProPILE, appendix A.2) collects US phone numbers and e-mail addresses with two regular
expressions, kept verbatim here as :data:`PAPER003_PHONE` and :data:`PAPER003_EMAIL`; paper 002
(section 4) redacts CustomerSim's phone, order and tracking numbers and WikiText-2's digits by
regular expression. Like Presidio's recognizers, a pattern is data: an entity, a regex, a score
and an optional validation hook (Luhn for credit cards, octet range for IPs).

The formats of the synthetic corpus (:mod:`lmleak.data.synth.customersim`) are matched exactly:
phones ``(201) 555-0142``, orders ``ORD-12345678``, UPS-style tracking ``1Z`` + 16 characters.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from lmleak.data.names import HANDLE_PATTERN, NAME_PATTERN, NOT_A_HANDLE
from lmleak.pii.spans import PiiSpan

# Paper 003, appendix A.2, verbatim. The e-mail expression is anchored (^...$): the paper applies
# it to a whole candidate string, so :func:`paper003_emails` applies it to whitespace tokens.
PAPER003_PHONE = re.compile("[0-9][0-9][0-9][-.()][0-9][0-9][0-9][-.()][0-9][0-9][0-9][0-9]")
PAPER003_EMAIL = re.compile(r"^([a-zA-Z0-9_\-\.]+)@([a-zA-Z0-9_\-\.]+)\.([a-zA-Z]{2,5})$")


def luhn_valid(number: str) -> bool:
    """The Luhn checksum of the digits in ``number`` (spaces and dashes ignored).

    Example:
        >>> luhn_valid("4111 1111 1111 1111"), luhn_valid("4111 1111 1111 1112")
        (True, False)
    """
    digits = [int(c) for c in number if c.isdigit()]
    if len(digits) < 12:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _ipv4_valid(s: str) -> bool:
    return all(0 <= int(p) <= 255 and (p == "0" or not p.startswith("0")) for p in s.split("."))


def _ssn_valid(s: str) -> bool:
    area, group, serial = s.split("-")
    return area not in ("000", "666") and not area.startswith("9") and group != "00" and serial != "0000"


@dataclass(frozen=True)
class Pattern:
    """One recognizer: ``regex`` matches give ``entity`` spans when ``validate(match)`` holds."""

    entity: str
    regex: re.Pattern[str]
    score: float = 1.0
    validate: Callable[[str], bool] | None = None
    group: int | str = 0  # the span is this group (context words stay outside it)
    #: cheap tests before the regex runs (they never change what it finds): it can match only in a
    #: text that holds one of ``needs``, and only within one line that holds ``line_needs``
    needs: tuple[str, ...] = ()
    line_needs: str | None = None

    def finditer(self, text: str) -> Iterator[tuple[int, int, str]]:
        """``(start, end, value)`` of the spanned group of every match (before ``validate``)."""
        if self.needs and not any(n in text for n in self.needs):
            return
        if self.line_needs is None:
            for m in self.regex.finditer(text):
                yield *m.span(self.group), m.group(self.group)
            return
        for line in _lines_holding(text, self.line_needs):
            base = line.start()
            for m in self.regex.finditer(line.group()):
                a, b = m.span(self.group)
                yield base + a, base + b, m.group(self.group)


@functools.lru_cache(maxsize=8)
def _line_regex(needle: str) -> re.Pattern[str]:
    return re.compile(rf"^[^\n]*{re.escape(needle)}[^\n]*$", re.M)


def _lines_holding(text: str, needle: str) -> Iterator[re.Match[str]]:
    return _line_regex(needle).finditer(text) if needle in text else iter(())


def _p(
    entity: str,
    rx: str,
    score: float = 1.0,
    validate: Callable[[str], bool] | None = None,
    group: int | str = 0,
    needs: tuple[str, ...] = (),
    line_needs: str | None = None,
) -> Pattern:
    return Pattern(entity, re.compile(rx), score, validate, group, needs, line_needs)


_MONTH = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"

_EMAIL = r"[A-Za-z0-9_.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
_RELATIONS = "father|mother|wife|husband|sister|brother|son|daughter|aunt|uncle|grandmother|grandfather|cousin|partner|friend"
_NICK = r"(?: \([^()\n<>@]{1,24}\))?"  # "Gábor Kovács (GK)"
_Q = r"(?:> ?)*"  # the quote markers of a replied-to line


def _handle_ok(token: str) -> bool:
    """A single token read as a handle: not a role or list name, not a word a clause ends with."""
    return token.casefold().rstrip(".") not in NOT_A_HANDLE


def _display_ok(display: str) -> bool:
    """A quoted display before an address names someone: it holds a letter and no header syntax."""
    return any(c.isalpha() for c in display) and ":" not in display


#: An e-mail address (first of :data:`DEFAULT_PATTERNS`: an address beats anything it overlaps).
EMAIL_PATTERN = _p("EMAIL", rf"(?<![\w.+-]){_EMAIL}(?![\w-])")


@functools.cache
def name_patterns() -> tuple[Pattern, ...]:
    """:data:`NAME_PATTERNS`: names in every shape (issue 28; :mod:`lmleak.data.names`), by context
    words as Presidio's context enhancer finds them and by the formats mail writes them in; the span
    is the name (with its nickname). A single-token handle counts only where a format or an
    introduction says it is a name. Compiled on first use: their Unicode letter classes take a few
    tenths of a second to compile, which every ``lmleak`` command would otherwise pay at start-up.
    """
    return (
        # context words: "My name is Ann Lee", "Thanks José Núñez", "my father Степан Мясников"
        _p("PERSON", rf"(?:\b(?:[Mm]y name is|[Tt]his is|[Tt]hanks|[Tt]hank you|[Dd]ear|[Hh]ello|[Hh]i),? "
                     rf"|\b(?:{_RELATIONS})(?: is)? )(?P<name>{NAME_PATTERN}{_NICK})", 0.6, group="name"),
        # a handle ending an introduction: "this is zephyr.", "Hello, zephyr here."
        _p("PERSON", rf"\b(?:[Mm]y name is|[Tt]his is|[Hh]ello,|[Hh]i,|[Tt]hanks,?|[Dd]ear) (?P<name>{HANDLE_PATTERN})"
                     r"(?=[.,!?;:]|\s+here\b)", 0.5, _handle_ok, group="name"),
        # a possessive before a relation: "Anna d'Amico's father", "zephyr's sister"
        _p("PERSON", rf"(?:^|(?<=[\s,:]))(?P<name>{NAME_PATTERN}{_NICK}|{HANDLE_PATTERN})(?='s |\u2019s )"
                     rf"(?=\S+ (?:{_RELATIONS})\b)", 0.6, _handle_ok, group="name", needs=("'s ", "\u2019s ")),
        # a display name before an address: "Name" <email>, "Last, First" <email>, Name <email>, Name (email)
        _p("PERSON", rf'"(?P<name>[^"\n<>@]{{1,80}})" ?<{_EMAIL}>', 0.8, _display_ok, group="name", line_needs="@"),
        _p("PERSON", rf"(?m)(?:^|(?<=[\s,:]))(?P<name>{NAME_PATTERN}{_NICK}) ?(?:<{_EMAIL}>|\({_EMAIL}\))", 0.8,
           group="name", line_needs="@"),
        _p("PERSON", rf"{_EMAIL} \((?P<name>{NAME_PATTERN}{_NICK})\)", 0.8, group="name", line_needs="@"),
        # a handle where a format says it is a name: a header, a changelog sign-off, an attribution, a
        # line holding only the handle and the address
        _p("PERSON", rf"(?m)(?:^{_Q}(?:From|Cc|CC|To|Reply-To|Sender): |^{_Q}[ \t]*-- |^{_Q}On [^\n]*?, )"
                     rf"(?P<name>{HANDLE_PATTERN}{_NICK}) ?<{_EMAIL}>", 0.7, _handle_ok, group="name", line_needs="@"),
        _p("PERSON", rf"(?m)^{_Q}(?P<name>{HANDLE_PATTERN}{_NICK}) ?(?:<{_EMAIL}>|\({_EMAIL}\))[ \t]*$", 0.7,
           _handle_ok, group="name", line_needs="@"),
        # the name line of a signature block (the line after "-- ")
        _p("PERSON", rf"(?m)^{_Q}-- ?\n{_Q}(?P<name>(?:{NAME_PATTERN}|{HANDLE_PATTERN}){_NICK})[ \t]*$", 0.7,
           _handle_ok, group="name", needs=("--",)),
        # a sign-off: a closing line, then a line holding a name or one word ("Cheers,\nGábor", "Thanks,\nzephyr")
        _p("PERSON", rf"(?m)^{_Q}(?:Thanks|Cheers|Best regards|Kind regards|Regards|Thanks in advance|Best|--),?[ \t]*\n"
                     rf"{_Q}(?P<name>{NAME_PATTERN}{_NICK}|[^\W\d_][\w'\u2019.-]*)[ \t]*$", 0.6, _handle_ok, group="name",
           needs=("Thanks", "Cheers", "regards", "Regards", "Best", "--")),
    )  # fmt: skip


# Order matters: on overlaps the earlier pattern wins (an SSN is not also a phone; a card number is
# not a digit run). Boundaries use look-arounds, not \b, because "(" and "+" are not word chars.
_BEFORE_NAMES: tuple[Pattern, ...] = (
    EMAIL_PATTERN,
    _p("URL", r"\b(?:https?://|www\.)[^\s<>\"']*[^\s<>\"'.,;:!?)\]]"),
    _p("TRACKING_ID", r"\b1Z[0-9A-Z]{16}\b"),
    _p("ORDER_ID", r"\bORD-\d{6,10}\b"),
    # Street address with its "City, ST 12345" tail (high precision; pyap adds more formats).
    _p(
        "ADDRESS",
        r"\b\d{1,6}(?: [A-Z][A-Za-z]+){1,4}(?: (?:Apt\.|Suite|Unit|#) ?\d+)?,(?: [A-Z][A-Za-z]+){1,3}, [A-Z]{2} \d{5}(?:-\d{4})?\b",
    ),
    # US military addresses (APO/FPO/DPO), which have no street.
    _p(
        "ADDRESS",
        r"\b(?:PSC \d{4}, Box \d{4}|Unit \d{4} Box \d{4}|US[NS]S? [A-Z][a-z]+),? [ADF]PO A[AEP] \d{5}\b",
    ),
)
_AFTER_NAMES: tuple[Pattern, ...] = (
    _p(
        "UNIVERSITY",
        r"\b(?:[A-Z][a-z]+ ){1,3}(?:State University|University|Institute of Technology|College)\b"
        r"|\bUniversity of(?: [A-Z][a-z]+){1,3}\b",
        0.8,
    ),
    _p("SSN", r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])", validate=_ssn_valid),
    _p("CREDIT_CARD", r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])", validate=luhn_valid),
    _p("IP", r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])", validate=_ipv4_valid),
    # US phone numbers: optional +1 / 001, area code with or without parentheses, then 3-4 digits,
    # optional extension ("x123", "ext. 12"); paper 003's [-.()] separators are a subset of these.
    _p(
        "PHONE",
        r"(?<![\w+])(?:(?:\+1|001)[\s.-]?|1[\s.-])?(?:\(\d{3}\)[\s.-]?|\d{3}[\s.()-])\d{3}[\s.()-]\d{4}"
        r"(?:\s?(?:x|ext\.?)\s?\d{1,5})?(?!\d)",
    ),
    _p("PHONE", r"(?<![\d-])\d{3}-\d{4}(?![\d-])", score=0.5),
    _p("DATE", r"(?<!\d)\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})(?!\d)|(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)"),
    _p("DATE", rf"\b{_MONTH}\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b|\b\d{{1,2}} {_MONTH} \d{{4}}\b"),
    # What is left of long numbers (ZIP codes, account numbers, canaries' digits).
    _p("DIGITS", r"(?<!\d)\d{5,}(?!\d)", score=0.5),
)

DIGIT_PATTERNS: tuple[Pattern, ...] = (_p("DIGITS", r"\d+"),)
"""Paper 002's WikiText-2 policy: every digit run is a secret."""


@functools.cache
def default_patterns() -> tuple[Pattern, ...]:
    """:data:`DEFAULT_PATTERNS`, in the order they are tried: addresses and identifiers, then names
    (:func:`name_patterns`, compiled on first use), then the rest."""
    return (*_BEFORE_NAMES, *name_patterns(), *_AFTER_NAMES)


def __getattr__(attr: str) -> tuple[Pattern, ...]:
    """``DEFAULT_PATTERNS`` and ``NAME_PATTERNS``: the tuples :func:`default_patterns` and
    :func:`name_patterns` return (module attributes computed on first use)."""
    if attr == "DEFAULT_PATTERNS":
        return default_patterns()
    if attr == "NAME_PATTERNS":
        return name_patterns()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


class RegexDetector:
    """Detect PII with an ordered list of :class:`Pattern` s; earlier patterns win on overlaps.

    Args:
        patterns: the recognizers (default :data:`DEFAULT_PATTERNS`, :func:`default_patterns`).
        entities: keep only these entity types (default all).

    Example:
        >>> d = RegexDetector()
        >>> text = "Call (201) 555-0142 or mail jane.doe7@example.org about ORD-12345678."
        >>> [(s.entity, text[s.start:s.end]) for s in d.detect(text)]
        [('PHONE', '(201) 555-0142'), ('EMAIL', 'jane.doe7@example.org'), ('ORDER_ID', 'ORD-12345678')]
    """

    def __init__(
        self, patterns: Sequence[Pattern] | None = None, entities: Iterable[str] | None = None
    ) -> None:
        keep = None if entities is None else set(entities)
        given = default_patterns() if patterns is None else patterns
        self.patterns = tuple(p for p in given if keep is None or p.entity in keep)
        self.name = "regex"

    def detect(self, text: str) -> list[PiiSpan]:
        # taken spans never overlap, so sorted by start they are sorted by end too: an overlap
        # check looks at the two neighbours of the insertion point (linear in the spans found,
        # where a scan of all taken spans was quadratic on a long document full of e-mails)
        starts: list[int] = []
        ends: list[int] = []
        out: list[PiiSpan] = []
        for p in self.patterns:
            for a, b, value in p.finditer(text):
                if a == b or (p.validate is not None and not p.validate(value)):
                    continue
                i = bisect.bisect_left(starts, a)
                if (i > 0 and ends[i - 1] > a) or (i < len(starts) and starts[i] < b):
                    continue
                starts.insert(i, a)
                ends.insert(i, b)
                out.append(PiiSpan(a, b, p.entity, p.score))
        out.sort(key=lambda s: (s.start, s.end))
        return out


def paper003_phones(text: str) -> list[PiiSpan]:
    """Phone numbers found by paper 003's regular expression, as spans.

    Example:
        >>> [(s.start, s.end) for s in paper003_phones("call 201-555-0142 or 201.555.0199")]
        [(5, 17), (21, 33)]
    """
    return [PiiSpan(m.start(), m.end(), "PHONE") for m in PAPER003_PHONE.finditer(text)]


def paper003_emails(text: str) -> list[PiiSpan]:
    """E-mail addresses found by paper 003's anchored regular expression, one token at a time.

    Tokens are whitespace-separated with trailing sentence punctuation stripped, since the anchored
    expression cannot match inside running text.

    Example:
        >>> t = "write to jane_doe@example.org, or j.d@mail.example.com."
        >>> [t[s.start:s.end] for s in paper003_emails(t)]
        ['jane_doe@example.org', 'j.d@mail.example.com']
    """
    out = []
    for m in re.finditer(r"\S+", text):
        tok = m.group().rstrip(".,;:!?)\"'")
        tok_start = m.start()
        lead = len(tok) - len(tok.lstrip("(\"'<"))
        tok = tok[lead:]
        if tok and PAPER003_EMAIL.match(tok):
            out.append(PiiSpan(tok_start + lead, tok_start + lead + len(tok), "EMAIL"))
    return out


class Paper003Detector:
    """Exactly paper 003's two regular expressions (phone, e-mail), for comparison with ours.

    Example:
        >>> [s.entity for s in Paper003Detector().detect("a@b.org 201-555-0100")]
        ['EMAIL', 'PHONE']
    """

    name = "paper003"

    def detect(self, text: str) -> list[PiiSpan]:
        return sorted(paper003_phones(text) + paper003_emails(text), key=lambda s: (s.start, s.end))
