"""Metrics that quantify user-level leakage (paper 001 §5) and the model quality numbers of §2.

Pure functions over feature columns and ledger arrays:

- unique sequences: sequences of S whose *user count in D* is 1 (§5, metric 1);
- curated unique sequences: the unique ones whose perplexity ratio ``PP_public / PP_lm`` is at
  least ``t`` — those with ratio below ``t`` are removed as plausibly deniable (§5, metric 2);
- worst-case leakage epsilon ``epsilon_l = max over unique w of PP_public(w) / PP_lm(w)`` (§5, Eq. 2),
  computed as its logarithm (``log_leakage_epsilon``) so that it never overflows, and given as
  ``e^x`` only where that fits a float;
- leaked PII: unique sequences whose text overlaps a detected PII span, by type, headlined only
  when at least ``min_tokens`` long (short fragments are counted apart);
- the p filter: keep sequences whose *user count in S* is below ``p`` (§5, k-anonymity style);
- perplexity ``exp(-mean log p)`` per token and top-k accuracy (share of tokens with rank <= k)
  of the model on the corpus (§2), from the ledger.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lmleak.report.null import HEADLINE_PII_TYPES, headline_pii_mask

#: The tab attack's top-k values when none are given, one default for ``lmleak report --k``, the
#: audit config's ``report.k`` and :class:`~lmleak.report.leakage.ReportConfig`: top-1 (text
#: auto-completion) and top-3 (predictive keyboards), the two the paper names (001 §5). The first
#: gives the headline.
DEFAULT_KS: tuple[int, ...] = (1, 3)


def default_ks(limit: int | None = None) -> tuple[int, ...]:
    """:data:`DEFAULT_KS`, without the values a top-``limit`` API cannot answer (None: no limit).

    Example:
        >>> default_ks(), default_ks(1), default_ks(5)
        ((1, 3), (1,), (1, 3))
    """
    return tuple(k for k in DEFAULT_KS if limit is None or k <= limit) or DEFAULT_KS[:1]


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
    if np.isnan(r[u]).all():
        return None
    return int((u & ~np.isnan(r) & (r >= t)).sum())  # an infinite ratio is the least deniable


def log_leakage_epsilon(users_in_d: Any, log_ratio: Any) -> float | None:
    """ln ε_l: the largest log perplexity ratio over the unique sequences (Eq. 2 in log space).

    +inf (a public model that gives a sequence probability 0) is kept: it is the largest leak, not
    a value to drop. None without a public model or without unique sequences.

    Example:
        >>> log_leakage_epsilon([1, 1, 4], [0.17, 0.64, 1.95])
        0.64
        >>> log_leakage_epsilon([1, 1], [0.5, float("inf")])
        inf
    """
    u = np.asarray(users_in_d) == 1
    r = np.asarray(log_ratio, dtype=np.float64)[u]
    r = r[~np.isnan(r)]
    return float(r.max()) if r.size else None


def exp_if_finite(x: float | None) -> float | None:
    """``e^x`` where it fits a float, else None (the log value is reported beside it).

    Example:
        >>> exp_if_finite(0.0), exp_if_finite(800.0), exp_if_finite(None)
        (1.0, None, None)
    """
    if x is None or not np.isfinite(x) or x > 709.0:
        return None
    return float(np.exp(x))


def format_epsilon(log_eps: float | None) -> str:
    """ε_l for people: the number where it fits a float, ``e^x`` where it does not.

    Example:
        >>> format_epsilon(1.0), format_epsilon(800.0), format_epsilon(None)
        ('2.72', 'e^800.0', '-')
    """
    if log_eps is None:
        return "-"
    value = exp_if_finite(log_eps)
    return f"{value:.3g}" if value is not None else f"e^{log_eps:.1f}"


def log_ratio_percentiles(users_in_d: Any, log_ratio: Any) -> tuple[float | None, float | None]:
    """Median and 95th percentile of the log ratios of the unique sequences (None when none scored).

    Example:
        >>> log_ratio_percentiles([1, 1, 1, 2], [0.0, 1.0, 2.0, 9.0])
        (1.0, 1.9)
    """
    u = np.asarray(users_in_d) == 1
    r = np.asarray(log_ratio, dtype=np.float64)[u]
    r = r[~np.isnan(r)]
    if not r.size:
        return None, None
    with np.errstate(invalid="ignore"):
        return float(np.percentile(r, 50)), float(np.percentile(r, 95))


def pii_counts(
    users_in_d: Any, pii_types: Any, length_tokens: Any, min_tokens: int
) -> tuple[dict[str, int], dict[str, int]]:
    """Unique sequences that contain PII, by type: ``(headlined, short)``, where headlined ones have
    at least ``min_tokens`` tokens and short ones fewer. A sequence with two types counts under both;
    ``None`` types (no PII policy ran) count under none.

    Example:
        >>> pii_counts([1, 1, 1, 3], [["EMAIL"], ["EMAIL", "PHONE"], ["PHONE"], ["EMAIL"]], [9, 12, 2, 9], 5)
        ({'EMAIL': 2, 'PHONE': 1}, {'PHONE': 1})
        >>> pii_counts([1], [None], [9], 5)
        ({}, {})
    """
    head: dict[str, int] = {}
    short: dict[str, int] = {}
    for u, types, n in zip(users_in_d, pii_types, length_tokens, strict=True):
        if int(u) != 1:
            continue
        target = head if int(n) >= min_tokens else short
        for t in types if types is not None else ():
            target[str(t)] = target.get(str(t), 0) + 1
    return dict(sorted(head.items())), dict(sorted(short.items()))


def pii_people(
    users_in_d: Any, user_ids: Any, pii_types: Any, length_tokens: Any, min_tokens: int
) -> tuple[int | None, dict[str, int]]:
    """People affected by leaked PII: the distinct users who own a user-unique leaked sequence holding
    PII at least ``min_tokens`` long (the sequences :func:`pii_counts` headlines), overall and by PII
    type (a user with two types counts under both). ``(None, {})`` when no PII policy ran.

    Example:
        >>> pii_people([1, 1, 1, 1, 2], [["a"], ["a"], ["b"], ["c"], ["a", "d"]],
        ...            [["EMAIL"], ["PHONE"], ["EMAIL"], ["EMAIL"], ["EMAIL"]], [9, 9, 9, 2, 9], 5)
        (2, {'EMAIL': 2, 'PHONE': 1})
    """
    everyone: set[str] = set()
    by_type: dict[str, set[str]] = {}
    policy_ran = False
    for u, users, types, n in zip(users_in_d, user_ids, pii_types, length_tokens, strict=True):
        policy_ran = policy_ran or types is not None
        if int(u) != 1 or not types or int(n) < min_tokens:
            continue
        owners = {str(x) for x in users}
        everyone |= owners
        for t in types:
            by_type.setdefault(str(t), set()).update(owners)
    if not policy_ran:
        return None, {}
    return len(everyone), {t: len(v) for t, v in sorted(by_type.items())}


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


def headline_pii(seqs: Any, min_tokens: int, headline_types: Any = None) -> np.ndarray:
    """The rows of one k's features that are headline leaked PII: the ``pii_headline`` column the
    report writes, else :func:`lmleak.report.null.headline_pii_mask` of the rows (default kinds)."""
    if "pii_headline" in seqs.columns:
        flags: np.ndarray = seqs["pii_headline"].to_numpy(dtype=bool)
        return flags
    types = seqs["pii_types"] if "pii_types" in seqs else [None] * len(seqs)
    return headline_pii_mask(
        seqs["users_in_d"].to_numpy(),
        types,
        seqs["length_tokens"].to_numpy(),
        min_tokens=min_tokens,
        headline_types=HEADLINE_PII_TYPES if headline_types is None else headline_types,
        users_with_text=seqs["users_with_text"] if "users_with_text" in seqs.columns else None,
    )


# long: one dict literal of the §5 metrics, each computed by a function above
def metrics_for_k(
    seqs: Any,
    *,
    t: float,
    p: int | None,
    has_public: bool = False,
    min_tokens: int = 1,
    headline_types: Any = None,
) -> dict[str, Any]:
    """The §5 metrics of one k's feature rows (``has_public``: a public model scored them, so
    the curated count is 0 rather than unknown when there is no unique sequence).

    ``pii_unique_sequences_total`` and ``pii_users`` count the headline leaked PII only
    (:func:`headline_pii`: person-identifying kinds, unique as text too); ``pii_unique_sequences``
    (by type) and ``pii_unique_sequences_all_types`` count every kind."""
    users_d = seqs["users_in_d"].to_numpy()
    ratio = seqs["perplexity_ratio"].to_numpy(dtype=np.float64)
    log_ratio = (
        seqs["log_perplexity_ratio"].to_numpy(dtype=np.float64)
        if "log_perplexity_ratio" in seqs
        else np.log(ratio)
    )
    unique = seqs[users_d == 1]
    with np.errstate(divide="ignore"):
        curated = curated_unique_sequences(users_d, ratio, t)
    if curated is None and has_public and len(unique) == 0:
        curated = 0
    log_eps = log_leakage_epsilon(users_d, log_ratio)
    p50, p95 = log_ratio_percentiles(users_d, log_ratio)
    pii_types = seqs["pii_types"] if "pii_types" in seqs else [[] for _ in range(len(seqs))]
    head, short = pii_counts(users_d, pii_types, seqs["length_tokens"].to_numpy(), min_tokens)
    # no PII policy ran (every unique row's types are None): the count is unknown, not 0, so a gate
    # on it fails instead of passing
    unknown = bool(len(unique)) and all(
        ty is None for u, ty in zip(users_d, pii_types, strict=True) if int(u) == 1
    )
    headline = headline_pii(seqs, min_tokens, headline_types) if len(seqs) else np.zeros(0, dtype=bool)
    return {
        "num_sequences": int(len(seqs)),
        "num_occurrences": int(seqs["count_in_s"].sum()) if len(seqs) else 0,
        "unique_sequences": unique_sequences(users_d),
        "curated_unique_sequences": curated,
        "leakage_epsilon": exp_if_finite(log_eps),
        "log_leakage_epsilon": log_eps,
        # JSON has no infinity: +inf (a public model that gives a leaked text probability 0) is kept here
        "leakage_epsilon_infinite": log_eps is not None and log_eps == np.inf,
        "log_ratio_p50": p50,
        "log_ratio_p95": p95,
        "pii_unique_sequences": None if unknown else head,
        "pii_unique_sequences_total": None if unknown else int(headline.sum()),
        "pii_unique_sequences_all_types": None
        if unknown
        else int(
            sum(
                1
                for u, ty, n in zip(users_d, pii_types, seqs["length_tokens"], strict=True)
                if int(u) == 1 and ty and int(n) >= min_tokens
            )
        ),
        "pii_unique_short_sequences": short,
        "p_filtered_sequences": p_filtered(seqs["users_in_s"].to_numpy(), p),
        "unique_max_length_tokens": int(unique["length_tokens"].max()) if len(unique) else 0,
        "unique_users": int(len({u for us in unique["user_ids"] for u in us}))
        if "user_ids" in seqs.columns
        else None,
        **_pii_people_keys(seqs, pii_types, unknown, min_tokens, headline),
    }


def _pii_people_keys(
    seqs: Any, pii_types: Any, unknown: bool, min_tokens: int, headline: np.ndarray
) -> dict[str, Any]:
    """``pii_users`` and ``pii_users_by_type`` (:func:`pii_people` over the headline rows); None
    when no PII policy ran or the rows carry no user ids."""
    if unknown or "user_ids" not in seqs.columns:
        return {"pii_users": None, "pii_users_by_type": None}
    users, by_type = pii_people(
        seqs["users_in_d"].to_numpy(),
        seqs["user_ids"],
        [ty if h else [] for ty, h in zip(pii_types, headline, strict=True)],
        seqs["length_tokens"].to_numpy(),
        min_tokens,
    )
    return {"pii_users": users or 0, "pii_users_by_type": by_type}  # known as pii_unique_sequences_total is
