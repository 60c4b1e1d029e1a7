"""lmleak.render.person: the person's page (issue 29 item 7) names every item of the file, escapes
them, fetches nothing, gives no number without its sentence, and has no horizontal scroll on a
390 px phone in headless Chromium (skipped where Chromium is missing).

Why not ``chromium --headless --window-size=390,2000 --screenshot``: headless Chromium lays a page
out at least 500 px wide whatever the window (measured: ``window.innerWidth`` is 500 with
``--window-size=390,...``), so a 390 px screenshot crops a 500 px layout and hides an overflow.
The check below drives Chromium over its DevTools pipe instead and emulates the phone
(``Emulation.setDeviceMetricsOverride``, 390 x 844, mobile), as DevTools' device mode does; a page
without ``<meta name="viewport">`` then lays out 980 px wide and fails, as on a real phone.
Set ``LMLEAK_SCREENSHOTS=DIR`` to keep the screenshots (one PNG per 1000 px of page) for a look.
"""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from lmleak.probe.person import ItemFinding, PersonReport, file_items
from lmleak.render.person import kind_words, person_page, write_person_page

HOSTILE = {
    "subject_id": "s1",  # what read_subjects fills in for a file without one: not the person's item
    "user_id": "u-7",
    "name": 'Zoë <script>alert("x")</script> O\'Brien-Lee',
    "phone": "(555) 555-0142",
    "email": "zoe.obrien-lee.with.a.very.long.address.that.does.not.fit@subdomain.example.org",
    "emails": ['"><img src=x onerror=alert(1)>@example.org'],
    "address": "12 Example Street, Apt. 3 & 4, Springfield, IL 62701",
    "relations": {"mother": "Eve <b>Lee</b>", "father": "Sam Lee"},
    "university": "Example State University",
    "x_note": "https://example.org/mine",
    "orders": ["ORD-1", "ORD-2"],
}


def _finding(field: str, kind: str, value: str, verdict: str, **kw: Any) -> ItemFinding:
    base: dict[str, Any] = dict(
        given=("name", "email"),
        asked=5,
        written_out=0,
        likelihood=1e-4,
        tries=1e4,
        made_up=19,
        made_up_at_least=3,
        made_up_tied=1,
        rank_p=0.2,
        ratio_to_typical=3.0,
        example_made_up="kim.roe@example.org",
        verdict=verdict,
    )
    base.update(kw)
    return ItemFinding(kind=kind, field=field, value=value, **base)


def _report(subject: dict[str, Any] = HOSTILE) -> PersonReport:
    findings = (
        _finding("phone", "phone", subject["phone"], "written_out", written_out=2, tries=40.0, likelihood=0.025),
        _finding("email", "email", subject["email"], "singled_out", made_up_at_least=0, made_up_tied=0, rank_p=0.05,
                 ratio_to_typical=250.0),
        _finding("emails[0]", "email", subject["emails"][0], "no_sign", tries=float("inf"), likelihood=0.0,
                 ratio_to_typical=0.0),
        _finding("address", "address", subject["address"], "no_sign", made_up_tied=19, made_up_at_least=19,
                 rank_p=1.0, ratio_to_typical=1.0, tries=2e7),
        _finding("relations.mother", "relationship:mother", subject["relations"]["mother"], "no_sign",
                 given=("name",), tries=1.2, ratio_to_typical=0.5),
        _finding("relations.father", "relationship:father", subject["relations"]["father"], "no_sign",
                 given=("name",), written_out=None, likelihood=None, tries=None, made_up=0,
                 made_up_at_least=None, made_up_tied=None, rank_p=None, ratio_to_typical=None),
    )  # fmt: skip
    return PersonReport(
        name=subject["name"],
        model="runs/<model>",
        items=file_items(subject, {(f.kind, f.value) for f in findings}),
        findings=findings,
        templates=5,
        beams=3,
        made_up=19,
        example_name="Kim Roe",
        singled_out_at=0.05,
        false_alarm=0.05,
        any_false_alarm_at_most=0.25,
        checked_on="2025-01-01",
        lmleak_version="0.0",
    )


