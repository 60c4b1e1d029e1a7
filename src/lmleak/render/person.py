"""The person's page: what a model reveals about one data subject, in plain words (issue 29 item 7).

ProPILE (paper 003) is meant to let *data subjects* check a model themselves. ``lmleak probe
--model M --subject me.json --html me.html`` computes a :class:`~lmleak.probe.person.PersonReport`
(every number on this page is computed there) and this module writes it as one page:

- self-contained: one HTML file, its style inline, no script, no link, no image, nothing fetched
  (a Content-Security-Policy of ``default-src 'none'`` says so to the browser as well);
- readable on a phone: one column, no table, long items (e-mail addresses) wrap, no horizontal
  scroll at 390 px (checked in headless Chromium by ``tests/render/test_person.py``);
- every text escaped: the person's items are user input;
- only the person's own items and made-up ones: the page never names another real person;
- no jargon, and no number without the sentence that says what it means.

The renderer reads the report through the :class:`PersonPage` protocol (render never imports the
probe package), formats numbers and words, and computes nothing.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from lmleak.runs import atomic_write_text
from lmleak.words import plural


class FileItemLike(Protocol):
    """One item of the person's file (:class:`lmleak.probe.person.FileItem`)."""

    @property
    def field(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def checked(self) -> bool: ...


class FindingLike(Protocol):
    """What the model did with one item (:class:`lmleak.probe.person.ItemFinding`)."""

    @property
    def kind(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def given(self) -> tuple[str, ...]: ...
    @property
    def asked(self) -> int: ...
    @property
    def written_out(self) -> int | None: ...
    @property
    def tries(self) -> float | None: ...
    @property
    def made_up(self) -> int: ...
    @property
    def made_up_at_least(self) -> int | None: ...
    @property
    def made_up_tied(self) -> int | None: ...
    @property
    def ratio_to_typical(self) -> float | None: ...
    @property
    def example_made_up(self) -> str | None: ...
    @property
    def verdict(self) -> str: ...


class PersonPage(Protocol):
    """What the page reads (:class:`lmleak.probe.person.PersonReport`)."""

    @property
    def name(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def items(self) -> Sequence[FileItemLike]: ...
    @property
    def findings(self) -> Sequence[FindingLike]: ...
    @property
    def templates(self) -> int: ...
    @property
    def made_up(self) -> int: ...
    @property
    def example_name(self) -> str | None: ...
    @property
    def false_alarm(self) -> float: ...
    @property
    def any_false_alarm_at_most(self) -> float: ...
    @property
    def checked_on(self) -> str: ...
    @property
    def lmleak_version(self) -> str: ...

    def count(self, verdict: str) -> int: ...


#: what each verdict is called on the page, and its colour class
VERDICTS = {
    "written_out": ("Written out", "bad"),
    "singled_out": ("Linked to you", "warn"),
    "no_sign": ("No sign found", "ok"),
}
_KIND_WORDS = {
    "name": "name",
    "phone": "phone number",
    "email": "email address",
    "address": "address",
    "university": "university",
    "id": "id",
}

STYLE = """
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0 auto;max-width:40rem;padding:1rem;font:17px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:#1b1b1b;background:#fff;overflow-wrap:anywhere;word-break:break-word}
h1{font-size:1.45rem;line-height:1.25;margin:.5rem 0 1rem}
h2{font-size:1.2rem;margin:2rem 0 .5rem;border-bottom:1px solid #ddd;padding-bottom:.25rem}
h3{font-size:1.05rem;margin:0 0 .25rem}
p,li{margin:.4rem 0}
ul{padding-left:1.2rem}
.lead{font-size:1.05rem}
.card{border:1px solid #ddd;border-left:.4rem solid #888;border-radius:.4rem;padding:.75rem .9rem;margin:1rem 0}
.card.bad{border-left-color:#b3261e}.card.warn{border-left-color:#b26a00}.card.ok{border-left-color:#2e7d32}
.tag{display:inline-block;font-size:.85rem;font-weight:600;border-radius:1rem;padding:.05rem .6rem;margin:.1rem 0;color:#fff}
.bad .tag,.tag.bad{background:#b3261e}.warn .tag,.tag.warn{background:#8a5300}.ok .tag,.tag.ok{background:#2e7d32}
.value{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f3f3f3;border-radius:.25rem;padding:.05rem .3rem}
.summary{background:#f6f6f6;border-radius:.4rem;padding:.75rem .9rem}.summary h2{margin-top:0}
.note,footer{color:#555;font-size:.92rem}
footer{margin-top:2rem;border-top:1px solid #ddd;padding-top:.5rem}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _v(text: str) -> str:
    """The person's own item, escaped and marked as a value."""
    return f'<span class="value">{_e(text)}</span>'


def kind_words(kind: str) -> str:
    """What an item is called on the page.

    Example:
        >>> kind_words("phone"), kind_words("relationship:father"), kind_words("x_note")
        ('phone number', "father's name", 'x_note')
    """
    if kind.startswith("relationship:"):
        return f"{kind.split(':', 1)[1]}'s name"
    return _KIND_WORDS.get(kind, kind)


def _and(words: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _count(n: float) -> str:
    """A number of tries, rounded to two significant figures with thousands separators."""
    if n >= 100:
        digits = int(math.floor(math.log10(n))) - 1
        return f"{round(n, -digits):,.0f}"
    return f"{n:,.0f}"


def _tries(label: str, tries: float | None) -> str:
    if tries is None:
        return ""
    if math.isinf(tries):
        return f"The model gives exactly your {label} no chance at all after these questions."
    if tries <= 1.5:
        how = "almost every time"
    elif tries >= 1e6:
        how = "less than once in a million tries"
    else:
        how = f"about once in every {_count(tries)} tries"
    return (
        f"If someone asks the model for your {label} in the most revealing of these ways, it answers with "
        f"exactly your {label} {how}."
    )


def _ratio(label: str, ratio: float | None) -> str:
    if ratio is None:
        return ""
    if ratio >= 1.25:
        if ratio >= 1e9:
            times = "more than a billion times"
        elif ratio >= 1e6:
            times = "more than a million times"
        else:
            times = f"about {_count(ratio)} times"
        return f"After your name it gave your {label} {times} the weight it gave it after a typical made-up name."
    if ratio > 0.8:
        return f"After your name it gave your {label} about the same weight as after a typical made-up name."
    return f"After your name it gave your {label} less weight than after a typical made-up name."


def _made_up(f: FindingLike, label: str, example_name: str | None) -> str:
    if f.made_up_at_least is None or not f.made_up:
        return ""
    beaten, tied = f.made_up - f.made_up_at_least, f.made_up_tied or 0
    if f.example_made_up is not None and f.example_made_up != f.value and example_name:
        example = f" (for “{_e(example_name)}” we asked about {_v(f.example_made_up)})"
    else:
        example = ""
    asked = f"We asked the same questions about {plural(f.made_up, 'made-up person')}{example}."
    if tied == f.made_up:
        return (
            f"{asked} Your {_e(label)} got exactly the same weight after your name as theirs after their "
            "names: for this detail the model does not go by the name at all."
        )
    same = f", and the same weight {_times(tied)}" if tied else ""
    return (
        f"{asked} Compared one by one, your {_e(label)} got more weight after your name than the made-up "
        f"person’s got after theirs {_times(beaten)} out of {f.made_up}{same}."
    )


def _times(n: int) -> str:
    """``1 time``, ``3 times``."""
    return plural(n, "time")


def _card(f: FindingLike, page: PersonPage) -> str:
    label = kind_words(f.kind)
    title, css = VERDICTS.get(f.verdict, (f.verdict, "ok"))
    given = _and([("your " if i == 0 else "") + kind_words(g) for i, g in enumerate(f.given)])
    ways = "way" if f.asked == 1 else "different ways"
    lines = [
        f"We asked the model for your {_e(label)} in {f.asked} {ways}, each time telling it {_e(given)}."
    ]
    if f.written_out is not None:
        if f.written_out:
            lines.append(
                f"In {f.written_out} of the {f.asked} answers the model wrote your {_e(label)} out exactly."
            )
        else:
            lines.append(f"None of the {f.asked} answers contained your {_e(label)}.")
    for sentence in (
        _e(_tries(label, f.tries)),
        _made_up(f, label, page.example_name),
        # how strongly, where the comparison found a link (beside "no sign" a ratio reads as an alarm)
        _e(_ratio(label, f.ratio_to_typical)) if f.verdict != "no_sign" else "",
    ):
        if sentence:
            lines.append(sentence)
    body = "".join(f"<li>{line}</li>" for line in lines)
    return (
        f'<article class="card {css}"><h3>Your {_e(label)}</h3>'
        f'<p><span class="tag">{_e(title)}</span></p><p>{_v(f.value)}</p><ul>{body}</ul></article>'
    )


def _summary(page: PersonPage) -> str:
    total = len(page.findings)
    if not total:
        return (
            "<p>Your file has no detail we can ask the model about besides your name. Add your phone "
            "number, email address, address, university or relatives’ names to check them.</p>"
        )
    written, linked, none = page.count("written_out"), page.count("singled_out"), page.count("no_sign")
    parts = [f"We checked {total} of your details."]
    if written:
        parts.append(f"The model wrote out {written} of them word for word.")
    if linked:
        more = " more" if written else ""
        parts.append(
            f"It linked {linked}{more} to your name more strongly than chance explains, without writing "
            f"{'it' if linked == 1 else 'them'} out here."
        )
    if none == total:
        parts.append("For all of them we found no sign that the model links them to you.")
    elif none:
        parts.append(f"For the other {none} we found no sign that the model links them to you.")
    return f"<p>{_e(' '.join(parts))}</p>"


def _meaning(page: PersonPage) -> str:
    scored = sum(1 for f in page.findings if f.made_up_at_least is not None)
    luck = ""
    if page.false_alarm > 0 and scored:
        luck = (
            f"<p>Chance plays a part too. For a person the model never saw, each detail still comes out "
            f"“linked to you” about {page.false_alarm:.0%} of the time by luck alone"
            + (
                f", and with {scored} details checked, one or more of them at most "
                f"{page.any_false_alarm_at_most:.0%} of the time."
                if scored > 1
                else "."
            )
            + "</p>"
        )
    return (
        '<p><span class="tag bad">Written out</span> The model produced this detail when asked about you. '
        "Anyone who can use the model could get it the same way.</p>"
        '<p><span class="tag warn">Linked to you</span> The model did not write it out here, but it treats '
        "this detail as yours more than chance explains. That suggests it learnt from text that links it to "
        "you; other questions, or more tries, might get it out.</p>"
        '<p><span class="tag ok">No sign found</span> With these questions the model did not link this detail '
        "to you. That does not prove the model never saw it: we asked only a few questions, and others might "
        "do better.</p>" + luck
    )


def _how(page: PersonPage) -> str:
    example = f" (for example “{_e(page.example_name)}”)" if page.example_name else ""
    return (
        f"<p>For each detail we asked the model {plural(page.templates, 'question')} built from your other details, and "
        "read the answer it thinks most likely. We also measured how much weight the model gives your "
        "detail as the answer: the chance that one try gets it.</p>"
        f"<p>To tell whether the model links a detail to you, we asked the same questions about "
        f"{plural(page.made_up, 'made-up person')}{example}. Each is a copy of you under another name: your name inside "
        "your details is swapped for theirs, and a digit or two differ in the details we gave the model. "
        "A model that never saw you has no reason to favour your details after your name over theirs "
        "after their names.</p>"
    )


def _asks() -> str:
    return (
        "<p>If a detail was written out or linked to you, you can ask the organisation that trained or runs "
        "the model:</p><ul>"
        "<li>whether your details were in the text the model learnt from, and where that text came from;</li>"
        "<li>to erase your details from that text and from any copies they keep;</li>"
        "<li>to retrain or adjust the model so that it no longer produces your details, and to filter its "
        "answers until then;</li>"
        "<li>to tell you what they did.</li></ul>"
        "<p>Keep this page: it records what the model answered and when. It lists your own details, so keep "
        "it private.</p>"
        '<p class="note">Depending on where you live, data-protection law may give you a right to ask for some '
        "of these. This page is not legal advice.</p>"
    )


def _items(page: PersonPage) -> str:
    rows = []
    for it in page.items:
        # a field lmleak does not probe goes by its name, without the list index (orders[1] -> orders)
        what = re.sub(r"\[\d+\]", "", it.field) if it.kind == "other" else kind_words(it.kind)
        if it.kind == "name":
            note = "used in every question"
        elif it.checked:
            note = "checked above"
        elif it.kind in ("id", "other"):
            note = "not checked: this kind of detail is not asked about"
        else:
            note = "not checked"
        rows.append(f"<li>Your {_e(what)}: {_v(it.value)} — {_e(note)}</li>")
    return f"<ul>{''.join(rows)}</ul>"


def person_page(page: PersonPage) -> str:
    """The page as one HTML document (see the module docstring)."""
    cards = "".join(_card(f, page) for f in page.findings)
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        '<meta name="referrer" content="no-referrer">'
        f"<title>What {_e(page.model)} reveals about {_e(page.name)}</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>What the model “{_e(page.model)}” reveals about {_e(page.name)}</h1>"
        '<p class="lead">We asked this language model questions about you, using the details in your file, '
        "and looked at whether it answers with your own details.</p>"
        f'<section class="summary"><h2>In short</h2>{_summary(page)}</section>'
        + (f"<section><h2>Your details, one by one</h2>{cards}</section>" if cards else "")
        + f"<section><h2>What this means</h2>{_meaning(page)}</section>"
        f"<section><h2>What you can ask for</h2>{_asks()}</section>"
        f"<section><h2>How we checked</h2>{_how(page)}</section>"
        f"<section><h2>Everything in your file</h2>{_items(page)}</section>"
        f"<footer>Checked on {_e(page.checked_on)} with lmleak {_e(page.lmleak_version)}.</footer>"
        "</body></html>\n"
    )


def write_person_page(page: PersonPage, path: str | Path) -> Path:
    """Write :func:`person_page` to ``path`` atomically, owner-only (it lists the person's items)."""
    return atomic_write_text(path, person_page(page))
