"""lmleak.audit.nonmembers: members and non-members from people the model never saw, the refusals,
and the line that runs membership inference for a model with no held-out users."""

from __future__ import annotations

import shlex

import pytest

from lmleak.attacks.membership import CANDIDATE_WORDS, split_users_by_holdout
from lmleak.audit.config import parse_config
from lmleak.audit.nonmembers import membership_sets, mia_fix, quick_command
from lmleak.data.corpus import Document
from lmleak.errors import ConfigError

DOCS = [
    Document("u1", "a", "one two"),
    Document("u2", "b", "three"),
    Document("u1", "c", " ".join(f"w{i}" for i in range(CANDIDATE_WORDS + 50))),
    Document("u3", "d", "four five"),
]


def test_held_out_users_documents_are_the_non_members_and_the_rest_the_members():
    s = membership_sets(DOCS, ["u2", "u3"])
    assert (s.non_members, s.non_member_users) == (["three", "four five"], ["u2", "u3"])
    assert s.member_users == ["u1", "u1"] and s.members[0] == "one two"
    assert s.members[1].split() == [f"w{i}" for i in range(CANDIDATE_WORDS)]  # cut as a candidate text
    # the same split as `lmleak mia --corpus` makes (attacks.membership), every document on one side
    assert (s.members, s.non_members, s.member_users, s.non_member_users) == split_users_by_holdout(
        DOCS, ["u2", "u3"]
    )
    assert (
        "2 documents of the 2 users held out" in s.source
        and "2 documents of the 1 user trained on" in s.source
    )


def test_a_corpus_of_people_never_seen_gives_the_non_members_beside_every_training_user():
    strangers = [Document("p1", "x", "hello there"), Document("p2", "y", "good day")]
    s = membership_sets(DOCS, ["u2"], strangers)
    assert s.non_members == ["hello there", "good day"] and s.non_member_users == ["p1", "p2"]
    # held-out users are neither side: not trained on, and not the people named as non-members
    assert s.member_users == ["u1", "u1", "u3"]
    # a held-out user of the model may be among the never-seen people: the model never saw them
    assert membership_sets(DOCS, ["u2"], [Document("u2", "z", "again")]).non_member_users == ["u2"]


@pytest.mark.parametrize(
    ("held", "never_seen", "match"),
    [
        (
            [],
            [Document("u3", "z", "x")],
            "1 person of the non-members file is a user the model was trained on",
        ),
        (["u9"], None, r"none of the 1 user the model held out .* Fix: .*holdout.json records train.jsonl"),
        (["u1", "u2", "u3"], None, "every user of the corpus is held out"),
    ],
)
def test_people_who_are_not_never_seen_or_a_corpus_without_them_are_refused(held, never_seen, match):
    with pytest.raises(ConfigError, match=match):
        membership_sets(DOCS, held, never_seen, trained_on="train.jsonl")


def test_the_line_that_runs_mia_is_the_same_audit_with_people_never_seen():
    cfg = parse_config(
        {
            "out": "run dir",
            "corpus": {"path": "c.jsonl"},
            "models": [{"name": "m", "path": "m"}],
            "public_model": "smollm2-135m",
            "redact": True,
            "analyses": {"mia": {}, "exposure": {"canaries": "can.jsonl"}},
        },
        base_dir="/data",
    )
    fix = mia_fix(cfg, "/data/m")
    line = fix.split("`")[1]
    assert shlex.split(line) == [
        "lmleak", "audit", "--model", "/data/m", "--corpus", "/data/c.jsonl", "--out", "/data/run dir",
        "--public-model", "smollm2-135m", "--canaries", "/data/can.jsonl", "--holdout", "PEOPLE.jsonl", "--redact",
    ]  # fmt: skip
    assert "analyses.mia.non_members: PEOPLE.jsonl" in fix and "--holdout-users" in fix
    assert quick_command("m", "c") == "lmleak audit --model m --corpus c"


def test_the_audits_candidates_keep_the_documents_line_breaks():
    """The audit's mia stage cuts with cut_text: a mail's header lines stay lines (they were joined
    by spaces, so the attack scored texts the model never saw; tests/audit/test_audit_oracle.py)."""
    mail = Document("u1", "m", "From: Ann <ann@example.org>\nTo: list@example.org\n\nHi all,\n")
    s = membership_sets([mail, Document("u2", "n", "Re: hi\n> quoted\nthanks")], ["u2"])
    assert s.members == [mail.text] and s.non_members == ["Re: hi\n> quoted\nthanks"]
