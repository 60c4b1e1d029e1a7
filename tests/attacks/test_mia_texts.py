"""Where a membership run's texts come from: two files (JSONL or plain text, bad lines located) or a
corpus split by the users a model held out, each side with its users; and every name that moved
here from lmleak.attacks.membership still imports from there."""

from __future__ import annotations

import json

import pytest

from lmleak.attacks import membership, mia_summary, mia_texts
from lmleak.attacks.mia_texts import members_from_holdout, membership_texts, read_texts, split_by_holdout
from lmleak.errors import DataFileError


def test_member_files_are_jsonl_or_plain_text_and_bad_lines_are_located(tmp_path):
    j = tmp_path / "m.jsonl"
    j.write_text(json.dumps({"text": "one"}) + "\n\n" + json.dumps({"text": "two"}) + "\n")
    assert read_texts(j) == ["one", "two"]
    t = tmp_path / "m.txt"
    t.write_text("first line\n\nsecond line\n")
    assert read_texts(t) == ["first line", "second line"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "ok"}) + "\n" + json.dumps({"body": "x"}) + "\n")
    with pytest.raises(DataFileError, match=r"bad.jsonl:2: field 'text'"):
        read_texts(bad)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    with pytest.raises(DataFileError, match=r"broken.jsonl:1"):
        read_texts(broken)
    with pytest.raises(DataFileError, match="not found"):
        read_texts(tmp_path / "missing.txt")


def test_membership_texts_read_two_files_or_split_the_corpus_by_the_held_out_users(tmp_path):
    from lmleak.data.holdout import Holdout, write_holdout
    from lmleak.errors import ConfigError

    (tmp_path / "m.txt").write_text("one member\n\nanother member\n")
    (tmp_path / "n.jsonl").write_text('{"body": "a non-member"}\n')
    got = membership_texts("fake", members=tmp_path / "m.txt", non_members=tmp_path / "n.jsonl", field="body")
    assert (got.members, got.non_members, got.source, got.groups) == (
        ["one member", "another member"],
        ["a non-member"],
        None,
        None,
    )
    corpus = tmp_path / "c.jsonl"
    rows = [("u1", "alpha beta"), ("u2", "gamma"), ("u1", "delta"), ("u3", "eps zeta")]
    corpus.write_text("".join(json.dumps({"user_id": u, "text": t}) + "\n" for u, t in rows))
    model = tmp_path / "model"
    model.mkdir()
    write_holdout(model, Holdout(users=("u2", "u3"), fraction=0.5))
    got = membership_texts(model, corpus=corpus)
    assert got.members == ["alpha beta", "delta"] and got.non_members == ["gamma", "eps zeta"]
    assert got.groups == (["u1", "u1"], ["u2", "u3"])
    assert got.source == (
        "non-members: 2 documents of the 2 users held out of training (holdout.json); "
        "members: 2 documents of the 1 user trained on"
    )  # the audit's words: both split the corpus with membership_sets (issue 34)
    with pytest.raises(ConfigError, match="no member / non-member texts") as e:
        membership_texts(tmp_path / "no-holdout", corpus=corpus)
    assert e.value.field == "--members"
    with pytest.raises(ConfigError):
        membership_texts(model, members=tmp_path / "m.txt")  # one file and no corpus


def test_members_from_holdout_is_the_corpus_split_without_the_users(tmp_path):
    from lmleak.data.corpus import Document
    from lmleak.data.holdout import Holdout, write_holdout
    from lmleak.errors import ConfigError

    docs = [Document("u1", "a", "alpha beta"), Document("u2", "b", "gamma"), Document("u3", "c", "eps")]
    model = tmp_path / "model"
    model.mkdir()
    with pytest.raises(ConfigError, match="no held-out users"):
        members_from_holdout(model, docs)
    write_holdout(model, Holdout(users=("u2",), fraction=0.3))
    mem, non, source = members_from_holdout(model, docs)
    assert (mem, non) == split_by_holdout(docs, ["u2"]) == (["alpha beta", "eps"], ["gamma"])
    assert source.startswith("non-members: 1 document of the 1 user held out")  # not "1 documents"


def test_every_name_that_moved_still_imports_from_membership():
    for mod, names in (
        (mia_texts, ("read_texts", "CANDIDATE_WORDS", "split_by_holdout", "split_users_by_holdout",
                     "members_from_holdout", "MembershipTexts", "membership_texts")),
        (mia_summary, ("MembershipResult", "headline_feature")),
    ):  # fmt: skip
        for name in names:
            assert getattr(membership, name) is getattr(mod, name), name


def test_two_files_that_name_each_texts_user_group_the_texts_by_person(tmp_path):
    """With member / non-member files the per-user MIA score of users.parquet was always empty: the
    files' user ids were never read. Now both files naming every line's user_id give the groups."""
    from lmleak.attacks.mia_texts import read_texts_and_users

    (tmp_path / "m.jsonl").write_text('{"text": "a", "user_id": "u1"}\n{"text": "b", "user_id": "u1"}\n')
    (tmp_path / "n.jsonl").write_text('{"text": "c", "user_id": 9}\n')
    got = membership_texts("fake", members=tmp_path / "m.jsonl", non_members=tmp_path / "n.jsonl")
    assert (got.members, got.non_members, got.groups) == (["a", "b"], ["c"], (["u1", "u1"], ["9"]))
    (tmp_path / "n.txt").write_text("c\n")  # one side without ids: texts are grouped by shared PII
    assert (
        membership_texts("fake", members=tmp_path / "m.jsonl", non_members=tmp_path / "n.txt").groups is None
    )
    (tmp_path / "part.jsonl").write_text(
        '{"text": "a", "user_id": "u1"}\n{"text": "b"}\n{"text": "c", "user_id": ""}\n'
    )
    with pytest.raises(DataFileError, match="user_id on 1 of 3 lines") as e:
        read_texts_and_users(tmp_path / "part.jsonl")
    assert e.value.line == 2 and e.value.field == "user_id"


