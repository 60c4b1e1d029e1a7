"""Subjects files from a corpus (appendix A.2): real formats and the NER path, against synthetic ground truth."""

from __future__ import annotations

import json

import pytest

from lmleak.data.loaders import iter_documents, load_corpus
from lmleak.data.synth import customersim, mail
from lmleak.probe.builder import RELATION_RE, build_subjects


@pytest.mark.slow
def test_builder_recovers_synthetic_subjects(tmp_path):
    paths = customersim.synthesize(tmp_path / "syn", users=8, dialogs_per_user=2, seed=3)
    subj, counts = build_subjects(load_corpus(paths["corpus"]), method="ner")
    truth = {json.loads(ln)["name"]: json.loads(ln) for ln in paths["subjects"].read_text().splitlines()}
    found = [s for s in subj if s["name"] in truth]
    assert len(found) >= 6
    assert sum(s.get("email") == truth[s["name"]]["email"] for s in found) >= 6
    assert sum(s.get("phone") == truth[s["name"]]["phone"] for s in found) >= 6
    assert counts["quadruplets"] + counts["triplets"] + counts["twins"] >= 6
    m = RELATION_RE.search("We met Ann Lee's father Bob Lee there.")
    assert m and m.group(2) == "father" and m.group(3) == "Bob Lee"
    _, paper_counts = build_subjects(load_corpus(paths["corpus"]), paper_only=True, method="ner")
    assert paper_counts["quadruplets"] <= counts["quadruplets"]  # "(NNN) NNN-NNNN" escapes the paper's regex


def test_probe_build_meets_precision_and_recall_on_synth_mail(tmp_path):
    paths = mail.synthesize(tmp_path, scale=0.3, seed=5)
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
