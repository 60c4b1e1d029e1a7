"""Dedup (paper 002 section 3.2): repeats become <MASK>, first occurrences stay; Bloom is one-sided."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.data.corpus import Corpus, Document
from lmleak.errors import ConfigError
from lmleak.pii.spans import MASK
from lmleak.train.dedup import DedupStats, dedup_corpus, dedup_texts

sentences = st.lists(st.sampled_from(["a.", "b.", "c c.", "d!", MASK, "é ü.", ""]), max_size=40)


def oracle(texts):
    seen, out = set(), []
    for t in texts:
        out.append(MASK if t in seen else t)
        seen.add(t)
    return out


@settings(max_examples=200, deadline=None)
@given(sentences)
def test_exact_equals_oracle_keeps_first_occurrences_and_is_idempotent(texts):
    out = list(dedup_texts(texts))
    assert out == oracle(texts)
    first = {}
    for i, t in enumerate(texts):
        first.setdefault(t, i)
    assert all(out[i] == t for t, i in first.items())  # every first occurrence kept verbatim
    assert list(dedup_texts(out)) == out  # idempotent


@settings(max_examples=100, deadline=None)
@given(sentences)
def test_bloom_never_misses_a_duplicate(texts):
    exact = list(dedup_texts(texts))
    for savable in (False, True):
        bloom = list(dedup_texts(texts, mode="bloom", fp_rate=1e-9, savable=savable))
        assert all(b == MASK for e, b in zip(exact, bloom, strict=True) if e == MASK)
        assert bloom == exact  # at 1e-9 over <= 40 items, a false positive would be a bug


def test_bloom_false_positive_rate_is_reported_and_bounded():
    texts = [f"sentence {i}." for i in range(20_000)]
    st_ = DedupStats("bloom")
    out = list(dedup_texts(texts, mode="bloom", expected_items=20_000, fp_rate=0.01, stats=st_))
    measured = sum(t == MASK for t in out) / len(texts)  # all distinct: every mask is a false positive
    assert st_.bloom["configured_fp_rate"] == 0.01
    assert 0.005 < st_.bloom["estimated_fp_rate"] < 0.02  # filled to capacity
    assert measured < 0.02  # accumulates from 0 up to ~1 % over the pass


def test_dedup_corpus_is_cross_user_and_keeps_ids():
    c = Corpus([Document("u1", "a#s0", "Hi."), Document("u2", "b#s0", "Hi."), Document("u2", "b#s1", "Yo.")])
    out, st_ = dedup_corpus(c)
    assert [(d.user_id, d.doc_id, d.text) for d in out] == [
        ("u1", "a#s0", "Hi."),
        ("u2", "b#s0", MASK),
        ("u2", "b#s1", "Yo."),
    ]
    assert st_.to_dict()["masked"] == 1


def test_unknown_mode():
    with pytest.raises(ConfigError, match="bloom"):
        list(dedup_texts(["a"], mode="blom"))
