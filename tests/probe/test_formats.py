"""PII discovery in real formats (issue 14): `probe build` against synth mail's ground truth."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.loaders import iter_documents
from lmleak.data.synth.mail import synthesize
from lmleak.probe.builder import build_subjects
from lmleak.probe.formats import discover, find_links


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


def test_probe_build_meets_precision_and_recall_on_synth_mail(tmp_path):
    paths = synthesize(tmp_path, scale=0.3, seed=5)
    subjects, counts = build_subjects(iter_documents(paths["corpus"]))
    truth = [json.loads(line) for line in paths["subjects"].read_text().splitlines()]
    for field, need in (("email", 0.9), ("phone", 0.9), ("address", 0.9)):
        gold = {(t["name"], t[field]) for t in truth if t[field]}
        found = {(s["name"], s[field]) for s in subjects if s[field]}
        precision = len(gold & found) / len(found)
        recall = len(gold & found) / len(gold)
        assert precision >= 0.95 and recall >= need, (field, precision, recall)
    assert counts["documents"] == sum(1 for _ in paths["corpus"].open())
    assert all(s["seen"]["email"] >= 1 for s in subjects if s["email"])


def test_the_cli_writes_subjects_with_every_field_and_how_often_it_was_seen(tmp_path):
    paths = synthesize(tmp_path / "mail", scale=0.05, seed=1)
    out = tmp_path / "subjects.jsonl"
    res = CliRunner().invoke(
        app, ["probe", "build", "--corpus", str(paths["corpus"]), "--out", str(out), "--json"]
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all({"name", "email", "phone", "address", "seen"} <= set(r) for r in rows)
    assert json.loads(res.stdout)["subjects"] == len(rows)
