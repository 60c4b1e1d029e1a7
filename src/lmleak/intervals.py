# long: every interval lmleak prints, each beside the coverage rule that fixes it, in one pure module
"""Confidence intervals for the numbers lmleak prints: pure maths, shared by every stage.

Every headline goes beside its 95 % interval (``X_ci = [lo, hi]`` next to ``X`` in a summary). Two
kinds of interval live here:

- **Binomial proportions** (exact-match rates, leakage ratios, miss rates): Wilson's score interval
  (Wilson 1927; Newcombe 1998, method 3) and the exact Clopper–Pearson interval (Clopper & Pearson
  1934), for counts of independent trials.
- **The cluster (group) bootstrap** for statistics over texts that come in groups — documents of one
  user, near-duplicates of one text. Texts of one person are not independent samples: a prolific
  user who wrote 300 of 1,000 texts would make a per-text bootstrap far too narrow. Resampling whole
  groups with replacement (Davison & Hinkley 1997, §3.8; Field & Welsh 2007) keeps every group's
  texts together, so the interval reflects the number of *people*, not texts. For a two-class
  statistic (an AUC) the groups are resampled within each class (stratified), so every replicate
  keeps both classes.

Intervals are percentile intervals of ``n_boot`` replicates drawn with a seeded generator, so a run
is reproducible. None is returned where the data cannot give an interval (no trials, one class).

**An AUC over few people is widened.** With 6 users a side the percentile interval of a null AUC
covered 0.5 in 88 % of simulated runs, not 95 %: the bootstrap's variance of G resampled groups is
(G − 1)/G of the true one and its quantiles are the normal's where few groups call for Student's t.
:func:`few_groups_widened` scales each end's distance from the AUC by ``sqrt(G/(G−1)) · t(G⁺+G⁻−2)/z``
(G the smaller class's groups: 1.25 at 6 a side, 1.04 at 30), which brought the simulated coverage
to 93–95 %; :func:`grouped_bootstrap_auc` and :func:`unit_bootstrap_auc` apply it.

**At the boundary a bootstrap claims certainty it does not have.** Resampling 23 users none of
whom leaked gives 0 in every replicate, so the percentile interval is the point [0, 0]; the same
for a sample where every user succeeded, or where every user has the same rate (one user). Three
rules replace it there (each result says so, and the summary's ``intervals`` record lists the keys
under ``at_boundary``):

- **A proportion** (an exact-match rate, a TPR) **with 0 or all successes**:
  :func:`boundary_proportion_interval` takes the exact Clopper–Pearson interval with the *units*
  (users, clusters) as the trials — 0 of 23 probes by 9 users is read as 0 of 9 — widened to the
  bootstrap's own interval where that is wider. Counting units rather than texts is conservative
  under clustering: a user's texts are at least one independent trial between them.
  :func:`cluster_proportion_interval` applies it to per-item hits, and also when the units differ
  in nothing (one unit, or every unit the same rate), with the summed unit rates as the
  (fractional) number of successes: for variables in [0, 1] the binomial is the extreme case
  (Hoeffding 1956), so the interval stays conservative.
- **An AUC of 0 or 1**: the same rule with ``min(positive units, negative units)`` trials
  (:func:`boundary_auc_interval`): pairing each positive unit with its own negative unit gives that
  many independent trials of "the positive scores higher", every one of which succeeded.
- **A count of 0 over U users** (leaked sequences): :func:`count_interval` gives
  ``[0, the leaks m = U · CP_upper(0 of U) users could hold]`` — m is the most users who could
  leak while none of these U did (3.69 for large U, the exact Poisson bound of a count of 0), and
  leaks cluster: a leaking user leaks many sequences (one real user had 49 of a report's 55), so
  each of the m is charged its *capacity*, the most leaks it could have (the caller's bound: a
  user's unique sequences at a looser criterion), the m largest capacities. One leak each, the
  old rule, covered 0.33–0.64 of simulated corpora whose leaking users leak 5–10 sequences.
  A count with few leaking users is widened the same way (leakers' CP interval × their fewest and
  most leaks), where the bootstrap of a sum of few clusters runs short.

**Intervals near 0 and 1, and with few groups.** An AUC near 1 is skewed, so its percentile
interval is short on the far side: :func:`few_groups_auc_interval` joins it with a logit-scale
interval. A share of hits over few users (a probe's exact-match rate over 9 people) gets the
Clopper–Pearson interval at its design-effect sample size (:func:`design_effect_interval`),
joined with the bootstrap's. Each docstring gives the coverage measured in simulation
(``tests/test_intervals.py``; the slow tests re-measure it; docs/GLOSSARY.md has the table).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Z95 = 1.959963984540054  # the standard normal's 97.5 % quantile

#: What a summary's ``intervals`` key says about a grouped bootstrap (merged with the unit and count).
BOOTSTRAP_METHOD = "percentile cluster bootstrap (groups resampled with replacement)"

#: What an AUC's interval adds to it (:func:`few_groups_widened`).
FEW_GROUPS_RULE = (
    "AUC intervals widened for few groups: each end's distance x sqrt(G/(G-1)) t(G+ + G- - 2)/z, joined "
    "with the logit-scale interval logit(AUC) +- sqrt(G/(G-1)) t(G+ + G- - 2) sd/(AUC(1-AUC)) of the "
    "replicates' sd (the AUC's skew near 0 and 1)"
)


def wilson_interval(correct: int, valid: int, *, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of ``correct / valid`` (95 % for the default ``z``); None when valid = 0.

    Unlike the normal approximation it stays inside [0, 1] and is not degenerate at 0 or n
    successes (Wilson 1927; Newcombe 1998, method 3).

    Example:
        >>> [round(x, 4) for x in wilson_interval(81, 263)]
        [0.2553, 0.3662]
        >>> [round(x, 4) for x in wilson_interval(0, 10)]
        [0.0, 0.2775]
        >>> wilson_interval(0, 7)[0], wilson_interval(3, 3)[1]  # exactly, not 5.6e-17 from rounding
        (0.0, 1.0)
        >>> wilson_interval(0, 0) is None
        True
    """
    if valid < 0 or correct < 0 or correct > valid:
        raise ValueError(f"need 0 <= correct <= valid, got correct={correct}, valid={valid}")
    if valid == 0:
        return None
    p = correct / valid
    z2 = z * z
    centre = (p + z2 / (2 * valid)) / (1 + z2 / valid)
    half = z * math.sqrt(p * (1 - p) / valid + z2 / (4 * valid * valid)) / (1 + z2 / valid)
    # at 0 (or n) successes centre - half (or centre + half) is exactly 0 (1); rounding left 5.6e-17
    lo = 0.0 if correct == 0 else max(0.0, centre - half)
    hi = 1.0 if correct == valid else min(1.0, centre + half)
    return lo, hi


