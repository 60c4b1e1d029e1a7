"""lmleak.serve.scoring: the one-pass scoring checked against the protocol's slow path, and its stop hook."""

from __future__ import annotations

import numpy as np
import pytest

from lmleak.serve.scoring import Scoring
from tests.serve.tiny import TEXTS, ProtocolOnly, row


def test_one_pass_scoring_equals_the_protocol_path(model):
    """The fast path (one forward pass per batch) against token_stats + top_k, position by position."""
    rows = [row(model, t) for t in TEXTS]
    fast, slow = Scoring(model), Scoring(ProtocolOnly(model))
    assert fast.fast and not slow.fast
    for a, b in zip(fast.rows(rows, 3), slow.rows(rows, 3), strict=True):
        np.testing.assert_array_equal(a["rank"], b["rank"])
        np.testing.assert_array_equal(a["top_ids"], b["top_ids"])
        np.testing.assert_array_equal(a["next_ids"][:3], b["next_ids"][:3])
        for key in ("logprob", "top_lps"):
            np.testing.assert_allclose(a[key], b[key], atol=1e-4)


@pytest.mark.parametrize("protocol_only", [False, True])
def test_the_check_runs_before_each_batch_and_can_stop_the_work(model, protocol_only):
    m = ProtocolOnly(model) if protocol_only else model
    rows = [row(model, t) for t in TEXTS]
    calls = []
    Scoring(m).rows(rows, 1, lambda: calls.append(1))
    assert len(calls) >= 1

    class Stop(Exception):
        pass

    def stop():
        raise Stop

    with pytest.raises(Stop):
        Scoring(m).rows(rows, 1, stop)
