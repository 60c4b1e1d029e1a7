"""The leak counts' 95 % intervals (paper 001 §5's counts, issue 26 item 4 and issue 32 item 4).

Each count of the leakage report — unique sequences, curated unique sequences, leaked PII — is a sum
over users of the user's own leaks (a unique sequence has exactly one user in D), so its interval
resamples users (:func:`~lmleak.intervals.count_interval`); a count of 0, or of few leaking users,
is bounded by what the users that could leak could hold (their *capacity*). Split out of
:mod:`lmleak.report.leakage`, which calls :func:`count_intervals` once per k.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lmleak.intervals import count_interval
from lmleak.report.metrics import headline_pii

#: Bootstrap replicates of the leak counts' intervals.
N_BOOT = 1000
#: What the report's ``intervals`` record says about its ``*_ci`` keys.
COUNT_INTERVAL_METHOD = (
    "percentile bootstrap over the corpus's users (every user, with or without a leak) of the "
    "leak count: the count a corpus of as many users drawn like these would show"
)


def count_intervals(
    seqs: Any,
    metrics: dict[str, Any],
    users: Sequence[str],
    *,
    t: float,
    min_tokens: int,
    n_boot: int = N_BOOT,
    doc_tokens: Sequence[int] | None = None,
) -> dict[str, Any]:
    """``unique_sequences_ci``, ``curated_unique_sequences_ci`` and ``pii_unique_sequences_total_ci``
    for one k's rows: each count is a sum over users of the user's own leaks (a unique sequence has
    exactly one user in D), and the users are resampled (:func:`~lmleak.intervals.bootstrap_sum_interval`),
    so a prolific user's many leaks move together. ``users``: every user of the corpus (the ledger's
    user of each document; repeats are collapsed). A count that is None (no public model, no PII
    policy) gets a None interval; so does every count of rows without ``user_ids``. A count of 0 gets
    the leaks the U x CP upper(0 of U) users with the most capacity could hold, a count over few
    leakers leakers x leaks per leaker (:func:`~lmleak.intervals.count_interval`), each named with
    its rule in ``intervals_at_boundary``. A user's capacity bounds its leaks: its unique sequences
    (this k) for the curated count, those of ``min_tokens``+ tokens for PII, ceil(n/2) runs per
    document of n tokens for all (``doc_tokens``, parallel to ``users``; without it, one each).

    Example:
        >>> import pandas as pd
        >>> rows = pd.DataFrame({"users_in_d": [1, 1, 2], "user_ids": [["a"], ["a"], ["a", "b"]],
        ...     "perplexity_ratio": [2.0, 0.5, 9.0], "pii_types": [["EMAIL"], [], ["EMAIL"]],
        ...     "length_tokens": [9, 9, 9]})
        >>> m = {"unique_sequences": 2, "curated_unique_sequences": 1, "pii_unique_sequences_total": 1}
        >>> out = count_intervals(rows, m, ["a", "b", "c"], t=1.0, min_tokens=5)
        >>> out["unique_sequences_ci"][0] >= 0.0, out["pii_unique_sequences_total_ci"][1] <= 3.0
        (True, True)
    """
    import numpy as np

    keys = ("unique_sequences", "curated_unique_sequences", "pii_unique_sequences_total")
    out: dict[str, Any] = {**{f"{k}_ci": None for k in keys}, "intervals_at_boundary": {}}
    if "user_ids" not in seqs.columns or not len(users):
        return out
    unique = seqs[seqs["users_in_d"].to_numpy() == 1]
    owner = [str(us[0]) for us in unique["user_ids"]]
    everyone = sorted({str(u) for u in users} | set(owner))
    ratio = unique["perplexity_ratio"].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        curated = ~np.isnan(ratio) & (ratio >= t)
    long_enough = [int(n) >= min_tokens for n in unique["length_tokens"]]
    pii = headline_pii(unique, min_tokens) if len(unique) else np.zeros(0, dtype=bool)
    every = [True] * len(unique)
    for key, mask, capacity in (
        ("unique_sequences", every, _run_capacity(users, doc_tokens, everyone)),
        ("curated_unique_sequences", curated, _per_user(owner, every, everyone)),
        ("pii_unique_sequences_total", pii, _per_user(owner, long_enough, everyone)),
    ):
        if metrics.get(key) is None:
            continue
        ci, rule = count_interval(_per_user(owner, mask, everyone), capacity=capacity, n_boot=n_boot)
        out[f"{key}_ci"] = None if ci is None else [ci[0], ci[1]]
        if rule is not None:
            out["intervals_at_boundary"][f"{key}_ci"] = rule
    return out


def _per_user(owner: Sequence[str], keep: Sequence[bool] | Any, everyone: Sequence[str]) -> list[int]:
    """How many of the kept rows each of ``everyone`` owns (0 for a user with none)."""
    per_user = dict.fromkeys(everyone, 0)
    for u, k in zip(owner, keep, strict=True):
        if k:
            per_user[u] = per_user.get(u, 0) + 1
    return [per_user[u] for u in everyone]


def _run_capacity(
    users: Sequence[str], doc_tokens: Sequence[int] | None, everyone: Sequence[str]
) -> list[int] | None:
    """The most maximal runs each user's documents could hold, ceil(n/2) per document of n tokens
    (runs are separated by at least one miss); None without ``doc_tokens``."""
    if doc_tokens is None:
        return None
    if len(doc_tokens) != len(users):
        raise ValueError("doc_tokens must give one length per document of users")
    most = dict.fromkeys(everyone, 0)
    for u, n in zip(users, doc_tokens, strict=True):
        most[str(u)] += (int(n) + 1) // 2
    return [most[u] for u in everyone]
