"""The synthetic CustomerSim corpus: deterministic, spans exact, canaries exact, PII fictional."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter

from lmleak.data.loaders import load_corpus
from lmleak.data.names import NAME_SHAPES, name_shape
from lmleak.data.synth.customersim import synthesize


def read(p):
    return [json.loads(line) for line in p.read_text().splitlines()]


def test_same_seed_gives_byte_identical_files(tmp_path):
    a = synthesize(tmp_path / "a", users=6, dialogs_per_user=3, seed=7, canaries=2, canary_repeats=4)
    b = synthesize(tmp_path / "b", users=6, dialogs_per_user=3, seed=7, canaries=2, canary_repeats=4)
    for key in a:
        assert a[key].read_bytes() == b[key].read_bytes()
    c = synthesize(tmp_path / "c", users=6, dialogs_per_user=3, seed=8)
    assert c["corpus"].read_bytes() != a["corpus"].read_bytes()


def test_every_secret_span_points_at_its_value(tmp_path):
    paths = synthesize(tmp_path, users=8, dialogs_per_user=3, seed=1, canaries=3, canary_repeats=5)
    texts = {d.doc_id: d.text for d in load_corpus(paths["corpus"])}
    secrets = read(paths["secrets"])
    assert {s["entity"] for s in secrets} >= {
        "PERSON",
        "PHONE",
        "EMAIL",
        "ADDRESS",
        "ORDER_ID",
        "TRACKING_ID",
        "CANARY",
    }
    for s in secrets:
        assert texts[s["doc_id"]][s["start"] : s["end"]] == s["value"]


def test_each_canary_appears_exactly_repeats_times_in_its_users_documents(tmp_path):
    paths = synthesize(tmp_path, users=5, dialogs_per_user=2, seed=3, canaries=3, canary_repeats=5)
    corpus = load_corpus(paths["corpus"])
    for c in read(paths["canaries"]):
        assert c["text"] == c["prefix"] + c["secret"] and len(c["secret"]) == 6
        assert sum(d.text.count(c["text"]) for d in corpus) == 5
        assert all(c["text"] not in d.text for d in corpus if d.user_id != c["user_id"])


def test_pii_is_fictional_and_subjects_cooccur_in_documents(tmp_path):
    paths = synthesize(tmp_path, users=10, dialogs_per_user=2, seed=2)
    corpus = load_corpus(paths["corpus"])
    for s in read(paths["subjects"]):
        assert re.fullmatch(r"\(\d{3}\) 555-01\d\d", s["phone"])
        assert s["email"].rsplit("@", 1)[1] in ("example.org", "example.com", "example.net")
        assert set(s["relations"]) and s["university"]
        docs = [d.text for d in corpus if d.user_id == s["user_id"]]
        assert any(all(s[k] in t for k in ("name", "phone", "email", "address")) for t in docs)


def test_synthesize_corpus_summarises_what_the_files_hold(tmp_path):
    from collections import Counter

    from lmleak.data.synth.customersim import synthesize_corpus
    from lmleak.jsonl import read_jsonl

    s = synthesize_corpus(tmp_path, users=5, dialogs_per_user=3, seed=1, canaries=2, canary_repeats=2)
    docs = read_jsonl(tmp_path / "corpus.jsonl")  # the oracle: recount from the written files
    secrets = Counter(r["entity"] for r in read_jsonl(tmp_path / "secrets.jsonl"))
    assert (s.documents, s.users, s.words) == (len(docs), 5, sum(len(d["text"].split()) for d in docs))
    assert s.secrets_per_entity == dict(sorted(secrets.items())) and list(s.secrets_per_entity) == sorted(
        secrets
    )
    assert (s.canaries, s.canary_repeats) == (2, 2)
    assert list(s.to_dict()) == ["documents", "users", "words", "canaries", "canary_repeats",
                                 "secrets_per_entity", "locales", "subjects_per_shape", "files",
                                 "canary_design"]  # fmt: skip
    assert s.canary_design == "random"
    shapes = Counter(r["name_shape"] for r in read_jsonl(tmp_path / "subjects.jsonl"))
    assert s.subjects_per_shape == {k: shapes.get(k, 0) for k in NAME_SHAPES} and sum(shapes.values()) == 5


def test_english_alone_writes_the_corpus_of_earlier_versions_byte_for_byte(tmp_path):
    # sha256 of the corpus.jsonl the English-only generator wrote before issue 28 (commit 7af8c58)
    p = synthesize(tmp_path, users=5, dialogs_per_user=2, seed=1, canaries=1, locales=("en_US",))
    assert hashlib.sha256(p["corpus"].read_bytes()).hexdigest() == (
        "bd0ce43b5085bf0bff85d4122481bf3b0d51e639e0975a4699d522828f2a0374"
    )


def test_users_come_in_every_name_shape_and_secrets_say_whose_shape(tmp_path):
    paths = synthesize(tmp_path, users=120, dialogs_per_user=3, seed=4)
    subjects = {s["user_id"]: s for s in read(paths["subjects"])}
    assert set(Counter(s["name_shape"] for s in subjects.values())) == set(NAME_SHAPES)
    emails: dict[str, set[str]] = {u: set() for u in subjects}
    for r in read(paths["secrets"]):
        s = subjects[r["user_id"]]
        if r["entity"] == "PERSON" and r["value"] in s["relations"].values():
            assert r["name_shape"] == name_shape(r["value"])  # a relative: their own shape
        else:
            assert r["name_shape"] == s["name_shape"]
        if r["entity"] == "EMAIL":
            emails[r["user_id"]].add(r["value"])
    assert all(set(s["emails"]) == emails[u] for u, s in subjects.items())
    assert any(len(s["emails"]) > 1 for s in subjects.values()) and any(
        s["variants"] for s in subjects.values()
    )
