"""PII discovery in real formats (issue 14): which name each e-mail, phone and address belongs to."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from lmleak.probe.formats import LinkCounter, find_links


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        ('From: "Ann Lee" <ann.lee@example.org>', ("Ann Lee", "ann.lee@example.org")),
        ("From: Ann Lee <ann.lee@example.org>", ("Ann Lee", "ann.lee@example.org")),
        ('From: "Lee, Ann" <ann.lee@example.org>', ("Ann Lee", "ann.lee@example.org")),
        ("Ann Lee (ann.lee@example.org)", ("Ann Lee", "ann.lee@example.org")),
        ("From: ann.lee@example.org (Ann Lee)", ("Ann Lee", "ann.lee@example.org")),
        ("On Mon, 1 Jan 2024 10:00, Ann Lee <ann@example.org> wrote:", ("Ann Lee", "ann@example.org")),
        (" -- Ann O'Brien-Lee <ann@example.org>  Mon, 01 Jan 2024", ("Ann O'Brien-Lee", "ann@example.org")),
        ("> > On Tue, Ann Lee <ann@example.org> wrote:", ("Ann Lee", "ann@example.org")),
        ("Cc: Bob Roe <bob@example.com>, Ann J. Lee <ann@example.org>", ("Ann J. Lee", "ann@example.org")),
    ],
)
def test_each_format_links_the_name_to_the_email(text, pair):
    assert pair in find_links(text).emails


def discover(texts: Iterable[tuple[str, str | None]], *, min_count: int = 1) -> list[dict[str, Any]]:
    """Subjects from ``(text, user_id)`` pairs, streamed (see :class:`LinkCounter`).

    Example:
        >>> docs = [("From: Ann Lee <ann@example.org>", "u1"), ("Ann Lee <ann@example.org> wrote:", "u2")]
        >>> [(s["name"], s["email"], s["seen"]) for s in discover(docs)]
        [('Ann Lee', 'ann@example.org', {'email': 2})]
    """
    counter = LinkCounter()
    for text, user in texts:
        counter.add(text, user)
    return counter.subjects(min_count=min_count)


def test_a_signature_block_links_phone_and_address_and_stops_at_a_blank_line():
    text = (
        "Thanks,\nAnn\n\n-- \nAnn Lee\nRelease Manager, Acme Corp\nTel: (201) 555-0142\n"
        "12 Oak Street, Springfield, IL 62701\n\nOn Mon, Bob Roe <bob@example.com> wrote:\n> -- \n"
        "> Bob Roe\n> +1 303 555 0199\n"
    )
    links = find_links(text)
    assert links.phones == [("Ann Lee", "(201) 555-0142"), ("Bob Roe", "+1 303 555 0199")]
    assert links.addresses == [("Ann Lee", "12 Oak Street, Springfield, IL 62701")]


def test_a_list_address_without_a_name_and_prose_make_no_links():
    links = find_links("To: proj-dev@lists.example.org\nPlease write to support@example.org today.")
    assert links.emails == [] and links.phones == []


def test_an_email_goes_to_the_name_it_is_seen_with_most():
    docs = [("From: Ann Lee <a@example.org>", None)] * 3 + [("From: Annie Lee <a@example.org>", None)]
    subs = discover(docs)
    assert [(s["name"], s["email"]) for s in subs if s["email"]] == [("Ann Lee", "a@example.org")]


def test_a_person_belongs_to_the_user_whose_documents_they_send_not_to_who_quotes_them_most():
    """``user_id`` decides member vs control: Maya wrote one message (u9, held out of training) and is
    quoted in three of a prolific author's (u1). Counting mentions gave her u1, so an audit probed a
    held-out person as a trained one."""
    maya = 'From: "Maya Lo" <maya@example.org>\n\nThe loader fails.'
    quoting = (
        "From: Ann Lee <ann@example.org>\n\nOn Mon, Maya Lo <maya@example.org> wrote:\n> The loader fails."
    )
    subs = discover([(maya, "u9")] + [(quoting, "u1")] * 3)
    owner = {s["name"]: s["user_id"] for s in subs}
    assert owner == {"Maya Lo": "u9", "Ann Lee": "u1"}
    # nobody sends from the address (a signature only): the user whose documents name them most
    sig = "Thanks\n-- \nBo Kim\n(201) 555-0142\n"
    assert {s["name"]: s["user_id"] for s in discover([(sig, "u2"), (sig, "u2"), (sig, "u3")])} == {
        "Bo Kim": "u2"
    }


def test_every_person_of_synth_mail_gets_their_own_user_id(tmp_path):
    """Against the planted owners: before, 5 of 45 people (scale 0.1) and 25 of 215 (scale 1) went to a
    prolific author or the list digest that quoted them."""
    import json

    from lmleak.data.loaders import iter_documents
    from lmleak.data.synth.mail import synthesize

    paths = synthesize(tmp_path, scale=0.1, seed=0)
    owner = {}
    for line in paths["subjects"].read_text(encoding="utf-8").splitlines():
        t = json.loads(line)
        owner.update({e: t["user_id"] for e in t["emails"]})
    subs = discover((d.text, d.user_id) for d in iter_documents(paths["corpus"]))
    assert len(subs) >= 40 and all(s["user_id"] == owner[s["email"]] for s in subs)
