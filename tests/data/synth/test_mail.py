"""synth mail: a mailing-list archive with known PII (lmleak.data.synth.mail)."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict

import pytest

from lmleak.data.loaders import load_corpus
from lmleak.data.names import NAME_SHAPES, romanize, strip_accents
from lmleak.data.synth.mail import DIGEST_USER, synthesize
from lmleak.errors import ConfigError
from lmleak.probe.subjects import read_subjects


def rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def mail(tmp_path_factory):
    return synthesize(tmp_path_factory.mktemp("mail"), scale=0.3, seed=3, canaries=2, canary_repeats=4)


def test_same_seed_gives_byte_identical_files_and_another_seed_does_not(tmp_path):
    a = synthesize(tmp_path / "a", scale=0.05, seed=7)
    b = synthesize(tmp_path / "b", scale=0.05, seed=7)
    c = synthesize(tmp_path / "c", scale=0.05, seed=8)
    for key in ("corpus", "subjects", "secrets"):
        assert a[key].read_bytes() == b[key].read_bytes()
    assert a["corpus"].read_bytes() != c["corpus"].read_bytes()


def test_every_secret_span_points_at_its_value_and_names_whose_pii_it_is(mail):
    docs = {d["doc_id"]: d for d in rows(mail["corpus"])}
    subjects = {s["subject_id"]: s for s in rows(mail["subjects"])}
    secrets = rows(mail["secrets"])
    assert len(secrets) > 1000
    foreign = 0
    for s in secrets:
        assert docs[s["doc_id"]]["text"][s["start"] : s["end"]] == s["value"]
        assert docs[s["doc_id"]]["user_id"] == s["user_id"]
        if s["entity"] == "EMAIL":  # one of the addresses of the person it names
            assert s["value"] in subjects[s["subject_id"]]["emails"]
        foreign += s["subject_id"] != s["user_id"]
    # quoted replies and digests carry other people's PII
    assert foreign > 0.2 * len(secrets)


def test_pii_comes_in_the_formats_of_real_mail(mail):
    text = "\n".join(d["text"] for d in rows(mail["corpus"]))
    assert re.search(r'^From: "[^"]+" <[^>]+@example\.(org|com|net)>$', text, re.M)
    assert re.search(r"^From: [A-Z][a-z]+ [A-Z][\w'-]+ <", text, re.M)
    assert re.search(r"^On .+, .+ <.+> wrote:$", text, re.M)
    assert re.search(r"^> ", text, re.M) and re.search(r"^> > ", text, re.M)
    assert re.search(r"^-- $", text, re.M)  # signature separator
    assert re.search(r"^ -- .+ <.+>  \w{3}, ", text, re.M)  # changelog sign-off
    assert re.search(r"\(\S+@example\.(org|com|net)\)", text)


def test_pii_is_synthetic(mail):
    for s in rows(mail["secrets"]):
        if s["entity"] == "EMAIL":
            assert re.fullmatch(r"[^@\s]+@example\.(org|com|net)", s["value"])
        if s["entity"] == "PHONE":
            assert re.search(r"555\D?01\d\d$", s["value"])


def test_a_few_authors_write_most_of_it_and_lines_repeat(mail):
    docs = [d for d in rows(mail["corpus"]) if d["user_id"] != DIGEST_USER]
    per_author = Counter(d["user_id"] for d in docs)
    counts = sorted(per_author.values(), reverse=True)
    top = max(1, round(0.01 * len(counts)))
    assert sum(counts[:top]) / sum(counts) > 0.1  # uniform would give ~1 %
    assert counts[0] > 10 * counts[len(counts) // 2]
    lines = Counter(ln for d in rows(mail["corpus"]) for ln in d["text"].split("\n") if ln.strip())
    share = sum(c for c in lines.values() if c > 1) / sum(lines.values())
    assert 0.4 <= share <= 0.8


def test_long_documents_exist(mail):
    words = sorted(len(d["text"].split()) for d in rows(mail["corpus"]))
    assert words[-1] > 5000  # a digest: over 10k tokens of the small GPT's BPE
    assert words[len(words) // 2] < 1000


def test_size_grows_linearly_with_scale(tmp_path):
    def words(scale):
        return sum(
            len(d["text"].split()) for d in rows(synthesize(tmp_path / str(scale), scale=scale)["corpus"])
        )

    small, large = words(0.5), words(1.0)
    assert 1.7 < large / small < 2.3


def test_canaries_are_documents_of_their_own_owner(mail):
    docs = {d["doc_id"]: d for d in rows(mail["corpus"])}
    for c in rows(mail["canaries"]):
        assert len(c["doc_ids"]) == c["repeats"] == 4
        for doc_id in c["doc_ids"]:
            assert docs[doc_id]["text"] == c["text"] and docs[doc_id]["user_id"] == c["user_id"]


def test_the_files_load_with_the_project_readers(mail):
    corpus = load_corpus(mail["corpus"])
    assert len(corpus) == len(rows(mail["corpus"]))
    subjects = read_subjects(mail["subjects"])
    assert all(s["email"] for s in subjects)
    assert any(s["phone"] is None for s in subjects) and any(s["phone"] for s in subjects)


def test_bad_arguments_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="scale"):
        synthesize(tmp_path, scale=0)
    with pytest.raises(ConfigError, match="canaries"):
        synthesize(tmp_path, scale=0.05, canaries=999)


def test_synthesize_corpus_summarises_what_the_files_hold(tmp_path):
    from lmleak.data.synth.mail import TOKENS_PER_WORD, synthesize_corpus
    from lmleak.jsonl import read_jsonl

    s = synthesize_corpus(tmp_path, scale=0.01, seed=2, canaries=1, canary_repeats=2)
    docs = read_jsonl(tmp_path / "corpus.jsonl")  # the oracle: recount from the written files
    lines = Counter(ln for d in docs for ln in d["text"].split("\n") if ln.strip())
    words = sum(len(d["text"].split()) for d in docs)
    assert (s.documents, s.authors, s.words) == (len(docs), len({d["user_id"] for d in docs}), words)
    assert s.tokens_estimate == round(words * TOKENS_PER_WORD)
    assert s.duplicate_line_share == round(sum(c for c in lines.values() if c > 1) / sum(lines.values()), 4)
    assert s.longest_document_words == max(len(d["text"].split()) for d in docs)
    assert s.secrets_per_entity["CANARY"] == 2 and (s.canaries, s.canary_repeats) == (1, 2)
    assert s.files["corpus"] == str(tmp_path / "corpus.jsonl")
    assert list(s.to_dict())[:3] == ["documents", "authors", "words"] and s.to_dict()["files"] == s.files


def test_english_alone_writes_the_corpus_of_earlier_versions_byte_for_byte(tmp_path):
    # sha256 of the corpus.jsonl the English-only generator wrote before issue 28 (commit 7af8c58)
    p = synthesize(tmp_path, scale=0.02, seed=1, canaries=1, locales=("en_US",))
    assert hashlib.sha256(p["corpus"].read_bytes()).hexdigest() == (
        "e1c4f029f179c11846132d4606d5ac52da6411b6d13a63f570ba55f444573169"
    )
    subjects = rows(p["subjects"])
    assert all(s["emails"] == [s["email"]] and s["locale"] == "en_US" for s in subjects)


def test_every_name_shape_is_planted_and_recorded_as_the_corpus_writes_it(mail):
    subjects = rows(mail["subjects"])
    by_id = {s["subject_id"]: s for s in subjects}
    assert set(Counter(s["name_shape"] for s in subjects)) == set(NAME_SHAPES)
    assert {s["locale"] for s in subjects} >= {
        "de_DE",
        "fr_FR",
        "es_ES",
        "pl_PL",
        "tr_TR",
        "vi_VN",
        "ru_RU",
        "ja_JP",
    }
    emails: dict[str, Counter[str]] = defaultdict(Counter)
    names: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows(mail["secrets"]):
        if r["subject_id"] not in by_id:  # a canary's owner who wrote no message
            assert r["entity"] == "CANARY"
            continue
        assert r["name_shape"] == by_id[r["subject_id"]]["name_shape"]
        {"EMAIL": emails, "PERSON": names}.get(r["entity"], defaultdict(Counter))[r["subject_id"]][
            r["value"]
        ] += 1
    for sid, s in by_id.items():
        # every address written and only those, the most written first
        assert set(s["emails"]) == set(emails[sid]) and s["email"] == s["emails"][0]
        assert [emails[sid][e] for e in s["emails"]] == sorted(emails[sid].values(), reverse=True)
        display = f"{s['name']} ({s['nickname']})" if s["nickname"] else s["name"]
        for v in s["variants"]:  # a variant is written, and it is the name without accents / in Latin letters
            assert names[sid][v] > 0 and v != display
            if s["locale"] != "ja_JP":
                assert v.split(" (")[0] in (strip_accents(s["name"]), romanize(s["name"]))
        if s["nickname"]:
            assert s["name_shape"] == "nickname" and any(
                display in n or n.endswith(f"({s['nickname']})") for n in names[sid]
            )
    assert any(len(s["emails"]) == 3 for s in subjects) and any(s["variants"] for s in subjects)


def test_locales_are_checked(tmp_path):
    with pytest.raises(ConfigError, match="locale"):
        synthesize(tmp_path, scale=0.02, locales=("en_US", "xx_XX"))
