"""Metrics that quantify user-level leakage (paper 001 §5) and the model quality numbers of §2.

Pure functions over feature columns and ledger arrays:

- unique sequences: sequences of S whose *user count in D* is 1 (§5, metric 1);
- curated unique sequences: the unique ones whose perplexity ratio ``PP_public / PP_lm`` is at
  least ``t`` — those with ratio below ``t`` are removed as plausibly deniable (§5, metric 2);
- worst-case leakage epsilon ``epsilon_l = max over unique w of PP_public(w) / PP_lm(w)`` (§5, Eq. 2);
- the p filter: keep sequences whose *user count in S* is below ``p`` (§5, k-anonymity style);
- perplexity ``exp(-mean log p)`` per token and top-k accuracy (share of tokens with rank <= k)
  of the model on the corpus (§2), from the ledger.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def unique_sequences(users_in_d: Any) -> int:
    """Number of sequences of S held by exactly one user of D.

    Example:
        >>> unique_sequences([1, 3, 1, 2])
        2
    """
    return int((np.asarray(users_in_d) == 1).sum())


def curated_unique_sequences(users_in_d: Any, perplexity_ratio: Any, t: float) -> int | None:
    """Unique sequences with ``PP_public / PP_lm >= t`` (None when no ratio is known, i.e. no public model).

    Example:
        >>> curated_unique_sequences([1, 1, 1, 2], [0.9, 1.2, 3.0, 9.0], 1.0)
        2
        >>> curated_unique_sequences([1], [float("nan")], 1.0) is None
        True
    """
    u = np.asarray(users_in_d) == 1
    r = np.asarray(perplexity_ratio, dtype=np.float64)
    if not np.isfinite(r[u]).any():
        return None
    return int((u & np.isfinite(r) & (r >= t)).sum())


def leakage_epsilon(users_in_d: Any, perplexity_ratio: Any) -> float | None:
    """Worst-case leakage epsilon (Eq. 2): the largest ratio over the unique sequences.

    None without a public model or without unique sequences.

    Example:
        >>> leakage_epsilon([1, 1, 4], [1.19, 1.89, 7.0])
        1.89
    """
    u = np.asarray(users_in_d) == 1
    r = np.asarray(perplexity_ratio, dtype=np.float64)[u]
    r = r[np.isfinite(r)]
    return float(r.max()) if r.size else None


def p_filtered(users_in_s: Any, p: int | None) -> int:
    """Sequences kept by the p filter: user count in S below ``p`` (all of them when p is None).

    Example:
        >>> p_filtered([1, 1, 5, 9], 5)
        2
    """
    u = np.asarray(users_in_s)
    return int(u.size if p is None else (u < p).sum())


def corpus_perplexity(logprobs: Any) -> float | None:
    """Per-token perplexity ``exp(-mean ln p)``; None when log-probs are unknown (black box).

    Example:
        >>> round(corpus_perplexity(np.log([0.5, 0.25])), 6)
        2.828427
    """
    lp = np.asarray(logprobs, dtype=np.float64)
    if lp.size == 0 or not np.isfinite(lp).all():
        return None
    return float(np.exp(-lp.mean()))


def top_k_accuracy(ranks: Any, k: int) -> float | None:
    """Share of positions whose true token has rank <= k (None on an empty corpus).

    Example:
        >>> top_k_accuracy([1, 2, 3, 1], 1)
        0.5
    """
    r = np.asarray(ranks)
    return float((r <= k).mean()) if r.size else None


def metrics_for_k(seqs: Any, *, t: float, p: int | None, has_public: bool = False) -> dict[str, Any]:
    """The §5 metrics of one k's feature rows (``has_public``: a public model scored them, so
    the curated count is 0 rather than unknown when there is no unique sequence)."""
    users_d = seqs["users_in_d"].to_numpy()
    ratio = seqs["perplexity_ratio"].to_numpy(dtype=np.float64)
    unique = seqs[users_d == 1]
    curated = curated_unique_sequences(users_d, ratio, t)
    if curated is None and has_public and len(unique) == 0:
        curated = 0
    return {
        "num_sequences": int(len(seqs)),
        "num_occurrences": int(seqs["count_in_s"].sum()) if len(seqs) else 0,
        "unique_sequences": unique_sequences(users_d),
        "curated_unique_sequences": curated,
        "leakage_epsilon": leakage_epsilon(users_d, ratio),
        "p_filtered_sequences": p_filtered(seqs["users_in_s"].to_numpy(), p),
        "unique_max_length_tokens": int(unique["length_tokens"].max()) if len(unique) else 0,
        "unique_users": int(len({u for us in unique["user_ids"] for u in us}))
        if "user_ids" in seqs.columns
        else None,
    }
