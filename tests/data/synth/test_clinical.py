"""Synthetic clinical notes and the HIPAA anonymizer (paper 004 §5.2, appendices A and B.1)."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from lmleak.data.synth.clinical import DISEASES, extract_concepts, synthesize
from lmleak.jsonl import read_jsonl
from lmleak.pii.hipaa import HipaaAnonymizer, patient_anonymizer, strip_placeholders


def test_the_anonymised_corpus_contains_no_name_date_or_phone_of_the_private_one(tmp_path):
    paths = synthesize(tmp_path, anonymizer=patient_anonymizer, patients=40, seed=3)
    private = read_jsonl(paths["private"])
    public = read_jsonl(paths["public"])
    patients = read_jsonl(paths["patients"])
    assert [d["doc_id"] for d in private] == [d["doc_id"] for d in public]
    pub_text = "\n".join(d["text"] for d in public)
    dates = {m for d in private for m in re.findall(r"\d{2}/\d{2}/\d{4}", d["text"])}
    assert dates, "the generator must write dates"
    for p in patients:
        for v in (p["name"], p["first"], p["last"], p["phone"], p["mrn"], p["hospital"]):
            assert re.search(rf"\b{re.escape(v)}\b", pub_text, flags=re.I) is None, v
    for dt in dates:
        assert dt not in pub_text
    assert "[**NAME**]" in pub_text and "[**DATE**]" in pub_text and "[**PHONE**]" in pub_text


def test_notes_open_with_the_demographics_sentence_and_gold_pairs_come_from_the_notes(tmp_path):
    paths = synthesize(tmp_path, anonymizer=patient_anonymizer, patients=10, seed=1)
    patients = {p["patient_id"]: p for p in read_jsonl(paths["patients"])}
    for d in read_jsonl(paths["private"]):
        p = patients[d["user_id"]]
        assert d["text"].startswith(f"{p['name']} is a {p['age']} year old {p['sex']} who presented with ")
    for g in read_jsonl(paths["gold"]):
        assert g["concept_id"] in patients[g["patient_id"]]["concepts"]


def test_synonyms_normalise_to_one_concept_and_longest_match_wins():
    assert extract_concepts("CHF, heart failure and congestive heart failure") == ["K0003"]
    assert extract_concepts("chronic pancreatitis") == ["K0055"]  # not K0015 'pancreatitis'
    assert extract_concepts("nothing here") == []
    for cid, syns in DISEASES.items():  # the slow oracle: every synonym alone maps to its own id
        for s in syns:
            assert extract_concepts(f"has {s} .") == [cid], s


def test_hipaa_masks_each_text_identifier_class():
    a = HipaaAnonymizer(known_names=["Ada Smith"], known_places=["Riverside Hospital"])
    text = (
        "Ada Smith (MRN 12345678) seen 2101-03-04 by Dr. Jones at Riverside Hospital, 12 Oak Street, 02139. "
        "Call 555-0142 or fax 555-0199, email ada@example.org, SSN 123-45-6789, http://example.org, "
        "10.0.0.1, account no. 998877, Mrs Smith is a 92 year old woman."
    )
    out = a.anonymize(text)
    for leaked in (
        "Ada",
        "Smith",
        "12345678",
        "2101",
        "Jones",
        "Riverside",
        "Oak",
        "02139",
        "0142",
        "0199",
        "example.org",
        "6789",
        "10.0.0.1",
        "998877",
        "92 year",
    ):
        assert leaked not in out, (leaked, out)
    assert {s.hipaa_class for s in a.spans(text)} >= set("ABCDEFGHJNO")
    assert "woman" in out and strip_placeholders(out).count("[**") == 0


def test_cli_synth_clinical_writes_the_files(tmp_path):
    from lmleak.cli.main import app

    r = CliRunner().invoke(
        app, ["synth", "clinical", "--patients", "5", "--seed", "2", "--out", str(tmp_path), "--json"]
    )
    assert r.exit_code == 0, r.output
    paths = json.loads(r.stdout)
    assert set(paths) == {"private", "public", "gold", "patients", "diseases"}
    assert len(read_jsonl(paths["private"])) == 15
