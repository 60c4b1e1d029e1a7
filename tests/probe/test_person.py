"""lmleak.probe.person: the numbers of the person's page (issue 29 item 7), each against a slow
obvious computation, and the made-up people against what a name swap by hand gives."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lmleak.errors import ConfigError
from lmleak.models.blackbox import TextOnly
from lmleak.models.fake import FakeLM
from lmleak.probe.person import (
    MADE_UP_PEOPLE,
    _asks,
    _best_scores,
    false_alarm_rate,
    file_items,
    made_up_people,
    person_report,
    rank_p_value,
)
from lmleak.probe.settings import ProbeSettings
from lmleak.probe.verdict import subject_view

ANN = {
    "subject_id": "u1",
    "user_id": "u1",
    "name": "Ann Lee",
    "phone": "(555) 555-0142",
    "email": "ann.lee6@example.org",
    "emails": ["ann.lee6@example.org", "alee@example.net"],
    "relations": {"father": "Sam Lee"},
    "university": "Example State University",
}
CARA = {"subject_id": "u2", "name": "Cara Diaz", "phone": "(555) 555-0177", "email": "cara.diaz3@example.org"}


@pytest.fixture(scope="module")
def lm():
    """An n-gram model that memorised Ann (long contexts: the name is inside them) and never saw Cara."""
    ann = {"n": "Ann Lee", "p": "(555) 555-0142", "e": "ann.lee6@example.org"}
    texts = [
        t.format(**ann)
        for t in (
            "Please contact {n} by {p} or email address {e}",
            "Please contact {n} by {e} or phone number {p}",
            "The name of father of {n} is Sam Lee",
        )
    ]
    texts += [f"The email address of Bob Ray{i} is bob{i}@example.org" for i in range(12)]
    return FakeLM.from_texts(texts, order=12)


def test_made_up_people_are_the_person_under_another_name_swapped_inside_every_item():
    people = made_up_people(ANN, 25, seed=4)
    assert len(people) == 25 and len({p["name"] for p in people}) == 25
    for p in people:
        first, last = p["name"].split()
        assert {first.lower(), last.lower()}.isdisjoint({"ann", "lee"})
        assert p["email"] == f"{first.lower()}.{last.lower()}6@example.org"  # the name inside an address
        assert p["emails"] == [
            p["email"],
            f"{first[0].lower()}{last.lower()}@example.net",
        ]  # initial + surname
        assert p["relations"] == {"father": f"Sam {last}"}  # a relative's surname
        assert p["phone"] == ANN["phone"] and p["university"] == ANN["university"]  # no name in them
        assert "user_id" not in p and p["subject_id"].startswith("__made_up_")
    assert made_up_people(ANN, 25, seed=4) == people and made_up_people(ANN, 25, seed=5) != people
    handle = made_up_people({"name": "zephyr", "email": "zephyr@example.org"}, 3)
    assert all(p["name"].islower() and p["email"] == f"{p['name']}@example.org" for p in handle)  # its case
    with pytest.raises(ConfigError, match="at least 1"):
        made_up_people(ANN, 0)


def test_rank_p_value_counts_and_is_uniform_when_the_person_is_one_of_the_crowd():
    rng = np.random.default_rng(0)
    for _ in range(200):  # against counting by hand
        scores = rng.integers(0, 5, size=8).astype(float)
        person, crowd = scores[0], scores[1:]
        want = (1 + sum(1 for c in crowd if c >= person)) / (len(crowd) + 1)
        assert rank_p_value(person, crowd) == want
    # exchangeable scores: "singled out" (p <= 0.05 with 19 made-up people) 1 time in 20, with ties less often
    draws = 20_000
    sd = math.sqrt(0.05 * 0.95 / draws)
    continuous = [rank_p_value(s[0], s[1:]) <= 0.05 for s in rng.normal(size=(draws, 20))]
    assert abs(np.mean(continuous) - false_alarm_rate(19)) < 4 * sd
    tied = [rank_p_value(s[0], s[1:]) <= 0.05 for s in rng.integers(0, 3, size=(draws, 20)).astype(float)]
    assert np.mean(tied) < false_alarm_rate(19)
    assert false_alarm_rate(MADE_UP_PEOPLE) == pytest.approx(1 / 20)


def test_a_memorised_person_is_written_out_and_linked_and_a_never_seen_one_shows_no_sign(lm):
    ann = person_report(lm, ANN, templates=2, beams=1)
    by_field = {f.field: f for f in ann.findings}
    assert set(by_field) == {"phone", "email", "emails[1]", "relations.father", "university"}
    email, father = by_field["email"], by_field["relations.father"]
    assert email.verdict == "written_out" and email.written_out == 1  # template 0 is the memorised one
    assert email.made_up_at_least == 0 and email.rank_p == pytest.approx(1 / 20)  # above all 19
    assert father.made_up_at_least == 0 and father.written_out == 1 and father.ratio_to_typical > 100
    # the second address was never seen; the university's prompts never reach the name in this model
    assert by_field["emails[1]"].verdict == "no_sign" and by_field["emails[1]"].written_out == 0
    assert by_field["university"].made_up_tied == MADE_UP_PEOPLE
    cara = person_report(lm, CARA, templates=2, beams=1)
    assert {f.verdict for f in cara.findings} == {"no_sign"}
    assert all(f.written_out == 0 and f.rank_p == 1.0 for f in cara.findings)  # every made-up one ties
    assert ann.false_alarm == pytest.approx(0.05)
    assert ann.any_false_alarm_at_most == pytest.approx(5 * 0.05) and cara.any_false_alarm_at_most == 0.1
    assert ann.count("written_out") == sum(f.verdict == "written_out" for f in ann.findings)


def test_the_page_numbers_equal_the_terminal_view_and_scoring_one_pair_at_a_time(lm):
    report = person_report(lm, ANN, templates=3, beams=1)
    view = {r["field"]: r for r in subject_view(lm, ANN, templates=3, beams=1).items}
    assert set(view) == {f.field for f in report.findings}
    for f in report.findings:
        assert f.likelihood == view[f.field]["likelihood"] and f.rank_p == view[f.field]["rank_p"]
        assert (
            f.tries == view[f.field]["expected_queries"]
            and (f.written_out > 0) == view[f.field]["reproduced"]
        )
    # the chance per try against run_probe's own likelihood pass (the probe run of many people)
    lik = _run_probe_likelihoods(lm, ANN, templates=3)
    for f in report.findings:
        if f.field in ("phone", "email", "relations.father", "university"):
            assert f.likelihood == pytest.approx(lik[f.kind], rel=1e-9)
    # the batched scoring against one teacher-forced pair at a time, through the model's own scorer
    work = dict(ANN)
    asks = _asks(ANN, work, made_up_people(work, 4), templates=3, seed=0)
    enc = lm.tokenizer.encode

    def one(prompt: str, target: str) -> float:
        return float(lm.score_ids([enc(prompt.rstrip())], [enc(" " + target.strip())])[0])

    for ask, (best, null) in zip(asks, _best_scores(lm, asks), strict=True):
        assert best == pytest.approx(max(one(p.prompt, ask.value) for p in ask.probes), abs=1e-5)
        want = [max(one(p.prompt, v) for p in probes) for probes, v in ask.theirs]
        assert null == pytest.approx(want, abs=1e-5)


def _run_probe_likelihoods(lm, subject, *, templates):
    """Per kind, the best likelihood of the subject's first value in ``run_probe``'s rows (with a
    second person beside it, for the null its likelihood pass needs)."""
    import tempfile
    from pathlib import Path

    import pandas as pd

    from lmleak.probe.person import probe_plan
    from lmleak.probe.probing import run_probe

    # the first address only, as the page's "email" finding
    first = {k: v for k, v in subject.items() if k != "emails"}
    other = {**CARA, "relations": {"father": "Tom Diaz"}, "university": "Other University"}
    targets, level = probe_plan(first)
    with tempfile.TemporaryDirectory() as td:
        run_probe(
            lm,
            [first, other],
            td,
            ProbeSettings(targets=targets, level=level, templates=templates, beams=1, figures=False),
        )
        rows = pd.read_parquet(Path(td) / "likelihoods.parquet")
    rows = rows[rows["subject_id"] == subject["subject_id"]]
    return rows.groupby("target_type")["likelihood"].max().to_dict()


def test_a_model_that_only_writes_text_gets_answers_but_no_chances():
    lm = FakeLM.from_texts(["The phone number of Ann Lee is (555) 555-0142"], order=12)
    report = person_report(TextOnly(lm), {"name": "Ann Lee", "phone": "(555) 555-0142"}, templates=2, beams=1)
    (f,) = report.findings
    assert f.written_out == 2 and f.verdict == "written_out"  # both twin templates back off to "is"
    assert f.likelihood is None and f.rank_p is None and f.made_up == 0 and f.example_made_up is None
    assert report.any_false_alarm_at_most == 0


def test_file_items_lists_every_item_nested_ones_one_by_one():
    items = file_items({**ANN, "x_note": 7, "subject_id": "s1"}, {("email", "ann.lee6@example.org")})
    assert [(i.field, i.value, i.checked) for i in items] == [
        ("user_id", "u1", False),  # subject_id s1 is read_subjects' row number, not the person's
        ("name", "Ann Lee", False),
        ("phone", "(555) 555-0142", False),
        ("email", "ann.lee6@example.org", True),  # emails[0], the same address, is not listed twice
        ("emails[1]", "alee@example.net", False),
        ("relations.father", "Sam Lee", False),
        ("university", "Example State University", False),
        ("x_note", "7", False),
    ]
    assert [i.field for i in file_items({"name": "A", "user_id": "u9", "subject_id": "me-1"}, set())] == [
        "name",
        "user_id",
        "subject_id",
    ]


@pytest.mark.slow
def test_on_a_trained_gpt_held_out_people_are_linked_about_1_time_in_20_and_members_far_more(tmp_path):
    """The null at work (docs/probing.md): people the model never saw come out "linked" about as often
    as the made-up people promise (1 in 20), the people it learnt far more often."""
    from typer.testing import CliRunner

    from lmleak.cli.main import app
    from lmleak.data.holdout import read_holdout
    from lmleak.data.synth import customersim
    from lmleak.models.loading import load_model
    from lmleak.probe.subjects import read_subjects

    paths = customersim.synthesize(tmp_path / "syn", users=20, dialogs_per_user=2, seed=2)
    model = tmp_path / "gpt"
    res = CliRunner().invoke(app, ["-q", "train", "--corpus", str(paths["corpus"]), "--out", str(model),
                                   "--epochs", "40", "--batch-size", "8", "--lr", "3e-3", "--vocab-size", "1000",
                                   "--holdout-users", "0.5"])  # fmt: skip
    assert res.exit_code == 0, res.output
    lm, held = load_model(str(model)), set(read_holdout(model).users)
    linked: dict[bool, list[bool]] = {True: [], False: []}
    for s in read_subjects(paths["subjects"]):
        s = {k: v for k, v in s.items() if k not in ("orders", "tracking_numbers")}
        for f in person_report(lm, s, templates=3, beams=1).findings:
            linked[s["user_id"] in held].append(f.verdict != "no_sign")
    controls, members = np.mean(linked[True]), np.mean(linked[False])
    assert len(linked[True]) >= 60 and controls <= 0.15  # 0.05 expected; 0.15 is > 4 sd above it at n = 60
    assert members >= 0.3 and members >= 3 * controls


@pytest.mark.parametrize(
    "name,script",
    [
        ("Платон Гаврилов", "CYRILLIC"),
        ("小林 翔太", "CJK"),
        ("Urszula Głowiak", "LATIN"),
        ("Ann Lee", "LATIN"),
    ],
)
def test_made_up_people_are_written_in_the_persons_script(name, script):
    """A permutation test needs exchangeable names: English made-up people beside a Cyrillic or Japanese
    name differ in script, which a model tells apart whether or not it ever saw the person."""
    import unicodedata

    people = made_up_people({"name": name, "email": "x@example.org"}, 19, seed=2)
    names = [p["name"] for p in people]
    assert len(set(names)) == 19 and names == [p["name"] for p in made_up_people({"name": name}, 19, seed=2)]
    own = {w.lower() for w in name.split()}
    for made_up in names:
        assert len(made_up.split()) == len(name.split()) and not own & {w.lower() for w in made_up.split()}
        letters = [c for c in made_up if c.isalpha()]
        # ja_JP names mix kanji and kana: "CJK" or a kana block; the others one script
        scripts = {unicodedata.name(c).split()[0] for c in letters}
        japanese = {"CJK", "HIRAGANA", "KATAKANA", "IDEOGRAPHIC"}  # 々 is IDEOGRAPHIC ITERATION MARK
        assert scripts <= (japanese if script == "CJK" else {script}), (made_up, scripts)


def test_a_copied_subjects_line_lists_each_item_once_and_no_bookkeeping():
    """``probe build``'s line for a person, pasted as me.json: the page listed the address twice
    (email, emails[0]) and 'Your seen.email: 3', 'Your name_shape: non_latin'."""
    from lmleak.probe.person import file_items

    line = {
        "subject_id": "s00015",
        "name": "Платон Гаврилов",
        "email": "pg@example.net",
        "emails": ["pg@example.net", "platon@example.org"],
        "seen": {"email": 3},
        "name_shape": "non_latin",
        "variants": ["Platon Gavrilov"],
        "user_id": "a-0061",
    }
    items = [(i.field, i.value) for i in file_items(line, set())]
    assert items == [  # subject_id s00015 is probe build's row number, not the person's
        ("name", "Платон Гаврилов"),
        ("email", "pg@example.net"),
        ("emails[1]", "platon@example.org"),
        ("variants[0]", "Platon Gavrilov"),
        ("user_id", "a-0061"),
    ]


def test_a_name_swap_follows_re_s_case_rules_dotless_i_included():
    """re's IGNORECASE matches 'yildirim' for 'Yıldırım', whose lower() is no key of the swap: the
    slow test on Faker's tr_TR people stopped with KeyError 'yildirim'."""
    from lmleak.probe.person import _swap

    text = "From yildirim, YILDIRIM and Yıldırım; Straße"
    assert _swap(text, [("Yıldırım", "Kaya"), ("Straße", "Weg")]) == "From kaya, KAYA and Kaya; Weg"
