"""Synthetic clinical notes (paper 004 §5.2, appendix B.1); the anonymizer is tested in pii/test_hipaa.py."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from lmleak.data.synth.clinical import DISEASES, extract_concepts, synthesize
from lmleak.jsonl import read_jsonl
from lmleak.pii.hipaa import patient_anonymizer


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


def test_cli_synth_clinical_writes_the_files(tmp_path):
    from lmleak.cli.main import app

    r = CliRunner().invoke(
        app, ["synth", "clinical", "--patients", "5", "--seed", "2", "--out", str(tmp_path), "--json"]
    )
    assert r.exit_code == 0, r.output
    paths = json.loads(r.stdout)
    assert set(paths) == {"private", "public", "gold", "patients", "diseases"}
    assert len(read_jsonl(paths["private"])) == 15
