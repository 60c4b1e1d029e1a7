"""lmleak.data.synth.mail_text: the mailing list's phrase pools hold no PII of their own — the only
address in them is the list's, at example.org — and every template field is one the writer fills."""

from __future__ import annotations

import string

from lmleak.data.synth import mail_text
from lmleak.pii.regex import RegexDetector

POOLS = ("COMPONENTS", "VERBS", "CONDITIONS", "OPENERS", "BODY", "REPLIES", "CLOSINGS", "TITLES")
NOTICES = ("FOOTER", "DISCLAIMER", "AUTO_REPLY")
#: the fields mail.py's writer fills with str.format (a new field there must be added here)
FILLED = {"component", "verb", "condition", "version", "date"}


def _lines():
    for name in (*POOLS, *NOTICES):
        yield from getattr(mail_text, name)


def test_the_pools_hold_no_pii_but_the_lists_own_address_at_example_org():
    detector = RegexDetector()
    found = {(s.entity, line[s.start : s.end]) for line in _lines() for s in detector.detect(line)}
    emails = {value for kind, value in found if kind == "EMAIL"}
    assert emails <= {mail_text.LIST_ADDRESS, f"{mail_text.LIST}-leave@lists.example.org"}
    assert all(e.endswith("@lists.example.org") for e in emails) and emails  # the detector does see them
    assert not {kind for kind, _ in found} - {"EMAIL", "URL"}  # no name, phone or address


def test_every_template_field_is_one_the_writer_fills():
    fields = {f for line in _lines() for _, f, _, _ in string.Formatter().parse(line) if f}
    assert fields <= FILLED and fields  # the openers use some
