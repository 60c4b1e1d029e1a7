"""Named policies, π_c, composition and the degraded policy of the γ sweep."""

from __future__ import annotations

import pytest

from lmleak.errors import ConfigError
from lmleak.pii.compose import UnionDetector
from lmleak.pii.evaluate import evaluate_policy
from lmleak.pii.policies import ConservativeDetector, DegradedPolicy, get_policy
from lmleak.pii.regex import DIGIT_PATTERNS, RegexDetector
from lmleak.pii.spans import PiiSpan, resolve_overlaps


def test_unknown_policy_is_a_config_error_with_hint():
    with pytest.raises(ConfigError, match="Did you mean 'balanced'"):
        get_policy("balancd")


def test_digits_policy_marks_every_digit_run():
    text = "In 1999, 3 of 12 people."
    assert [text[s.start : s.end] for s in get_policy("digits").detect(text)] == ["1999", "3", "12"]


def test_conservative_skips_sentence_initial_words_and_speaker_labels():
    d = ConservativeDetector()
    text = "Customer: Hello there. My friend Alice lives in Paris. I am 42."
    assert [text[s.start : s.end] for s in d.detect(text)] == ["Alice", "Paris", "42"]
    assert d.detect("<MASK> was here.") == []


def test_conservative_flags_every_sentence_with_a_secret(synth_corpus):
    # π_c's job: catch at sentence level what π misses (Algorithm 1 line 3)
    from lmleak.train.sentences import sentence_spans

    table = evaluate_policy(
        synth_corpus["corpus"], synth_corpus["secrets"], get_policy("conservative"), splitter=sentence_spans
    )
    assert table["ALL"]["sentence_recall"] == 1.0


def test_union_keeps_longest_of_nested_spans():
    u = UnionDetector([RegexDetector(), RegexDetector(DIGIT_PATTERNS)])
    text = "call (201) 555-0142"
    assert [(s.entity, text[s.start : s.end]) for s in u.detect(text)] == [("PHONE", "(201) 555-0142")]
    assert u.detect_many([text, "x 7"]) == [u.detect(text), u.detect("x 7")]


def test_resolve_overlaps_against_bruteforce():
    import random

    rng = random.Random(0)
    for _ in range(200):
        spans = []
        for _ in range(rng.randint(0, 6)):
            a = rng.randint(0, 20)
            spans.append(PiiSpan(a, a + rng.randint(1, 8), rng.choice("AB")))
        kept = resolve_overlaps(spans)
        covered = {i for s in spans for i in range(s.start, s.end)}
        assert covered == {i for s in kept for i in range(s.start, s.end)}  # nothing lost
        for s in kept:  # no kept span is inside another kept span
            assert not any(k is not s and k.start <= s.start and s.end <= k.end and k != s for k in kept)


@pytest.mark.parametrize("target", [0.2, 0.5, 0.8])
def test_degraded_policy_reaches_target_recall(synth_corpus, target):
    base = get_policy("regex")
    base_recall = evaluate_policy(synth_corpus["corpus"], synth_corpus["secrets"], base)["ALL"]["recall"]
    degraded = get_policy("regex", recall=target, seed=1, base_recall=base_recall)
    got = evaluate_policy(synth_corpus["corpus"], synth_corpus["secrets"], degraded)["ALL"]["recall"]
    # values repeat within a user, so the effective sample is the ~distinct values (~1000)
    assert abs(got - target) < 0.08, (got, target)


def test_degraded_policy_is_deterministic_and_split_invariant():
    p = DegradedPolicy(RegexDetector(DIGIT_PATTERNS), recall=0.5, seed=7)
    doc = "ids 1001 and 2002. Also 3003 and 4004 and 5005."
    kept_doc = [doc[s.start : s.end] for s in p.detect(doc)]
    kept_sent = [v for sent in doc.split(". ") for v in (sent[s.start : s.end] for s in p.detect(sent))]
    assert kept_doc == kept_sent == [doc[s.start : s.end] for s in p.detect(doc)]
    assert DegradedPolicy(RegexDetector(DIGIT_PATTERNS), 1.0).detect(doc) == RegexDetector(
        DIGIT_PATTERNS
    ).detect(doc)
    assert DegradedPolicy(RegexDetector(DIGIT_PATTERNS), 0.0).detect(doc) == []


def test_degraded_policy_rejects_bad_targets():
    with pytest.raises(ConfigError):
        DegradedPolicy(RegexDetector(), 1.5)
    with pytest.raises(ConfigError, match="degraded, not improved"):
        DegradedPolicy(RegexDetector(), 0.9, base_recall=0.8)
