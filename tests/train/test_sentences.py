"""Sentence splitting (paper 002 A.5 rules 2-3): whole sentences, secrets never cut."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.data.corpus import Corpus, Document
from lmleak.train.sentences import sentence_corpus, sentence_spans, split_sentences


@pytest.fixture(scope="module")
def synth_corpus(tmp_path_factory):
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.customersim import synthesize
    from lmleak.pii.evaluate import load_secrets

    paths = synthesize(tmp_path_factory.mktemp("synth"), users=30, dialogs_per_user=4, seed=3)
    corpus = load_corpus(paths["corpus"])
    return {"paths": paths, "corpus": corpus, "secrets": load_secrets(paths["secrets"], corpus)}


def test_abbreviations_emails_and_numbers_do_not_split():
    text = "Dr. Smith lives at 12 Main St. Apt. 4 in Springfield. Mail j.doe@example.org now! Ok? Yes."
    assert split_sentences(text) == [
        "Dr. Smith lives at 12 Main St. Apt. 4 in Springfield.",
        "Mail j.doe@example.org now!",
        "Ok?",
        "Yes.",
    ]


def test_no_secret_crosses_a_sentence_boundary(synth_corpus):
    spans = {d.doc_id: sentence_spans(d.text) for d in synth_corpus["corpus"]}
    for s in synth_corpus["secrets"]:
        assert any(a <= s.start and s.end <= b for a, b in spans[s.doc_id]), s


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(["Hi there.", "Mr. X said no!", "A b c", "\n", " ", "Go? ", "ORD-1. Yes"]),
        max_size=12,
    )
)
def test_spans_are_ordered_disjoint_trimmed_and_cover_all_text(parts):
    text = "".join(parts)
    spans = sentence_spans(text)
    for (_a, b), (c, _) in zip(spans, spans[1:], strict=False):
        assert b <= c
    covered = {i for a, b in spans for i in range(a, b)}
    assert all(text[i].isspace() for i in range(len(text)) if i not in covered)
    assert all(not text[a].isspace() and not text[b - 1].isspace() for a, b in spans)


def test_sentence_ids_and_rerun_pass_through():
    c = Corpus([Document("u1", "d1", "One. Two."), Document("u2", "d2", "Three.")])
    s = sentence_corpus(c)
    assert [(d.user_id, d.doc_id, d.text) for d in s] == [
        ("u1", "d1#s0", "One."),
        ("u1", "d1#s1", "Two."),
        ("u2", "d2#s0", "Three."),
    ]
    assert [d.doc_id for d in sentence_corpus(s)] == [d.doc_id for d in s]
