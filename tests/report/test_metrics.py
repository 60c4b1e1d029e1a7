"""The §5 leakage metrics (paper 001) on small feature tables counted by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lmleak.report.metrics import (
    curated_unique_sequences,
    exp_if_finite,
    log_leakage_epsilon,
    metrics_for_k,
    p_filtered,
    pii_counts,
)


def _rows():
    # five sequences; rows 0, 1, 3 are unique to one user of D
    return pd.DataFrame(
        {
            "users_in_d": [1, 1, 2, 1, 3],
            "users_in_s": [1, 2, 7, 1, 9],
            "count_in_s": [1, 3, 7, 1, 9],
            "perplexity_ratio": [2.0, 0.5, 40.0, 8.0, 1.0],
            "length_tokens": [6, 3, 6, 9, 2],
            "pii_types": [["EMAIL"], ["PHONE"], ["EMAIL"], [], ["PHONE"]],
            "user_ids": [["u1"], ["u2"], ["u1", "u3"], ["u1"], ["u1", "u2", "u3"]],
        }
    )


def test_metrics_for_k_equal_a_count_by_hand():
    m = metrics_for_k(_rows(), t=1.0, p=5, has_public=True, min_tokens=5)
    assert m["num_sequences"] == 5 and m["num_occurrences"] == 21
    assert m["unique_sequences"] == 3
    assert m["curated_unique_sequences"] == 2  # ratios 2.0 and 8.0 reach t = 1; 0.5 does not
    assert m["log_leakage_epsilon"] == pytest.approx(math.log(8.0))  # 40.0 is not unique
    assert m["leakage_epsilon"] == pytest.approx(8.0)
    assert m["log_ratio_p50"] == pytest.approx(math.log(2.0))
    assert m["pii_unique_sequences"] == {"EMAIL": 1}  # the PHONE row is 3 tokens: short
    assert m["pii_unique_short_sequences"] == {"PHONE": 1}
    assert m["pii_unique_sequences_total"] == 1
    assert m["p_filtered_sequences"] == 3  # users in S below 5
    assert m["unique_max_length_tokens"] == 9
    assert m["unique_users"] == 2


def test_no_pii_policy_makes_the_pii_count_unknown_not_zero():
    rows = _rows().assign(pii_types=[None] * 5)
    m = metrics_for_k(rows, t=1.0, p=None, min_tokens=5)
    assert m["pii_unique_sequences"] is None and m["pii_unique_sequences_total"] is None
    assert m["p_filtered_sequences"] == 5


def test_without_a_public_model_the_ratio_metrics_are_unknown_and_with_one_zero_unique_is_zero():
    rows = _rows().assign(perplexity_ratio=[float("nan")] * 5)
    assert metrics_for_k(rows, t=1.0, p=5)["curated_unique_sequences"] is None
    assert metrics_for_k(rows, t=1.0, p=5)["log_leakage_epsilon"] is None
    none_unique = _rows().assign(users_in_d=[2, 2, 2, 2, 2])
    assert metrics_for_k(none_unique, t=1.0, p=5, has_public=True)["curated_unique_sequences"] == 0


def test_epsilon_in_log_space_equals_the_ratio_version_and_keeps_infinity():
    rng = np.random.default_rng(1)
    users = rng.integers(1, 4, size=50)
    ratios = rng.uniform(0.1, 20.0, size=50)
    slow = max(r for u, r in zip(users, ratios, strict=True) if u == 1)
    assert exp_if_finite(log_leakage_epsilon(users, np.log(ratios))) == pytest.approx(slow)
    assert log_leakage_epsilon([1, 1], [0.0, math.inf]) == math.inf
    assert exp_if_finite(math.inf) is None


def test_counts_against_loops():
    rng = np.random.default_rng(2)
    users = rng.integers(1, 4, size=40)
    ratios = rng.uniform(0.0, 3.0, size=40)
    assert curated_unique_sequences(users, ratios, 1.5) == sum(
        1 for u, r in zip(users, ratios, strict=True) if u == 1 and r >= 1.5
    )
    assert p_filtered(users, 2) == sum(1 for u in users if u < 2)
    types = [["EMAIL", "PHONE"] if i % 3 == 0 else ["EMAIL"] for i in range(40)]
    lengths = rng.integers(1, 10, size=40)
    head, short = pii_counts(users, types, lengths, 5)
    want_head = sum(1 for u, n in zip(users, lengths, strict=True) if u == 1 and n >= 5)
    assert head.get("EMAIL", 0) == want_head
    assert sum(short.values()) + sum(head.values()) == sum(
        len(t) for u, t in zip(users, types, strict=True) if u == 1
    )


def test_people_affected_are_the_distinct_owners_of_leaked_pii_counted_by_hand():
    import pandas as pd

    from lmleak.report.metrics import metrics_for_k, pii_people

    seqs = pd.DataFrame(
        {
            "users_in_d": [1, 1, 1, 1, 2, 1],
            "users_in_s": [1, 1, 1, 1, 2, 1],
            "count_in_s": [1, 1, 1, 1, 2, 1],
            "user_ids": [["ann"], ["ann"], ["bob"], ["cy"], ["ann", "dee"], ["eve"]],
            "pii_types": [["EMAIL"], ["PHONE", "EMAIL"], ["EMAIL"], ["PHONE"], ["EMAIL"], []],
            "length_tokens": [8, 9, 12, 3, 9, 20],
            "perplexity_ratio": [float("nan")] * 6,
        }
    )
    # by hand: unique (users_in_d = 1), with PII, >= 5 tokens: rows 0, 1, 2 -> ann, ann, bob.
    # cy's PHONE is 3 tokens (short), dee shares her sequence with ann (not unique), eve's has no PII
    assert pii_people(seqs["users_in_d"], seqs["user_ids"], seqs["pii_types"], seqs["length_tokens"], 5) == (
        2,
        {"EMAIL": 2, "PHONE": 1},
    )
    m = metrics_for_k(seqs, t=1.0, p=None, min_tokens=5)
    assert m["pii_users"] == 2 and m["pii_users_by_type"] == {"EMAIL": 2, "PHONE": 1}
    assert m["pii_unique_sequences_total"] == 3  # three sequences, two people
    no_policy = seqs.assign(pii_types=[None] * 6)
    assert metrics_for_k(no_policy, t=1.0, p=None, min_tokens=5)["pii_users"] is None  # unknown, not 0
