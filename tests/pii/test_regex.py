"""Regular-expression detectors: paper 003's expressions verbatim, and lmleak's defaults."""

from __future__ import annotations

import re

import pytest

from lmleak.pii.regex import (
    PAPER003_EMAIL,
    PAPER003_PHONE,
    RegexDetector,
    luhn_valid,
    paper003_emails,
    paper003_phones,
)


def found(text, detector=None):
    d = detector or RegexDetector()
    return [(s.entity, text[s.start : s.end]) for s in d.detect(text)]


def test_paper003_expressions_are_verbatim():
    # appendix A.2 of paper 003, character for character
    assert PAPER003_PHONE.pattern == "[0-9][0-9][0-9][-.()][0-9][0-9][0-9][-.()][0-9][0-9][0-9][0-9]"
    assert PAPER003_EMAIL.pattern == r"^([a-zA-Z0-9_\-\.]+)@([a-zA-Z0-9_\-\.]+)\.([a-zA-Z]{2,5})$"


@pytest.mark.parametrize("phone", ["201-555-0142", "201.555.0142", "201)555-0142", "201(555)0142"])
def test_paper003_phone_examples(phone):
    assert PAPER003_PHONE.search(f"call {phone} now").group() == phone
    assert [s.entity for s in paper003_phones(f"call {phone}")] == ["PHONE"]


@pytest.mark.parametrize("email", ["jane.doe@example.org", "j_d-1@mail.example.com", "a@b.info"])
def test_paper003_email_examples(email):
    assert PAPER003_EMAIL.match(email)
    text = f"write to {email}, please."
    assert [text[s.start : s.end] for s in paper003_emails(text)] == [email]


def test_paper003_email_rejects_long_tld_and_running_text():
    assert PAPER003_EMAIL.match("a@b.museumx") is None  # TLD of 6 letters: {2,5} in the paper
    assert PAPER003_EMAIL.match("mail a@b.org") is None  # anchored


def test_our_phone_covers_paper003_and_parenthesised_area_codes():
    for phone in ["201-555-0142", "201.555.0142", "(201) 555-0142", "+1 201 555 0142", "555-0142"]:
        assert found(f"call {phone}.") == [("PHONE", phone)], phone


def test_every_paper003_phone_match_is_found_by_ours():
    text = "a 201-555-0142 b 201.555.0199 c 989)555-0100 d 123-45-6789 e"
    ours = RegexDetector(entities=["PHONE", "SSN"]).detect(text)
    for m in PAPER003_PHONE.finditer(text):
        assert any(s.start <= m.start() and m.end() <= s.end for s in ours), m.group()


def test_synthetic_corpus_formats():
    text = "Order ORD-12345678, tracking 1ZA2B3C4D5E6F7G8H9, mail jane.doe7@example.org, call (201) 555-0142."
    assert found(text) == [
        ("ORDER_ID", "ORD-12345678"),
        ("TRACKING_ID", "1ZA2B3C4D5E6F7G8H9"),
        ("EMAIL", "jane.doe7@example.org"),
        ("PHONE", "(201) 555-0142"),
    ]


def test_ssn_card_ip_url_date():
    text = (
        "SSN 123-45-6789, bad SSN 000-12-3456, card 4111 1111 1111 1111, not a card 4111 1111 1111 1112, "
        "ip 192.168.0.1, bad ip 300.1.1.1, see https://example.org/a?b=1. On 12/31/2020 or March 3, 2021."
    )
    got = found(text)
    assert ("SSN", "123-45-6789") in got
    assert ("CREDIT_CARD", "4111 1111 1111 1111") in got
    assert ("IP", "192.168.0.1") in got
    assert ("URL", "https://example.org/a?b=1") in got
    assert ("DATE", "12/31/2020") in got and ("DATE", "March 3, 2021") in got
    assert not any(v == "000-12-3456" for _, v in got)
    assert not any(e == "CREDIT_CARD" and v.endswith("1112") for e, v in got)
    assert not any(e == "IP" and v.startswith("300") for e, v in got)


def test_luhn_against_textbook_numbers():
    assert luhn_valid("79927398713") is False  # fewer than 12 digits: never a card
    assert luhn_valid("5555 5555 5555 4444") and luhn_valid("378282246310005")
    assert not luhn_valid("5555 5555 5555 4445")


def test_address_name_university_patterns():
    text = (
        "Customer: My name is Jane Roe, I live at 778 Brown Plaza Apt. 4, North Jenniferfurt, VT 88077. "
        "My father is John Roe. Books for Springfield State University."
    )
    got = found(text)
    assert ("ADDRESS", "778 Brown Plaza Apt. 4, North Jenniferfurt, VT 88077") in got
    assert ("PERSON", "Jane Roe") in got and ("PERSON", "John Roe") in got
    assert ("UNIVERSITY", "Springfield State University") in got


