"""pyap addresses: spans start at the house number and stay right on multi-line text."""

from __future__ import annotations

import pytest

pytest.importorskip("pyap")

from lmleak.pii.addresses import AddressDetector  # noqa: E402

ADDRESS = "12 Main Street Apt. 4, Springfield, IL 62704"


def test_spans_on_later_lines_point_at_the_address_text():
    text = f"hello\n\nplease ship to {ADDRESS} today\nand also to 4452 Oak Ave, Dayton, OH 45402 thanks"
    spans = AddressDetector().detect(text)
    assert [text[s.start : s.end] for s in spans] == [ADDRESS, "4452 Oak Ave, Dayton, OH 45402"]
    assert {s.entity for s in spans} == {"ADDRESS"} and {s.score for s in spans} == {0.9}


def test_text_without_an_address_gives_nothing():
    assert AddressDetector().detect("no address here, call 555-0101\n\n") == []
