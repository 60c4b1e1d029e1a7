"""Presidio runs offline (the suite blocks sockets; we check the guard is on) and maps entities."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("presidio_analyzer")


def test_presidio_detects_offline_with_sockets_blocked():
    with pytest.raises(RuntimeError):  # the suite's network guard is active in this process
        socket.create_connection(("192.0.2.55", 443), timeout=1)
    from lmleak.pii.presidio import PresidioDetector

    d = PresidioDetector()
    text = (
        "Customer: Hi, this is Jane Doe. Reach me at jane.doe7@example.org or (201) 555-0142 in Springfield."
    )
    got = {(s.entity, text[s.start : s.end]) for s in d.detect(text)}
    assert ("PERSON", "Jane Doe") in got
    assert ("EMAIL", "jane.doe7@example.org") in got
    assert ("PHONE", "(201) 555-0142") in got
    # batch path (spaCy nlp.pipe) gives the same spans as one-at-a-time, and caches
    texts = [text, "Agent: I will call you tomorrow.", text]
    assert d.detect_many(texts) == [d.detect(t) for t in texts]
    assert not any(s.entity == "DATE" for s in d.detect("Agent: I will call you tomorrow."))


@pytest.mark.slow
def test_balanced_policy_recall_on_synthetic_corpus(synth_corpus):
    from lmleak.pii.evaluate import evaluate_policy
    from lmleak.pii.policies import get_policy

    table = evaluate_policy(synth_corpus["corpus"], synth_corpus["secrets"], get_policy("balanced"))
    assert table["ALL"]["recall"] > 0.97
    assert table["PERSON"]["recall"] > 0.95
    assert table["ALL"]["precision"] > 0.9
