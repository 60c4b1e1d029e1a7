"""crt_split (paper 002 Algorithm 1 lines 1-4 and A.5 rules 2, 4, 5)."""

from __future__ import annotations

import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.pii.policies import get_policy
from lmleak.pii.spans import MASK
from lmleak.train.split import crt_split


@pytest.mark.parametrize("dedup", ["exact", "bloom", None])
def test_every_masked_sentence_is_private_and_split_is_a_partition(synth_corpus, dedup):
    corpus = synth_corpus["corpus"]
    r = crt_split(corpus, "regex", dedup=dedup)
    assert all(MASK not in d.text for d in r.public)
    assert r.redacted is not None
    ids = [d.doc_id for d in r.redacted]
    assert sorted(ids) == sorted([d.doc_id for d in r.public] + [d.doc_id for d in r.private])
    masked = {d.doc_id for d in r.redacted if MASK in d.text}
    assert masked <= {d.doc_id for d in r.private}
    assert r.stats["public"] + r.stats["private"] == r.stats["sentences"] == len(ids)
    # user ids and order kept
    users = {d.doc_id.split("#")[0]: d.user_id for d in corpus}
    assert all(users[d.doc_id.split("#")[0]] == d.user_id for d in r.redacted)
    if dedup is not None:
        assert r.stats["dedup"]["masked"] > 0


@pytest.fixture(scope="module")
def synth_corpus(tmp_path_factory):
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.customersim import synthesize
    from lmleak.pii.evaluate import load_secrets

    paths = synthesize(tmp_path_factory.mktemp("synth"), users=30, dialogs_per_user=4, seed=3)
    corpus = load_corpus(paths["corpus"])
    return {"paths": paths, "corpus": corpus, "secrets": load_secrets(paths["secrets"], corpus)}


def test_no_secret_value_reaches_the_public_set(synth_corpus):
    r = crt_split(synth_corpus["corpus"], "regex", conservative="conservative")
    public = "\n".join(d.text for d in r.public)
    for s in synth_corpus["secrets"]:
        assert s.value not in public, s
    assert r.stats["conservative_policy"] == "conservative"


def test_private_sentences_are_kept_redacted(synth_corpus):
    r = crt_split(synth_corpus["corpus"], "regex")
    private = "\n".join(d.text for d in r.private)
    for s in synth_corpus["secrets"]:
        if s.entity in ("PHONE", "EMAIL", "ORDER_ID", "TRACKING_ID"):
            assert s.value not in private


def test_dedup_runs_before_redaction_and_uses_the_same_mask():
    # rule 4: both steps write the same token; rule 2: dedup sees the unredacted sentence
    c = Corpus(
        [
            Document("u1", "a", "Call 201-555-0142. Bye."),
            Document("u2", "b", "Call 201-555-0142. Bye."),
            Document("u3", "c", "Call 201-555-0199."),
        ]
    )
    r = crt_split(c, get_policy("regex"))
    assert [(d.doc_id, d.text) for d in r.redacted] == [
        ("a#s0", f"Call {MASK}."),
        ("a#s1", "Bye."),
        ("b#s0", MASK),
        ("b#s1", MASK),
        ("c#s0", f"Call {MASK}."),
    ]
    assert [d.doc_id for d in r.public] == ["a#s1"]
    assert r.stats["dedup"]["masked"] == 2 and r.stats["redaction"]["removed"] == {"PHONE": 2}


def test_conservative_policy_sends_capitalised_sentences_private():
    c = Corpus([Document("u", "a", "We met Alice. It was fine.")])
    r = crt_split(c, "regex", conservative="conservative")
    assert [d.text for d in r.private] == ["We met Alice."]
    assert [d.text for d in r.public] == ["It was fine."]
    assert r.stats["private_reasons"] == {"conservative": 1}


def test_policy_is_required():
    from lmleak.errors import ConfigError

    with pytest.raises(ConfigError):
        crt_split(Corpus([Document("u", "a", "x")]), None)  # type: ignore[arg-type]
