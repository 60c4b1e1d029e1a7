"""lmleak.pii.hipaa: the HIPAA Safe Harbor anonymizer (paper 004 appendix A, Table 4)."""

from __future__ import annotations

import re

from lmleak.data.synth.clinical import synthesize
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


def test_spans_do_not_overlap_and_anonymize_replaces_exactly_them():
    a = HipaaAnonymizer(known_names=["Ada Smith"], known_places=["Riverside Hospital"])
    text = "Ada Smith, 555-0142, at Riverside Hospital on 03/04/2101; Smith said Ada is fine."
    spans = a.spans(text)
    assert all(x.end <= y.start for x, y in zip(spans, spans[1:], strict=False))  # sorted, disjoint
    chars = list(text)  # the slow oracle: mark each masked character, then collapse each span
    for s in spans:
        chars[s.start] = f"[**{s.label}**]"
        for i in range(s.start + 1, s.end):
            chars[i] = ""
    assert a.anonymize(text) == "".join(chars)
    # a known patient's first or last name alone is still a name
    assert [text[s.start : s.end] for s in spans if s.label == "NAME"] == ["Ada Smith", "Smith", "Ada"]


def test_invented_names_are_found_from_the_bundled_lists_only_when_asked():
    text = "The note was signed by James Smith yesterday."
    with_lists, without = HipaaAnonymizer(), HipaaAnonymizer(name_lists=False)
    assert "James Smith" not in with_lists.anonymize(text)
    assert without.anonymize(text) == text
    assert re.fullmatch(r"The note was signed by \[\*\*NAME\*\*\] yesterday\.", with_lists.anonymize(text))


def test_synthesize_clinical_is_synthesize_with_the_patient_anonymizer(tmp_path):
    from lmleak.pii.hipaa import synthesize_clinical

    got = synthesize_clinical(tmp_path / "a", patients=4, notes_per_patient=2, seed=3)
    want = synthesize(tmp_path / "b", anonymizer=patient_anonymizer, patients=4, notes_per_patient=2, seed=3)
    assert got.keys() == want.keys()
    for name in got:  # same seed, same anonymiser: byte-identical files
        assert got[name].read_bytes() == want[name].read_bytes(), name