@pytest.mark.parametrize("bad", ["7.0", "true", '["u1"]', '{"id": 1}'])
def test_a_user_id_that_is_no_string_or_integer_is_refused_naming_the_line(tmp_path, bad):
    """str() made 7.0 and 7 two people (two groups of the cluster bootstrap) and a list a "person"."""
    from lmleak.attacks.mia_texts import read_texts_and_users

    p = tmp_path / "n.jsonl"
    p.write_text(f'{{"text": "a", "user_id": 7}}\n{{"text": "b", "user_id": {bad}}}\n')
    with pytest.raises(DataFileError, match="expected a string") as e:
        read_texts_and_users(p)
    assert (e.value.line, e.value.field) == (2, "user_id")


def test_an_audit_over_two_files_with_user_ids_scores_each_person(tmp_path):
    """The scores table carries each text's user when the files name them (users.parquet averages them)."""
    import pandas as pd

    from lmleak.attacks.membership import MembershipSettings, MembershipTexts, run_membership
    from lmleak.attacks.mia_texts import read_texts_and_users
    from lmleak.models.fake import FakeLM

    mem_rows = [(f"m{i % 4}", f"member text number {i} about topic {i % 3}") for i in range(12)]
    non_rows = [(f"n{i % 4}", f"another text number {i} on subject {i % 5}") for i in range(12)]
    for name, rows in (("m.jsonl", mem_rows), ("n.jsonl", non_rows)):
        (tmp_path / name).write_text("".join(json.dumps({"user_id": u, "text": t}) + "\n" for u, t in rows))
    mem, mu = read_texts_and_users(tmp_path / "m.jsonl")
    non, nu = read_texts_and_users(tmp_path / "n.jsonl")
    assert mu is not None and nu is not None
    lm = FakeLM.from_texts([t for _, t in mem_rows], order=3)
    texts = MembershipTexts(mem, non, None, (mu, nu))
    run_membership(lm, texts, tmp_path / "run", MembershipSettings(n_boot=50, blind=False))
    scores = pd.read_parquet(tmp_path / "run" / "mia_scores.parquet")
    owner = dict((t, u) for u, t in mem_rows + non_rows)
    assert list(scores["user_id"]) == [owner[t] for t in scores["text"]]


def _first_words_by_hand(text: str, n: int) -> str:
    """The slow obvious oracle: grow a prefix one character at a time and keep the longest one that
    ends a word and holds at most ``n`` words; the whole text when it has at most ``n`` words."""
    if len(text.split()) <= n:
        return text
    best = ""
    for end in range(1, len(text) + 1):
        prefix = text[:end]
        ends_a_word = not prefix[-1].isspace() and (end == len(text) or text[end].isspace())
        if ends_a_word and len(prefix.split()) <= n:
            best = prefix
    return best


def test_a_candidate_text_is_the_documents_opening_as_written_not_its_words_joined_by_spaces():
    """Issue found by an independent oracle on a mail audit: candidates were ``" ".join(words[:200])``,
    so every newline became a space and the attack scored texts the model never saw (perplexity AUC
    0.757 collapsed vs 0.901 verbatim on the same 62 texts of a small GPT). Fast path against the
    hand oracle on random texts with newlines, tabs and runs of spaces, then the corpus split."""
    import random

    from lmleak.attacks.mia_texts import first_words
    from lmleak.data.corpus import Document

    rng = random.Random(0)
    for _ in range(300):
        text = "".join(
            rng.choice(["ab", "c", " ", "  ", "\n", "\n\n", "\t", "é", "松"])
            for _ in range(rng.randint(0, 40))
        )
        n = rng.randint(1, 8)
        got = first_words(text, n)
        assert got == _first_words_by_hand(text, n), (text, n)
        assert text.startswith(got) and len(got.split()) == min(n, len(text.split()))
    mail = "From: Ann <ann@example.org>\nTo: list@example.org\n\nHi all,\n  the build fails.\n"
    docs = [Document("u1", "d1", mail), Document("u2", "d2", "short\nnote\n")]
    mem, non = split_by_holdout(docs, ["u2"], max_words=7)
    assert mem == ["From: Ann <ann@example.org>\nTo: list@example.org\n\nHi all,"]
    assert non == ["short\nnote\n"]  # fewer words than the cut: the whole document, verbatim
    assert all(d.text.startswith(t) for d, t in zip(docs, mem + non, strict=True))


def test_a_person_in_both_member_files_is_refused_naming_them(tmp_path):
    """Found by a hostile-user pass: the same user_id in --members and --non-members was accepted."""
    (tmp_path / "m.jsonl").write_text('{"text": "a", "user_id": "u1"}\n{"text": "b", "user_id": "u2"}\n')
    (tmp_path / "n.jsonl").write_text('{"text": "c", "user_id": "u2"}\n')
    with pytest.raises(DataFileError, match=r"1 user in both m.jsonl and this file \(u2\)") as e:
        membership_texts("fake", members=tmp_path / "m.jsonl", non_members=tmp_path / "n.jsonl")
    assert e.value.field == "user_id" and str(tmp_path / "n.jsonl") in str(e.value)