def clopper_pearson_interval(
    successes: int, trials: int, *, level: float = 0.95
) -> tuple[float, float] | None:
    """Exact (Clopper–Pearson) two-sided interval of a binomial proportion; None when trials = 0.

    The bounds are Beta quantiles: lower ``Beta(α/2; k, n−k+1)`` (0 when k = 0), upper
    ``Beta(1−α/2; k+1, n−k)`` (1 when k = n). Conservative: its coverage is at least ``level``.

    Example:
        >>> [round(x, 4) for x in clopper_pearson_interval(0, 562)]
        [0.0, 0.0065]
        >>> [round(x, 4) for x in clopper_pearson_interval(5, 10)]  # a textbook case
        [0.1871, 0.8129]
    """
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"need 0 <= successes <= trials, got successes={successes}, trials={trials}")
    _check_level(level)
    if trials == 0:
        return None
    from scipy.stats import beta  # scipy is a core dependency; imported here to keep import light

    alpha = 1.0 - level
    lower = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, trials - successes + 1))
    upper = 1.0 if successes == trials else float(beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    return lower, upper


def _check_level(level: float) -> None:
    if not (0.0 < level < 1.0) or math.isnan(level):
        raise ValueError(f"the confidence level must be in (0, 1), got {level}")


def _group_index(groups: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, int]:
    """Map arbitrary group labels to 0..G-1 (in order of first appearance)."""
    labels = list(groups)
    seen: dict[Any, int] = {}
    codes = np.fromiter((seen.setdefault(g, len(seen)) for g in labels), dtype=np.int64, count=len(labels))
    return codes, len(seen)


def _percentile(replicates: np.ndarray, level: float) -> tuple[float, float] | None:
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return None
    alpha = 1.0 - level
    lo, hi = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def few_groups_widened(
    estimate: float,
    interval: tuple[float, float] | None,
    n_pos: int,
    n_neg: int,
    *,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """A two-class cluster bootstrap's AUC interval widened for few groups: each end's distance from
    ``estimate`` times ``sqrt(G / (G - 1)) · t(df) / z`` with ``G = min(n_pos, n_neg)`` groups and
    ``df = n_pos + n_neg - 2``, never narrower than ``interval``, clipped to [0, 1]; (0, 1) with one
    group on a side.

    The bootstrap's variance of a mean of G resampled groups is (G − 1)/G of the unbiased one, and
    a percentile interval uses the normal's quantile where few groups call for Student's t; with 6
    users a side (the demo's placebo) a 95 % interval covered 0.5 in 88 % of null simulations
    (strong user effects, 7 texts each), widened 93 %; at 30 a side both 95 %
    (``tests/test_intervals.py``). The factor tends to 1 as the groups grow (1.73 at 3 a side,
    1.25 at 6, 1.11 at 12, 1.04 at 30).

    Example:
        >>> [round(x, 3) for x in few_groups_widened(0.6, (0.45, 0.75), 6, 6)]
        [0.413, 0.787]
        >>> few_groups_widened(0.6, (0.45, 0.75), 1, 6)
        (0.0, 1.0)
    """
    if interval is None:
        return None
    g = min(n_pos, n_neg)
    if g < 2:
        return 0.0, 1.0  # one person on a side: their scores say nothing of the class
    from scipy.stats import t  # scipy is a core dependency; imported here to keep import light

    q = (1.0 + level) / 2
    factor = math.sqrt(g / (g - 1)) * float(t.ppf(q, n_pos + n_neg - 2)) / _normal_quantile(q)
    lo, hi = interval
    lo = min(lo, estimate - factor * (estimate - lo))
    hi = max(hi, estimate + factor * (hi - estimate))
    return max(0.0, lo), min(1.0, hi)


def _normal_quantile(q: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(q))


def few_groups_auc_interval(
    estimate: float,
    replicates: np.ndarray | None,
    n_pos: int,
    n_neg: int,
    *,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """The AUC interval of a two-class cluster bootstrap: the hull of the percentile interval
    widened for few groups (:func:`few_groups_widened`) and a logit-scale interval,
    ``expit(logit(A) ± f · sd / (A(1 − A)))`` with ``sd`` the replicates' standard deviation and
    ``f = sqrt(G/(G−1)) · t(G⁺ + G⁻ − 2)`` (G the smaller class's groups). None without replicates.

    Why the logit: an AUC near 1 is skewed — its replicates bunch under the ceiling, so a percentile
    interval around an estimate of 0.98 stops short of a true 0.93. On the logit scale the delta
    method's variance ``var(A)/(A(1−A))²`` grows as A nears 0 or 1 (the transform of Qin &
    Hotilovac 2008 for AUC intervals; Pepe 2003, §5.2.3), which stretches the interval away from
    the bound. In simulation (user effects, 7 texts each, ``tests/test_intervals.py``) the widened
    percentile interval alone covered a true AUC of 0.93 in 83 / 86 / 88 / 93 % of runs at 3 / 6 /
    12 / 30 people a side; the hull 94–99 % for every AUC in 0.5–0.95, its width at AUC 0.5 within
    3 % of the widened interval's. An estimate of exactly 0 or 1 has no logit: the callers' boundary
    rule (:func:`boundary_auc_interval`) takes over there.

    Example:
        >>> reps = np.random.default_rng(0).normal(0.97, 0.02, 1000).clip(0, 1)
        >>> lo, hi = few_groups_auc_interval(0.97, reps, 6, 6)
        >>> widened = few_groups_widened(0.97, _percentile(reps, 0.95), 6, 6)
        >>> lo < widened[0], hi == widened[1]   # the lower end moves away from the ceiling
        (True, True)
    """
    if replicates is None:
        return None
    reps = np.asarray(replicates, dtype=np.float64)
    widened = few_groups_widened(estimate, _percentile(reps, level), n_pos, n_neg, level=level)
    g = min(n_pos, n_neg)
    finite = reps[np.isfinite(reps)]
    if widened is None or g < 2 or finite.size < 2 or not 0.0 < estimate < 1.0:
        return widened
    from scipy.stats import t  # scipy is a core dependency; imported here to keep import light

    sd = float(finite.std(ddof=1))
    half = math.sqrt(g / (g - 1)) * float(t.ppf((1.0 + level) / 2, n_pos + n_neg - 2)) * sd
    centre, scale = math.log(estimate / (1.0 - estimate)), half / (estimate * (1.0 - estimate))
    lo, hi = _expit(centre - scale), _expit(centre + scale)
    return min(widened[0], lo), max(widened[1], hi)


def _expit(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def group_bootstrap(
    statistic: Callable[[np.ndarray], float],
    groups: Sequence[Any] | np.ndarray,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile interval of ``statistic`` under the cluster bootstrap over ``groups``.

    ``groups[i]`` is the group (user) of item ``i``. Each replicate draws G groups with replacement
    from the G groups present and calls ``statistic(idx)`` with the item indices of the drawn groups
    concatenated (an index appears once per time its group was drawn). A replicate for which the
    statistic is not finite is left out. None when there are no items.

    Example:
        >>> values = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
        >>> lo, hi = group_bootstrap(lambda i: values[i].mean(), ["a", "a", "b", "b", "c", "d"], seed=1)
        >>> 0.0 <= lo <= values.mean() <= hi <= 1.0
        True
    """
    _check_level(level)
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    codes, n_groups = _group_index(groups)
    if n_groups == 0:
        return None
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(n_groups + 1))
    members = [order[starts[g] : starts[g + 1]] for g in range(n_groups)]
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    for b in range(n_boot):
        drawn = rng.integers(0, n_groups, size=n_groups)
        out[b] = statistic(np.concatenate([members[g] for g in drawn]))
    return _percentile(out, level)


def bootstrap_sum_interval(
    values: Sequence[float] | np.ndarray, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile interval of the *sum* of per-unit values (a count of leaks per user) when the
    units themselves are resampled with replacement.

    The same draws as :func:`group_bootstrap` with one item per group (so both give the same
    interval), without building an index list per replicate: fast for 10^5 users. It reads "how
    many leaks would a corpus of as many users, drawn like these, show". None without units.

    Example:
        >>> bootstrap_sum_interval([0, 0, 0, 5, 0, 1, 0, 0], n_boot=2000)
        (0.0, 16.0)
        >>> bootstrap_sum_interval([]) is None
        True
    """
    _check_level(level)
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return None
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    for b in range(n_boot):
        out[b] = v[rng.integers(0, v.size, size=v.size)].sum()
    return _percentile(out, level)


def auc_mann_whitney(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC AUC as the Mann–Whitney statistic: P(score of a positive > score of a negative), ties ½.

    NaN when either class is empty.

    Example:
        >>> auc_mann_whitney(np.array([0.9, 0.8, 0.1, 0.8]), np.array([1, 1, 0, 0]))
        0.875
    """
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels).astype(bool)
    n_pos = int(labels.sum())
    n_neg = labels.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    from scipy.stats import rankdata  # average ranks give ties ½

    ranks = rankdata(scores)
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def grouped_bootstrap_auc(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[int] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """The AUC's interval from the cluster bootstrap, resampling groups (users) within each class:
    :func:`few_groups_auc_interval` of the replicates (the percentile interval widened for few
    groups, joined with the logit-scale interval).

    A group is assigned to the class of its first item; groups are resampled with replacement
    separately among the positive and the negative groups, so each replicate keeps both classes and
    their numbers of groups. None when either class has no item.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> s = rng.normal(size=200); y = np.r_[np.ones(100), np.zeros(100)]; g = np.arange(200) // 4
        >>> lo, hi = grouped_bootstrap_auc(s, y, g, n_boot=300)
        >>> lo < 0.5 < hi   # a null score: the interval covers chance
        True
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels).astype(bool)
    if s.shape != y.shape:
        raise ValueError("scores, labels and groups must have the same length")
    _check_level(level)
    split = _class_groups(y, groups)
    if split is None:
        return None
    codes, pos_groups, neg_groups, _, _ = split
    mixed = np.bincount(codes, weights=y) % np.bincount(codes) != 0  # a group with items of both classes
    estimate = auc_mann_whitney(s, y)
    if mixed.any() or pos_groups.size * neg_groups.size > _MAX_WIN_CELLS:  # or a too large win matrix
        reps = stratified_replicates(
            lambda idx: auc_mann_whitney(s[idx], y[idx]), y, groups, n_boot=n_boot, seed=seed
        )
        return few_groups_auc_interval(estimate, reps, pos_groups.size, neg_groups.size, level=level)
    # AUC of a replicate = sum over drawn (positive, negative) group pairs of their wins / pairs:
    # one (P x N) matrix of wins per group pair, then a weighted sum per replicate
    wins = _group_pair_wins(s, y, codes, pos_groups, neg_groups)
    sizes = np.bincount(codes).astype(float)
    counts_p, counts_n = _draw_counts(pos_groups.size, neg_groups.size, n_boot, seed)
    num = ((counts_p @ wins) * counts_n).sum(axis=1)
    den = (counts_p @ sizes[pos_groups]) * (counts_n @ sizes[neg_groups])
    return few_groups_auc_interval(estimate, num / den, pos_groups.size, neg_groups.size, level=level)


#: Above this many (positive group, negative group) cells the AUC bootstrap ranks every replicate instead.
_MAX_WIN_CELLS = 4_000_000


def _class_groups(
    y: np.ndarray, groups: Sequence[Any] | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Group codes, the positive and negative groups (by their first item's class), and the item
    order and starts that list each group's items; None when a class is empty."""
    if len(groups) != y.size:
        raise ValueError("scores, labels and groups must have the same length")
    if y.all() or not y.any():
        return None
    codes, n_groups = _group_index(groups)
    _, first_item = np.unique(codes, return_index=True)  # codes are 0..G-1, so one entry per group
    first_label = y[first_item]
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(n_groups + 1))
    return codes, np.flatnonzero(first_label), np.flatnonzero(~first_label), order, starts


def _draw_counts(n_pos: int, n_neg: int, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """How often each positive and each negative group is drawn in each replicate (the draws of
    :func:`stratified_group_bootstrap`: per replicate, the positives' then the negatives')."""
    rng = np.random.default_rng(seed)
    dp, dn = np.empty((n_boot, n_pos), np.int64), np.empty((n_boot, n_neg), np.int64)
    for b in range(n_boot):  # rng.integers(0, n, n) is rng.choice(n, n)'s stream, without its overhead
        dp[b], dn[b] = rng.integers(0, n_pos, n_pos), rng.integers(0, n_neg, n_neg)
    rows = np.arange(n_boot)[:, None]
    cp = np.bincount((rows * n_pos + dp).ravel(), minlength=n_boot * n_pos).reshape(n_boot, n_pos)
    cn = np.bincount((rows * n_neg + dn).ravel(), minlength=n_boot * n_neg).reshape(n_boot, n_neg)
    return cp.astype(np.float64), cn.astype(np.float64)


def _group_pair_wins(
    s: np.ndarray, y: np.ndarray, codes: np.ndarray, pos_groups: np.ndarray, neg_groups: np.ndarray
) -> np.ndarray:
    """``W[a, b]`` = pairs (positive item of group a, negative item of group b) with the positive
    scoring higher, ties counted ½ (the Mann–Whitney count restricted to the two groups)."""
    pos_items = np.flatnonzero(y)
    row = np.full(codes.max() + 1, -1)
    row[pos_groups] = np.arange(pos_groups.size)
    pos_row = row[codes[pos_items]]
    sp = s[pos_items]
    out = np.empty((pos_groups.size, neg_groups.size))
    for j, g in enumerate(neg_groups):
        neg = np.sort(s[(codes == g) & ~y])
        below = np.searchsorted(neg, sp, side="left")
        ties = np.searchsorted(neg, sp, side="right") - below
        out[:, j] = np.bincount(pos_row, weights=below + 0.5 * ties, minlength=pos_groups.size)
    return out


def stratified_group_bootstrap(
    statistic: Callable[[np.ndarray], float],
    labels: Sequence[int] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile interval of a two-class ``statistic(idx)`` under the cluster bootstrap, groups
    resampled within each class (the scheme of :func:`grouped_bootstrap_auc`, for any statistic:
    a TPR at a fixed FPR, an AUC of group sums, ...).

    A group belongs to the class of its first item; each replicate draws as many positive groups
    with replacement from the positive groups as there are, and as many negative ones from the
    negative groups, and calls ``statistic`` with the drawn groups' item indices concatenated.
    Replicates whose statistic is not finite are left out. None when either class is empty.

    Example:
        >>> y = np.r_[np.ones(6), np.zeros(6)]; g = np.arange(12) // 2; x = np.arange(12.0)
        >>> lo, hi = stratified_group_bootstrap(lambda i: x[i][y[i] == 1].mean(), y, g, n_boot=200)
        >>> 0.0 <= lo <= 2.5 <= hi <= 5.0
        True
    """
    _check_level(level)
    reps = stratified_replicates(statistic, labels, groups, n_boot=n_boot, seed=seed)
    return None if reps is None else _percentile(reps, level)


def stratified_replicates(
    statistic: Callable[[np.ndarray], float],
    labels: Sequence[int] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> np.ndarray | None:
    """The ``n_boot`` replicates of :func:`stratified_group_bootstrap` (not finite ones included);
    None when either class is empty."""
    y = np.asarray(labels).astype(bool)
    split = _class_groups(y, groups)
    if split is None:
        return None
    _, pos_groups, neg_groups, order, starts = split
    size = np.diff(starts)
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    for b in range(n_boot):
        drawn = np.r_[pos_groups[rng.integers(0, pos_groups.size, pos_groups.size)],
                      neg_groups[rng.integers(0, neg_groups.size, neg_groups.size)]]  # fmt: skip
        # the drawn groups' items, concatenated without a Python loop over the groups
        lengths = size[drawn]
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[b] = statistic(order[np.repeat(starts[drawn], lengths) + offsets])
    return out


def unit_bootstrap_auc(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[int] | np.ndarray,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """:func:`grouped_bootstrap_auc` when every item is its own unit (one score per user): the same
    stratified draws (same seed, same replicates), each replicate's AUC from the sorted negatives
    (``searchsorted``, ties ½) instead of a rank sum over concatenated groups, so 10^5 users take
    seconds. None when either class is empty.

    Example:
        >>> s = np.array([0.9, 0.7, 0.8, 0.1, 0.2, 0.75]); y = np.array([1, 1, 1, 0, 0, 0])
        >>> unit_bootstrap_auc(s, y, n_boot=200) == grouped_bootstrap_auc(s, y, np.arange(6), n_boot=200)
        True
    """
    _check_level(level)
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels).astype(bool)
    if s.shape != y.shape:
        raise ValueError("scores and labels must have the same length")
    pos, neg = s[y], s[~y]
    if not pos.size or not neg.size:
        return None
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    for b in range(n_boot):
        p = np.sort(pos[rng.integers(0, pos.size, pos.size)])  # sorted needles: a faster searchsorted
        q = np.sort(neg[rng.integers(0, neg.size, neg.size)])
        below, upto = np.searchsorted(q, p, side="left"), np.searchsorted(q, p, side="right")
        out[b] = float((below + 0.5 * (upto - below)).sum()) / (p.size * q.size)
    return few_groups_auc_interval(auc_mann_whitney(s, y), out, pos.size, neg.size, level=level)


def interval_record(
    *,
    method: str,
    unit: str,
    n_units: int,
    n_boot: int | None = None,
    level: float = 0.95,
    at_boundary: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The ``intervals`` entry of a summary: how its ``*_ci`` values were computed.

    ``at_boundary``: the ``*_ci`` keys whose interval a boundary rule made instead of the bootstrap
    (key -> the rule, as the functions below return it); the record then carries
    ``boundary_rule`` (:data:`BOUNDARY_RULE`) and the keys (an empty mapping: none of them was).

    Example:
        >>> interval_record(method="wilson", unit="probe", n_units=40)
        {'method': 'wilson', 'level': 0.95, 'unit': 'probe', 'n_units': 40}
        >>> rec = interval_record(method="b", unit="user", n_units=9, at_boundary={"x_ci": "clopper-pearson: 0 of 9 users"})
        >>> rec["at_boundary"], rec["boundary_rule"] == BOUNDARY_RULE
        ({'x_ci': 'clopper-pearson: 0 of 9 users'}, True)
    """
    out: dict[str, Any] = {"method": method, "level": level, "unit": unit, "n_units": int(n_units)}
    if n_boot is not None:
        out["n_boot"] = int(n_boot)
    if at_boundary is not None:
        out["boundary_rule"] = BOUNDARY_RULE
        out["at_boundary"] = dict(at_boundary)
    return out


#: What a summary's ``intervals`` record says about the keys listed under ``at_boundary``.
BOUNDARY_RULE = (
    "a bootstrap of a sample without variation (no successes, all successes, every unit alike) is a "
    "point, which claims certainty: such a proportion gets the exact Clopper-Pearson interval with the "
    "units (users) as the trials (an AUC: min(positive, negative units) trials), widened to the "
    "bootstrap's where that is wider; a count of 0 over U users gets [0, the leaks the m = U x "
    "Clopper-Pearson upper bound (0 of U) users with the largest capacity could hold] (a user's "
    "capacity: the most leaks they could have, e.g. their unique sequences at a looser criterion; "
    "one each where none is known); a count with k leaking users is widened to "
    "[U CP_lo(k of U) x the fewest, U CP_up(k of U) x the most leaks of one leaking user]"
)


def _plural_units(n: float, unit: str) -> str:
    return f"{n:g} {unit}" if n == 1 else f"{n:g} {unit}s"


def units_clopper_pearson(successes: float, units: int, *, level: float = 0.95) -> tuple[float, float] | None:
    """The Clopper–Pearson interval with ``units`` trials and a possibly fractional number of
    ``successes`` (the summed success rates of the units): the Beta quantiles of
    :func:`clopper_pearson_interval`, which accept real parameters. None without units.

    Example:
        >>> units_clopper_pearson(3, 10) == clopper_pearson_interval(3, 10)
        True
        >>> [round(x, 4) for x in units_clopper_pearson(0.5, 1)]  # one unit with half its items hit
        [0.0004, 0.9996]
    """
    _check_level(level)
    if units < 0 or not 0.0 <= successes <= units:
        raise ValueError(f"need 0 <= successes <= units, got successes={successes}, units={units}")
    if units == 0:
        return None
    if float(successes).is_integer():
        return clopper_pearson_interval(int(successes), units, level=level)
    from scipy.stats import beta  # scipy is a core dependency; imported here to keep import light

    alpha = 1.0 - level
    return (
        float(beta.ppf(alpha / 2, successes, units - successes + 1)),
        float(beta.ppf(1 - alpha / 2, successes + 1, units - successes)),
    )


def _hull(a: tuple[float, float] | None, b: tuple[float, float]) -> tuple[float, float]:
    return b if a is None else (min(a[0], b[0]), max(a[1], b[1]))


def boundary_proportion_interval(
    rate: float | None,
    n_units: int,
    interval: tuple[float, float] | None,
    *,
    unit: str = "user",
    level: float = 0.95,
) -> tuple[tuple[float, float] | None, str | None]:
    """``interval`` (a bootstrap's) and None, unless ``rate`` is 0 or 1: then the hull of it and the
    exact Clopper–Pearson interval of 0 (or ``n_units``) successes in ``n_units`` trials, and the
    rule that made it (see the module docstring). Used for rates whose bootstrap is not over their
    own items (a TPR at a threshold set on the negatives); :func:`cluster_proportion_interval`
    for a share of hits.

    Example:
        >>> ci, rule = boundary_proportion_interval(0.0, 23, (0.0, 0.0))
        >>> [round(x, 4) for x in ci], rule
        ([0.0, 0.1482], 'clopper-pearson: 0 of 23 users')
        >>> boundary_proportion_interval(0.4, 23, (0.2, 0.6))
        ((0.2, 0.6), None)
    """
    if rate is None or n_units < 1 or (rate not in (0.0, 1.0)):
        return interval, None
    k = int(rate) * n_units
    cp = clopper_pearson_interval(k, n_units, level=level)
    assert cp is not None  # n_units >= 1
    return _hull(interval, cp), f"clopper-pearson: {k} of {_plural_units(n_units, unit)}"


def boundary_auc_interval(
    auc: float | None,
    n_positive_units: int,
    n_negative_units: int,
    interval: tuple[float, float] | None,
    *,
    unit: str = "user",
    level: float = 0.95,
) -> tuple[tuple[float, float] | None, str | None]:
    """:func:`boundary_proportion_interval` of an AUC with ``min(positive, negative units)`` trials:
    at AUC 1 (or 0) each positive unit paired with its own negative unit is an independent trial
    that the positive won (lost), so the exact interval of that many successes bounds it.

    Example:
        >>> ci, rule = boundary_auc_interval(1.0, 30, 12, (1.0, 1.0))
        >>> [round(x, 4) for x in ci], rule
        ([0.7354, 1.0], 'clopper-pearson: 12 of 12 user pairs')
    """
    n = min(n_positive_units, n_negative_units)
    return boundary_proportion_interval(auc, n, interval, unit=f"{unit} pair", level=level)


def _mean_bounds(leaks: np.ndarray, level: float) -> tuple[float, float]:
    """The t interval of the mean of ``leaks`` clipped to their range; the value itself for one."""
    if leaks.size < 2:
        return float(leaks[0]), float(leaks[0])
    from scipy.stats import t  # scipy is a core dependency; imported here to keep import light

    half = float(t.ppf((1.0 + level) / 2, leaks.size - 1)) * float(leaks.std(ddof=1)) / math.sqrt(leaks.size)
    mean = float(leaks.mean())
    return max(float(leaks.min()), mean - half), min(float(leaks.max()), mean + half)


def design_effect_interval(
    hits: Sequence[float] | np.ndarray, items: Sequence[float] | np.ndarray, *, level: float = 0.95
) -> tuple[float, float] | None:
    """The Clopper–Pearson interval of a share of hits over groups at its effective sample size:
    ``hits[g]`` of ``items[g]`` items are group g's, ``p = Σ hits / Σ items``.

    The share is a ratio estimator; its cluster (linearised) variance is
    ``v = G/(G−1) · Σ_g (hits_g − p · items_g)² / (Σ items)²`` (Cochran 1977, §6.11), so the design
    effect is ``p(1−p)/(N v)`` and the effective number of independent trials
    ``n_eff = p(1−p)/v`` (at most N; Kish 1965). The interval is Clopper–Pearson's with ``p · n_eff``
    (fractional) successes of ``n_eff`` trials (:func:`units_clopper_pearson`'s Beta quantiles), at
    the level whose normal quantile is Student's t with G − 1 degrees of freedom: a variance from G
    groups is uncertain itself (Korn & Graubard 1998 build the same interval for survey shares). In
    simulation (9 users, 1-7 probes each, per-user rates Beta with intra-user correlation 0.1-0.5)
    it covered a share of 0.3 in 96-98 % of runs where the cluster bootstrap covered 87-88 %.
    None with fewer than 2 groups, no items, or no variation (0 or all hits: the boundary rule).

    Example:
        >>> [round(x, 3) for x in design_effect_interval([1, 0, 2, 0, 1, 3, 0, 1, 0], [3] * 9)]  # 8 of 27
        [0.076, 0.621]
        >>> design_effect_interval([0, 0], [3, 4]) is None
        True
    """
    _check_level(level)
    hg, mg = np.asarray(hits, dtype=np.float64), np.asarray(items, dtype=np.float64)
    n, g = float(mg.sum()), hg.size
    if g < 2 or n <= 0:
        return None
    p = float(hg.sum()) / n
    v = g / (g - 1) * float(((hg - p * mg) ** 2).sum()) / (n * n)
    if not 0.0 < p < 1.0 or v <= 0.0:
        return None
    n_eff = min(n, p * (1 - p) / v)
    from scipy.stats import beta, norm, t  # scipy is a core dependency; imported here to keep import light

    z = float(t.ppf((1.0 + level) / 2, g - 1))
    alpha = 2.0 * float(norm.sf(z))  # the normal-equivalent level of t(G-1)'s quantile
    x = p * n_eff
    return float(beta.ppf(alpha / 2, x, n_eff - x + 1)), float(beta.ppf(1 - alpha / 2, x + 1, n_eff - x))


def cluster_proportion_interval(
    hits: Sequence[bool] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    unit: str = "user",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[tuple[float, float] | None, str | None]:
    """The interval of the share of hits, the hull of the cluster bootstrap over ``groups``
    (``groups[i]`` owns item ``i``) and :func:`design_effect_interval` (the bootstrap alone covered
    0.87-0.88 at a share of 0.3 over 9 users; the hull 0.96-0.98), and None; or, when the groups differ in nothing (no hits, all hits, one group,
    every group the same share), the Clopper–Pearson interval over the groups with their summed
    shares as the successes (:func:`units_clopper_pearson`) and the rule that made it. (None, None)
    without items.

    Example:
        >>> ci, rule = cluster_proportion_interval([False] * 23, [f"u{i % 9}" for i in range(23)])
        >>> [round(x, 4) for x in ci], rule
        ([0.0, 0.3363], 'clopper-pearson: 0 of 9 users')
        >>> cluster_proportion_interval([True, False, True, True], ["a", "a", "b", "c"])[1] is None
        True
    """
    h = np.asarray(hits, dtype=np.float64)
    if h.size != len(groups):
        raise ValueError("hits and groups must have the same length")
    if h.size == 0:
        return None, None
    boot = group_bootstrap(lambda idx: float(h[idx].mean()), groups, n_boot=n_boot, level=level, seed=seed)
    codes, n_groups = _group_index(groups)
    hits_g, items_g = (
        np.bincount(codes, weights=h, minlength=n_groups),
        np.bincount(codes, minlength=n_groups),
    )
    shares = hits_g / items_g
    if shares.max() - shares.min() > 1e-12:
        deff = design_effect_interval(hits_g, items_g, level=level)  # None only without variation
        return (boot if deff is None else _hull(boot, deff)), None
    successes = float(shares.sum())
    if abs(successes - round(successes)) < 1e-9:
        successes = float(round(successes))
    cp = units_clopper_pearson(successes, n_groups, level=level)
    assert cp is not None  # n_groups >= 1
    return _hull(boot, cp), f"clopper-pearson: {successes:g} of {_plural_units(n_groups, unit)}"


def _zero_count_interval(
    n: int, cap: np.ndarray | None, unit: str, level: float
) -> tuple[tuple[float, float], str]:
    """:func:`count_interval` of a total of 0 over ``n`` units: the leaks the m = n · CP_up(0 of n)
    units with the largest capacities could hold (one each without capacities), and its rule."""
    cp = clopper_pearson_interval(0, n, level=level)  # every replicate would sum to 0: no draws
    assert cp is not None  # n >= 1
    m = n * cp[1]
    says = (
        f"0 of {_plural_units(n, unit)}: the {m:.3g} {unit}s that could leak (clopper-pearson upper bound), "
    )
    if cap is None:
        return (0.0, m), says + "one leak each"
    top = np.sort(cap)[::-1]
    whole = int(m)
    upper = float(top[:whole].sum() + (m - whole) * (top[whole] if whole < top.size else 0.0))
    return (0.0, upper), says + "each with as many leaks as the most any of these could hold (their capacity)"


#: Above this many leaking units a count's interval is its bootstrap's alone (:func:`count_interval`).
FEW_LEAKERS = 30


def count_interval(
    values: Sequence[float] | np.ndarray,
    *,
    capacity: Sequence[float] | np.ndarray | None = None,
    unit: str = "user",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[tuple[float, float] | None, str | None]:
    """The interval of a sum of per-unit counts whose events come in clusters (a user's leaks), and
    the boundary rule that made it (None when the bootstrap's own interval stands).

    - **Some unit leaked** (k of U): the hull of the bootstrap over units
      (:func:`bootstrap_sum_interval`) and the *leaking units × leaks per leaking unit* interval
      ``[U · CP_lo(k of U) · L_lo, U · CP_up(k of U) · L_hi]``, ``[L_lo, L_hi]`` the t interval of
      the leakers' mean leaks clipped to their fewest and most (the one value when k = 1). With few
      leaking units the bootstrap of a sum is too narrow (it cannot draw more leakers than a
      Poisson of k gives): at 3-30 expected leakers of 5-10 leaks each it covered 0.90-0.95, the
      hull 0.98-1 (geometric sizes, mean 10: 0.89-0.99); above :data:`FEW_LEAKERS` the bootstrap alone.
    - **None leaked** (0 of U): ``[0, the most leaks m = U · CP_up(0 of U) leaking units could
      have]``: the sum of the ⌊m⌋ largest ``capacity`` values plus the fraction of the next. When
      no unit leaked, the mean share of leaking units is below CP_up with the stated confidence
      (Π(1 − p_u) ≤ (1 − p̄)^U), and each unit's leaks are at most its ``capacity`` (the most events
      it could hold: a user's unique sequences at a looser criterion), so the expected count is at
      most ``max Σ p_u c_u`` over ``Σ p_u ≤ m``: the m largest capacities. The old rule, one leak
      per leaking unit, covered 0.33-0.64 when leaking users leak 5-10 sequences each.
      ``capacity`` None: one event per unit (said so in the rule). (None, None) without units.

    Example:
        >>> ci, rule = count_interval([0] * 200)
        >>> [round(x, 3) for x in ci], rule
        ([0.0, 3.655], '0 of 200 users: the 3.66 users that could leak (clopper-pearson upper bound), one leak each')
        >>> ci, rule = count_interval([0] * 200, capacity=[10] * 190 + [40] * 10)
        >>> [round(x, 1) for x in ci], rule.endswith("(their capacity)")  # 3.66 users of 40 each
        ([0.0, 146.2], True)
        >>> ci, rule = count_interval([0, 0, 0, 5, 0, 1, 0, 0], n_boot=2000)  # 2 of 8 leaked, 1 and 5
        >>> [round(x, 2) for x in ci], rule   # 8 x CP_up(2 of 8) x 5: the bootstrap said [0, 16]
        ([0.0, 26.03], '2 of 8 users: clopper-pearson leakers x leaks per leaker')
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return None, None
    cap = None if capacity is None else np.asarray(capacity, dtype=np.float64)
    if cap is not None and cap.shape != v.shape:
        raise ValueError("values and capacity must have the same length")
    leakers = v[v > 0]
    units = _plural_units(v.size, unit)
    if leakers.size > FEW_LEAKERS:
        return bootstrap_sum_interval(v, n_boot=n_boot, level=level, seed=seed), None
    if leakers.size:
        boot = bootstrap_sum_interval(v, n_boot=n_boot, level=level, seed=seed)
        cp = clopper_pearson_interval(leakers.size, v.size, level=level)
        assert boot is not None and cp is not None  # v.size >= 1
        low, high = _mean_bounds(leakers, level)
        ci = _hull(boot, (v.size * cp[0] * low, v.size * cp[1] * high))
        return ci, (
            None if ci == boot else f"{leakers.size} of {units}: clopper-pearson leakers x leaks per leaker"
        )
    return _zero_count_interval(v.size, cap, unit, level)


def newcombe_difference_interval(
    x1: int, n1: int, x2: int, n2: int, *, z: float = Z95
) -> tuple[float, float] | None:
    """Interval of ``x1/n1 - x2/n2`` for two independent proportions: Newcombe's hybrid score
    interval (Newcombe 1998, method 10) from the two Wilson intervals (:func:`wilson_interval`).

    With ``(l1, u1)`` and ``(l2, u2)`` the Wilson intervals of ``p1 = x1/n1`` and ``p2 = x2/n2`` and
    ``d = p1 - p2``: ``[d - sqrt((p1 - l1)^2 + (u2 - p2)^2), d + sqrt((u1 - p1)^2 + (p2 - l2)^2)]``.
    Unlike the Wald interval it keeps close to its coverage with few people and at 0 or n
    successes, where it is not degenerate; it stays inside [-1, 1]. None when either sample is empty.

    Example (Newcombe 1998, Table II, examples (a), (e) and (f)):
        >>> [round(x, 4) for x in newcombe_difference_interval(56, 70, 48, 80)]
        [0.0524, 0.3339]
        >>> [round(x, 4) for x in newcombe_difference_interval(0, 10, 0, 20)]
        [-0.1611, 0.2775]
        >>> [round(x, 4) for x in newcombe_difference_interval(10, 10, 0, 20)]
        [0.6791, 1.0]
        >>> newcombe_difference_interval(1, 5, 0, 0) is None
        True
    """
    a = wilson_interval(x1, n1, z=z)
    b = wilson_interval(x2, n2, z=z)
    if a is None or b is None:
        return None
    p1, p2 = x1 / n1, x2 / n2
    d = p1 - p2
    lo = d - math.sqrt((p1 - a[0]) ** 2 + (b[1] - p2) ** 2)
    hi = d + math.sqrt((a[1] - p1) ** 2 + (p2 - b[0]) ** 2)
    return max(-1.0, lo), min(1.0, hi)
