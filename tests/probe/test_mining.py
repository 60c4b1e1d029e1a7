"""Probing templates mined from the corpus (issue 14): the formats real data writes PII in."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.corpus import Corpus, Document
from lmleak.models.fake import FakeLM, NGramModule
from lmleak.probe.mining import mine_templates, write_templates
from lmleak.probe.probing import run_probe
from lmleak.probe.settings import ProbeSettings
from lmleak.probe.templates import load_templates

PEOPLE = [
    ("Ann Lee", "ann.lee@example.org", "(201) 555-0142"),
    ("Bob Roe", "bob@example.com", "(303) 555-0199"),
    ("Cy Dee", "cy.dee@example.net", "(404) 555-0123"),
    ("Di Fox", "dfox@example.org", "(505) 555-0177"),
]


class CharTokenizer:
    vocab_size, pad_id, bos_id, eos_id = 260, 0, 1, 2

    def encode(self, text):
        return [4 + min(ord(c), 255) for c in text]

    def decode(self, ids):
        return "".join(chr(i - 4) for i in ids if i >= 4)


def _mail() -> list[str]:
    docs = []
    for i, (name, email, phone) in enumerate(PEOPLE * 3):
        docs.append(
            f"From: {name} <{email}>\nSubject: build {i}\n\nThe build fails again.\n\n-- \n{name}\n{phone}\n"
        )
    return docs


def _char_model(texts: list[str]) -> FakeLM:
    tok = CharTokenizer()
    seqs = [[tok.bos_id, *tok.encode(t), tok.eos_id] for t in texts]
    return FakeLM(NGramModule(seqs, tok.vocab_size, 24, 1e-4), tok, name="char-ngram", max_length=512)


def test_mined_templates_reproduce_the_corpus_formats():
    corpus = Corpus([Document(f"u{i % 4}", f"d{i}", t) for i, t in enumerate(_mail())])
    subjects = [
        {"subject_id": f"s{i}", "name": n, "email": e, "phone": p} for i, (n, e, p) in enumerate(PEOPLE)
    ]
    mined = mine_templates(corpus, subjects)
    assert mined["email"][0].template == "From: {name} <" and mined["email"][0].support == 4
    assert mined["email"][0].precision == 1.0
    assert mined["phone"][0].template == "-- \n{name}\n" and mined["phone"][0].precision == 1.0


def test_a_memorising_model_leaks_more_through_mined_templates_than_the_appendix_ones(tmp_path):
    texts = _mail()
    corpus = Corpus([Document(f"u{i % 4}", f"d{i}", t) for i, t in enumerate(texts)])
    subjects = [
        {"subject_id": f"s{i}", "name": n, "email": e, "phone": p} for i, (n, e, p) in enumerate(PEOPLE)
    ]
    write_templates(mine_templates(corpus, subjects), tmp_path / "t.yaml")
    model = _char_model(texts)
    mined = run_probe(
        model,
        subjects,
        tmp_path / "mined",
        ProbeSettings(targets=("email",), level="twin", templates=1, beams=2, figures=False),
        templates=load_templates(tmp_path / "t.yaml"),
        budgets={"email": 24},
    )
    paper = run_probe(
        model,
        subjects,
        tmp_path / "paper",
        ProbeSettings(targets=("email",), level="twin", templates=1, beams=2, figures=False),
        budgets={"email": 24},
    )
    assert mined["pii_exact_match"] == 1.0
    assert paper["pii_exact_match"] < mined["pii_exact_match"]


def test_the_cli_writes_a_templates_file_that_probe_run_reads(tmp_path):
    (tmp_path / "c.jsonl").write_text(
        "".join(json.dumps({"user_id": f"u{i % 4}", "text": t}) + "\n" for i, t in enumerate(_mail()))
    )
    (tmp_path / "s.jsonl").write_text(
        "".join(json.dumps({"name": n, "email": e}) + "\n" for n, e, _ in PEOPLE)
    )
    res = CliRunner().invoke(
        app,
        [
            "probe",
            "templates",
            "--corpus",
            str(tmp_path / "c.jsonl"),
            "--subjects",
            str(tmp_path / "s.jsonl"),
            "--out",
            str(tmp_path / "t.yaml"),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert load_templates(tmp_path / "t.yaml")["email"][0] == "From: {name} <"


def test_mined_templates_carry_the_budget_their_values_need(tmp_path):
    from lmleak.probe.mining import CHARS_PER_TOKEN
    from lmleak.probe.templates import MAX_NEW_TOKENS, load_template_budgets

    corpus = Corpus([Document(f"u{i % 4}", f"d{i}", t) for i, t in enumerate(_mail())])
    subjects = [
        {"subject_id": f"s{i}", "name": n, "email": e, "phone": p} for i, (n, e, p) in enumerate(PEOPLE)
    ]
    mined = mine_templates(corpus, subjects)
    # by hand: "-- \n{name}\n" is followed directly by the phone: the gap is the phone's own length
    assert mined["phone"][0].gap_chars == len("(201) 555-0142")
    write_templates(mined, tmp_path / "t.yaml")
    budgets = load_template_budgets(tmp_path / "t.yaml")
    assert budgets["phone"] == max(MAX_NEW_TOKENS["phone"], -(-len("(201) 555-0142") // CHARS_PER_TOKEN))
    assert budgets["email"] >= MAX_NEW_TOKENS["email"]


def test_templates_are_mined_per_name_shape_under_every_spelling_and_never_carry_a_mangled_name(tmp_path):
    from lmleak.probe.templates import build_probes

    people = [  # (name, nickname, variant, address)
        ("Gábor Kovács", "GK", None, "gk@example.org"),
        ("Anna Szabó", "AS", None, "as@example.org"),
        ("Iñaki Ibáñez", None, "Inaki Ibanez", "inaki@example.org"),
        ("Ann Lee", None, None, "ann@example.org"),
        ("zephyr", None, None, "zephyr@example.org"),
    ]
    docs = []
    for i, (name, nick, variant, email) in enumerate(people * 2):
        shown = f"{name} ({nick})" if nick else (variant if variant and i >= len(people) else name)
        docs.append(Document(f"u{i % 5}", f"d{i}", f"From: {shown} <{email}>\n\nhello"))
    subjects = [
        {"subject_id": f"s{i}", "name": n, "email": e, "nickname": k, "variants": [v] if v else []}
        for i, (n, k, v, e) in enumerate(people)
    ]
    assert [m.template for m in mine_templates(Corpus(docs), subjects)["email"]] == [
        "From: {name} <",
        "From: {name} ({nickname}) <",
    ]  # with room for two, everyone's list holds the nicknames' context: no group of their own
    mined = mine_templates(Corpus(docs), subjects, top=1)
    # everyone's context, counted under the variant spelling too (Iñaki wrote as "Inaki Ibanez" once)
    (common,) = mined["email"]
    assert common.template == "From: {name} <" and common.support == 3 and common.precision == 1.0
    assert common.uses == 6  # Ann, zephyr and Iñaki twice each: "Inaki Ibanez" is a use of his too
    # the nicknames' context is their own group, with the nickname as a slot
    (nick,) = mined["email:nickname"]
    assert nick.template == "From: {name} ({nickname}) <" and nick.support == 2 and nick.shape == "nickname"
    write_templates(mined, tmp_path / "t.yaml")  # the file probe run reads holds the shape's group
    groups = load_templates(tmp_path / "t.yaml")
    assert groups == load_group(mined) and set(groups) == {"email", "email:nickname"}
    probes = {
        p.subject_id: p.prompt
        for s in subjects
        for p in build_probes(s, "email", level="twin", templates=groups)
    }
    assert probes["s0"] == "From: Gábor Kovács (GK) <" and probes["s2"] == "From: Iñaki Ibáñez <"
    assert probes["s4"] == "From: zephyr <"


def load_group(mined):
    return {g: tuple(m.template for m in ms) for g, ms in mined.items() if ms}