def test_spans_never_overlap_and_lie_inside_text():
    text = "123-45-6789 (201) 555-0142 4111111111111111 ORD-12345678 99999 1.2.3.4"
    spans = RegexDetector().detect(text)
    for a, b in zip(spans, spans[1:], strict=False):
        assert a.end <= b.start
    assert all(0 <= s.start < s.end <= len(text) for s in spans)
    assert all(re.fullmatch(r"\S.*\S|\S", text[s.start : s.end]) for s in spans)


@pytest.mark.parametrize(
    "phone", ["206.269.0743x9150", "+1-780-563-6083x7783", "(798)938-6756x508", "001-541-754-3010"]
)
def test_faker_phone_formats_with_extensions(phone):
    assert found(f"call {phone} now") == [("PHONE", phone)]


def test_military_address():
    text = "Ship to PSC 4115, Box 7815, APO AA 41945 today."
    assert found(text) == [("ADDRESS", "PSC 4115, Box 7815, APO AA 41945")]


def _detect_by_scanning(detector, text):
    """The slow obvious overlap rule: a match is kept unless it overlaps any span kept before it."""
    taken, out = [], []
    for p in detector.patterns:
        for m in p.regex.finditer(text):
            a, b = m.span(p.group)
            if a == b or (p.validate is not None and not p.validate(m.group(p.group))):
                continue
            if any(a < y and x < b for x, y in taken):
                continue
            taken.append((a, b))
            out.append((a, b, p.entity))
    return sorted(out)


def test_overlap_resolution_by_neighbours_equals_scanning_every_kept_span():
    import random

    from lmleak.pii.regex import RegexDetector

    rng = random.Random(0)
    pieces = [
        "jane.doe7@example.org",
        "(201) 555-0142",
        "555-0142",
        "ORD-12345678",
        "123456",
        "Dear Ann Lee",
        "10 Main St, Springfield, IL 62701",
        "12/03/2024",
        "192.168.0.1",
        " ",
        ", ",
        "x",
        "\n",
        # names in every shape and the formats they come in (the prefilters must not change a match)
        "From: ",
        "Gábor Kovács (GK)",
        "zephyr",
        "佐藤 陽子",
        "Anna d'Amico",
        " <",
        ">",
        '"',
        "-- \n",
        "Thanks,\n",
        "> ",
        "'s father ",
        "(z@example.org)",
    ]
    d = RegexDetector()
    for _ in range(600):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        assert [(s.start, s.end, s.entity) for s in d.detect(text)] == _detect_by_scanning(d, text)


NAMES_IN_FORMATS = [
    ('From: "Gábor Kovács (GK)" <gk@example.org>', "Gábor Kovács (GK)"),
    ("From: Jürgen Weiß <jw@example.org>", "Jürgen Weiß"),
    ('From: "d\'Amico, Anna" <anna@example.org>', "d'Amico, Anna"),
    ("Cc: zephyr <zephyr@example.org>", "zephyr"),
    ("On Mon, 01 Jan 2024 10:00:00 +0000, 佐藤 陽子 <ys@example.org> wrote:", "佐藤 陽子"),
    (" -- nightowl42 <owl@example.net>  Mon, 01 Jan 2024", "nightowl42"),
    ("> -- \n> Иван Петров\n> Maintainer, ACME", "Иван Петров"),
    ("Cheers,\nGábor", "Gábor"),
    ("Best regards,\nJuan de la Cruz\n", "Juan de la Cruz"),
    ("Customer: Hi, this is zephyr. You can reach me", "zephyr"),
    ("Customer: Hello, Nguyễn Thị Hương here.", "Nguyễn Thị Hương"),
    ("Customer: zephyr's father is Ivan Roe.", "zephyr"),
    ("Customer: If I am not home, my father 田中 太郎 can sign for it.", "田中 太郎"),
    ("write to ann.lee@example.org (Ann d'Lee) today", "Ann d'Lee"),
]


@pytest.mark.parametrize(("text", "name"), NAMES_IN_FORMATS)
def test_names_in_every_shape_are_found_in_the_formats_and_introductions_they_come_in(text, name):
    assert ("PERSON", name) in found(text)


@pytest.mark.parametrize(
    "text",
    [
        "Please ask zephyr <zephyr@example.org> about it.",  # a handle in running text
        "I do not think this is a bug; this is fine.",
        "Thanks, it works.",
        "From: support <support@example.org>",  # a role, not a person
    ],
)
def test_single_words_outside_a_name_format_are_no_names(text):
    assert [v for e, v in found(text) if e == "PERSON"] == []