class _Page(HTMLParser):
    """The page's tags, attributes, visible text blocks (paragraphs and list items) and values."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.blocks: list[str] = []  # text of each <p>/<li>/<h1-3>, values left out
        self.values: list[str] = []
        self._block: list[str] | None = None
        self._value: list[str] | None = None
        self._skip = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("style", "title"):
            self._skip += 1
        if tag in ("p", "li", "h1", "h2", "h3"):
            self._block = []
        if tag == "span" and dict(attrs).get("class") == "value":
            self._value = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "title"):
            self._skip -= 1
        if tag in ("p", "li", "h1", "h2", "h3") and self._block is not None:
            self.blocks.append(" ".join("".join(self._block).split()))
            self._block = None
        if tag == "span" and self._value is not None:
            self.values.append("".join(self._value))
            self._value = None

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        self.text.append(data)
        if self._value is not None:
            self._value.append(data)
        elif self._block is not None:
            self._block.append(data)


def _parse(page: str) -> _Page:
    p = _Page()
    p.feed(page)
    p.close()
    return p


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [str(value)]


def test_the_page_names_every_item_of_the_file_escaped():
    page = person_page(_report())
    parsed = _parse(page)
    for value in _leaves({k: v for k, v in HOSTILE.items() if k != "subject_id"}):
        assert value in parsed.values, value  # as the person wrote it, in a value of its own
    assert "s1" not in parsed.values
    # the hostile items are text, not markup: no script, image or bold tag came out of them
    assert {t for t, _ in parsed.tags} <= {
        "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span", "section",
        "article", "ul", "li", "footer",
    }  # fmt: skip
    assert "<script" not in page and "<img" not in page and "<b>" not in page


def test_the_page_fetches_nothing_and_says_so_to_the_browser():
    parsed = _parse(person_page(_report()))
    for tag, attrs in parsed.tags:
        assert not {"src", "href", "srcset", "action"} & set(attrs), tag
        assert not any(a.startswith("on") for a in attrs), tag
    csp = [
        a["content"]
        for t, a in parsed.tags
        if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    ]
    assert csp == ["default-src 'none'; style-src 'unsafe-inline'"]
    assert ("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}) in parsed.tags


def test_no_number_without_a_sentence_and_no_jargon():
    parsed = _parse(person_page(_report()))
    for block in parsed.blocks:
        if re.search(r"\d", block):  # every number sits in a sentence: words around it, a full stop after
            assert len(block.split()) >= 6 and block.rstrip().endswith((".", ")", "above", "about")), block
    visible = " ".join(parsed.text).lower()
    for word in ("likelihood", "template", "beam", "pii", "p-value", "null", "exact match", "rank", "token"):
        assert word not in visible, word


def test_the_sentences_follow_the_numbers_of_the_report():
    text = " ".join(_parse(person_page(_report())).blocks)
    assert "In 2 of the 5 answers the model wrote your phone number out exactly." in text
    assert "it answers with exactly your phone number about once in every 40 tries." in text
    assert "your email address got more weight after your name than the made-up person’s got after theirs 19 " \
        "times out of 19." in text  # fmt: skip
    assert "about 250 times the weight" in text
    assert "your mother's name less weight" not in text  # beside "no sign" no ratio
    huge = _report()
    huge = PersonReport(**{**huge.__dict__, "findings": (
        _finding("phone", "phone", "(555) 555-0100", "written_out", ratio_to_typical=1.6e40, written_out=1),
        _finding("email", "email", "a@example.org", "singled_out", ratio_to_typical=2.5e6),
    )})  # fmt: skip
    huge_text = " ".join(_parse(person_page(huge)).blocks)
    assert "more than a billion times the weight" in huge_text and "more than a million times" in huge_text
    assert "gives exactly your email address no chance at all" in text  # likelihood 0
    assert "Your address got exactly the same weight after your name as theirs" in text  # every one tied
    assert "your address about the same weight" not in text  # said once
    assert "less than once in a million tries" in text and "almost every time" in text
    assert "16 times out of 19, and the same weight 1 time." in text  # 19 - 3 at least; 1 tied
    assert (
        "We checked 6 of your details. The model wrote out 1 of them word for word. It linked 1 more" in text
    )
    assert "one or more of them at most 25% of the time" in text
    assert "None of the 5 answers contained your mother's name." in text
    assert "erase your details" in text and "retrain" in text and "not legal advice" in text
    assert "Your orders: — not checked" in text and "[0]" not in text  # the values sit in their own spans


def test_a_file_with_only_a_name_gets_a_page_that_says_so(tmp_path):
    report = _report()
    bare = PersonReport(**{**report.__dict__, "findings": (), "items": file_items({"name": "Ann"}, set())})
    path = write_person_page(bare, tmp_path / "me.html")
    text = " ".join(_parse(path.read_text()).blocks)
    assert "no detail we can ask the model about besides your name" in text
    assert "Ann" in _parse(path.read_text()).values and (path.stat().st_mode & 0o777) == 0o600
    assert kind_words("relationship:sister") == "sister's name"


# -- headless Chromium, as a phone ------------------------------------------------------------------


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def render_as_phone(
    page: Path, shots: Path, *, width: int = 390, height: int = 844, timeout: float = 60
) -> dict[str, Any]:
    """Open ``page`` in headless Chromium emulating a ``width`` px phone; return the layout's
    ``scrollWidth``, ``innerWidth`` and visible text, and write screenshots into ``shots``."""
    exe = _chromium()
    assert exe is not None
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()

    def pipes_as_3_and_4() -> None:  # the DevTools pipe: Chromium reads fd 3 and writes fd 4
        os.dup2(to_chrome_r, 3)
        os.dup2(from_chrome_w, 4)

    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=pipes_as_3_and_4,
            pass_fds=(3, 4, to_chrome_r, from_chrome_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        buf, n, deadline = b"", 0, time.monotonic() + timeout

        def call(method: str, session: str | None = None, wait: str | None = None, **params: Any) -> Any:
            nonlocal buf, n
            n += 1
            msg: dict[str, Any] = {"id": n, "method": method, "params": params}
            if session:
                msg["sessionId"] = session
            os.write(to_chrome_w, json.dumps(msg).encode() + b"\0")
            result, seen = None, wait is None
            while result is None or not seen:
                while b"\0" not in buf:
                    left = deadline - time.monotonic()
                    if left <= 0 or not select.select([from_chrome_r], [], [], left)[0]:
                        raise TimeoutError(f"Chromium did not answer {method}")
                    chunk = os.read(from_chrome_r, 1 << 16)
                    if not chunk:
                        raise EOFError(f"Chromium closed the pipe during {method}")
                    buf += chunk
                raw, _, buf = buf.partition(b"\0")
                reply = json.loads(raw)
                if reply.get("id") == n:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    result = reply["result"]
                elif reply.get("method") == wait:
                    seen = True
            return result

        def value(session: str, expression: str) -> Any:
            return call("Runtime.evaluate", session, expression=expression, returnByValue=True)["result"][
                "value"
            ]

        try:
            target = call("Target.createTarget", url="about:blank")["targetId"]
            sid = call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            call("Emulation.setDeviceMetricsOverride", sid, width=width, height=height, deviceScaleFactor=1,
                 mobile=True)  # fmt: skip
            call("Page.enable", sid)
            call("Page.navigate", sid, wait="Page.loadEventFired", url=page.resolve().as_uri())
            out = {
                "scroll_width": value(sid, "document.documentElement.scrollWidth"),
                "inner_width": value(sid, "window.innerWidth"),
                "text": value(sid, "document.body.innerText"),
            }
            total = value(sid, "document.documentElement.scrollHeight")
            shots.mkdir(parents=True, exist_ok=True)
            for k, y in enumerate(range(0, total, 1000)):
                clip = {"x": 0, "y": y, "width": width, "height": min(1000, total - y), "scale": 1}
                png = call("Page.captureScreenshot", sid, format="png", captureBeyondViewport=True, clip=clip)
                (shots / f"{page.stem}-{k}.png").write_bytes(base64.b64decode(png["data"]))
            call("Browser.close")
        finally:
            os.close(to_chrome_w)
            os.close(from_chrome_r)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return out


@pytest.mark.skipif(_chromium() is None, reason="needs Chromium (apt-get install chromium)")
def test_the_page_fits_a_390px_phone_in_chromium_and_shows_every_item(tmp_path):
    page = write_person_page(_report(), tmp_path / "me.html")
    shots = Path(os.environ.get("LMLEAK_SCREENSHOTS") or tmp_path / "shots")
    got = render_as_phone(page, shots)
    assert got["inner_width"] == 390 and got["scroll_width"] <= 390, got["scroll_width"]  # no sideways scroll
    text = " ".join(got["text"].split())
    for value in _leaves({k: v for k, v in HOSTILE.items() if k != "subject_id"}):
        assert " ".join(value.split()) in text, value
    assert (shots / "me-0.png").stat().st_size > 0
    # the check can fail: a page that forgets the viewport lays out 980 px wide on a phone
    bad = tmp_path / "no-viewport.html"
    bad.write_text(page.read_text().replace('<meta name="viewport"', '<meta name="x"'))
    assert render_as_phone(bad, tmp_path / "bad")["scroll_width"] > 390
