"""The honest numbers of a membership run (issue 26, items 2-5): intervals over users, the headline
attack chosen on one half of the users and reported on the other, a placebo beside it, and group
attacks on disjoint groups.

- **Intervals.** Every AUC and TPR at a low FPR gets a 95 % percentile interval from the cluster
  bootstrap over groups (users, or clusters of texts; :mod:`lmleak.intervals`), resampled within
  each class — a user with 30 texts is one draw, not 30. At the boundary (a TPR of 0 or 1, an AUC
  of 0 or 1) the bootstrap is often a point; there the exact Clopper–Pearson interval over the
  member groups (an AUC: min(member, non-member groups) pairs) widens it, and the row's
  ``<key>_rule`` (``auc_ci_rule``, ``tpr_at_1pct_fpr_ci_rule``, ...) says so (None: the bootstrap's own).
- **Split-half headline.** Picking the best of k attacks on the evaluation set and reporting its AUC
  there is optimistic (the maximum of k noisy AUCs). :func:`split_half_headline` splits the groups
  of each class in two halves (seeded), picks the method with the highest AUC on the first half and
  reports that method's AUC (and interval) on the second half only: an honest estimate of "the
  strongest attack" that no look at the reported texts chose. The best raw AUC (every text, chosen
  after the fact) goes beside it, labelled so.
- **Placebo.** :func:`placebo_metrics` splits the *non-members'* groups in two halves and labels one
  half "members": the model saw neither, so the same attack's AUC must sit at 0.5 within its
  interval. One that does not says the attack (or the sets) find a difference that is not membership.
- **Disjoint groups.** :func:`disjoint_group_sums` cuts each class into disjoint groups of
  ``group_size`` texts (paper 002 A.4's group attack) so their count is the true number of positives
  and negatives; the interval re-forms the groups in every bootstrap replicate of the users.

Texts whose score is not finite (Min-K% of a text too short for ``k``) are left out of that method's
numbers and counted (``num_excluded``).

Pure maths: numpy, :mod:`lmleak.attacks.roc` and :mod:`lmleak.intervals` only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lmleak.attacks.roc import low_fpr_note, roc_auc, summarize, tpr_at_fpr
from lmleak.intervals import (
    boundary_auc_interval,
    boundary_proportion_interval,
    grouped_bootstrap_auc,
    stratified_group_bootstrap,
)

#: Bootstrap replicates of every interval.
N_BOOT = 1000
#: The low false-positive rates every metric row reports a TPR at (name, rate).
FPRS = (("tpr_at_1pct_fpr", 0.01), ("tpr_at_0.1pct_fpr", 0.001))
#: Groups each class needs in each half for a split-half choice (fewer: no honest headline).
MIN_GROUPS_PER_HALF = 2


def _ci(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [float(interval[0]), float(interval[1])]


def _at_boundary(
    out: dict[str, Any], boot: dict[str, tuple[float, float] | None], pos_units: int, neg_units: int
) -> None:
    """``out``'s ``auc_ci`` and TPR intervals from the bootstraps ``boot`` (by key), each widened by
    the boundary rule where its metric is 0 or 1, with ``<key>_rule`` beside it."""
    ci, rule = boundary_auc_interval(out["auc"], pos_units, neg_units, boot["auc_ci"], unit="group")
    out["auc_ci"], out["auc_ci_rule"] = _ci(ci), rule
    for name, _ in FPRS:
        ci, rule = boundary_proportion_interval(out[name], pos_units, boot.get(f"{name}_ci"), unit="group")
        out[f"{name}_ci"], out[f"{name}_ci_rule"] = (_ci(ci), rule) if out[name] is not None else (None, None)


def metrics_with_intervals(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[int] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> dict[str, Any]:
    """:func:`lmleak.attacks.roc.summarize` of the finite scores, each AUC and reported TPR with its
    interval (``auc_ci``, ``tpr_at_1pct_fpr_ci``, ...) and the boundary rule that made it where
    the metric is 0 or 1 (``auc_ci_rule``, ...; see the module docstring), ``num_excluded``
    (non-finite scores) and ``num_groups``. Without both classes among the finite scores every
    metric is None.

    Example:
        >>> m = metrics_with_intervals([3.0, 2.0, float("nan"), 1.0, 0.0], [1, 1, 1, 0, 0], list("aabcd"), n_boot=200)
        >>> m["auc"], [round(x, 3) for x in m["auc_ci"]], m["auc_ci_rule"], m["num_excluded"], m["num_groups"]
        (1.0, [0.0, 1.0], 'clopper-pearson: 1 of 1 group pair', 1, 3)
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(np.int64)
    g = np.asarray([str(x) for x in groups], dtype=object)
    ok = np.isfinite(s)
    s, y, g = s[ok], y[ok], g[ok]
    out: dict[str, Any] = {"num_excluded": int((~ok).sum()), "num_groups": len(set(g.tolist()))}
    if y.size == 0 or y.all() or not y.any():
        out.update({"accuracy": None, "threshold": None, "auc": None, "auc_ci": None, "auc_ci_rule": None})
        for name, _ in FPRS:
            out.update({name: None, f"{name}_ci": None, f"{name}_ci_rule": None})
            out[f"{name}_note"] = "needs members and non-members"
        out.update({"num_members": int(y.sum()), "num_non_members": int((1 - y).sum())})
        return out
    out.update(summarize(s, y))
    boot = {"auc_ci": grouped_bootstrap_auc(s, y, g, n_boot=n_boot, seed=seed)}
    for name, f in FPRS:
        boot[f"{name}_ci"] = None if out[name] is None else _tpr_ci(s, y, g, f, n_boot=n_boot, seed=seed)
    _at_boundary(out, boot, len(set(g[y == 1].tolist())), len(set(g[y == 0].tolist())))
    return out


def _tpr_ci(
    s: np.ndarray, y: np.ndarray, g: np.ndarray, fpr: float, *, n_boot: int, seed: int
) -> tuple[float, float] | None:
    def statistic(idx: np.ndarray) -> float:
        return tpr_at_fpr(s[idx], y[idx], fpr)

    return stratified_group_bootstrap(statistic, y, g, n_boot=n_boot, seed=seed)


def split_groups(
    labels: Sequence[int] | np.ndarray, groups: Sequence[Any] | np.ndarray, *, seed: int = 0
) -> np.ndarray | None:
    """Each text's half (True: the first, False: the second) when each class's groups are dealt
    into two halves after a seeded shuffle (a group's texts share a half); None when a class has
    fewer than ``2 * MIN_GROUPS_PER_HALF`` groups.

    Example:
        >>> h = split_groups([1, 1, 1, 1, 0, 0, 0, 0], list("abcdefgh"))
        >>> int(h[:4].sum()), int(h[4:].sum())
        (2, 2)
        >>> split_groups([1, 1, 0, 0], list("abcd")) is None
        True
    """
    y = np.asarray(labels).astype(np.int64)
    keys = np.asarray([f"{c}:{g}" for c, g in zip(y, groups, strict=True)], dtype=object)
    rng = np.random.default_rng(seed)
    first = np.zeros(len(y), dtype=bool)
    for cls in (1, 0):
        names = sorted(set(keys[y == cls].tolist()))
        if len(names) < 2 * MIN_GROUPS_PER_HALF:
            return None
        chosen = set(rng.permutation(names)[: len(names) // 2].tolist())
        first |= np.array([k in chosen for k in keys.tolist()])
    return first


def _finite_auc(s: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(s)
    if not ok.any() or y[ok].all() or not y[ok].any():
        return float("nan")
    return roc_auc(s[ok], y[ok])


def split_half_headline(
    scores_by_method: dict[str, np.ndarray],
    labels: Sequence[int] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> dict[str, Any] | None:
    """Choose the method with the highest AUC on the first half of the groups (:func:`split_groups`;
    ties: the first method given) and report its metrics on the second half only.

    Returns ``method``, ``selection_auc_by_attack`` (each method's AUC on the first half),
    ``report`` (:func:`metrics_with_intervals` of the chosen method on the second half) and the
    number of groups in each half; None when there are too few groups to split.

    Example:
        >>> y = np.r_[np.ones(8), np.zeros(8)]; g = np.arange(16)
        >>> h = split_half_headline({"a": np.arange(16.0), "b": -np.arange(16.0)}, y, g, n_boot=100)
        >>> h["method"], h["report"]["auc"]
        ('b', 1.0)
    """
    y = np.asarray(labels).astype(np.int64)
    half = split_groups(y, groups, seed=seed)
    if half is None:
        return None
    g = np.asarray([str(x) for x in groups], dtype=object)
    sel = {
        m: _finite_auc(np.asarray(s, dtype=np.float64)[half], y[half]) for m, s in scores_by_method.items()
    }
    finite = [m for m in sel if np.isfinite(sel[m])]
    if not finite:
        return None
    chosen = max(finite, key=lambda m: sel[m])  # max keeps the first of equal AUCs
    rest = ~half
    report = metrics_with_intervals(
        np.asarray(scores_by_method[chosen], dtype=np.float64)[rest],
        y[rest],
        g[rest],
        n_boot=n_boot,
        seed=seed,
    )
    return {
        "method": chosen,
        "selection_auc_by_attack": sel,
        "report": report,
        "selection_groups": len(set(g[half].tolist())),
        "report_groups": len(set(g[rest].tolist())),
    }


def placebo_labels(
    labels: Sequence[int] | np.ndarray, groups: Sequence[Any] | np.ndarray, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray] | None:
    """The non-members' indices and placebo labels: their groups dealt into two halves (seeded), the
    first labelled 1 ("members"); None with fewer than 2 non-member groups.

    Example:
        >>> idx, lab = placebo_labels([1, 1, 0, 0, 0, 0], list("aabbcd"))
        >>> idx.tolist(), int(lab.sum()) in (1, 2)
        ([2, 3, 4, 5], True)
    """
    y = np.asarray(labels).astype(np.int64)
    idx = np.flatnonzero(y == 0)
    g = [str(groups[int(i)]) for i in idx]
    names = sorted(set(g))
    if len(names) < 2:
        return None
    rng = np.random.default_rng(seed + 17)
    chosen = set(rng.permutation(names)[: len(names) // 2].tolist())
    return idx, np.array([int(x in chosen) for x in g], dtype=np.int64)


def placebo_metrics(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[int] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    *,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> dict[str, Any] | None:
    """:func:`metrics_with_intervals` of one score on the placebo split (:func:`placebo_labels`) of
    the non-members; None without 2 non-member groups.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> m = placebo_metrics(rng.normal(size=400), np.r_[np.ones(200), np.zeros(200)], np.arange(400) // 2, n_boot=200)
        >>> m["auc_ci"][0] < 0.5 < m["auc_ci"][1]
        True
    """
    split = placebo_labels(labels, groups, seed=seed)
    if split is None:
        return None
    idx, lab = split
    s = np.asarray(scores, dtype=np.float64)[idx]
    return metrics_with_intervals(s, lab, [groups[int(i)] for i in idx], n_boot=n_boot, seed=seed)


def disjoint_group_sums(
    scores: np.ndarray,
    labels: np.ndarray,
    group_size: int,
    rng: np.random.Generator,
    *,
    limit: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each class's finite scores shuffled and cut into disjoint groups of ``group_size`` (a remainder
    is dropped; at most ``limit`` groups a class), summed: (group scores, group labels).

    Example:
        >>> s, y = disjoint_group_sums(np.arange(10.0), np.r_[np.ones(5), np.zeros(5)], 2, np.random.default_rng(0))
        >>> len(s), y.tolist(), float(s[y == 1].sum() + s[y == 0].sum()) <= 45.0
        (4, [1, 1, 0, 0], True)
    """
    out_s, out_y = [], []
    for cls in (1, 0):
        idx = np.flatnonzero((labels == cls) & np.isfinite(scores))
        k = len(idx) // group_size if group_size > 0 else 0
        if limit is not None:
            k = min(k, limit)
        perm = rng.permutation(idx)[: k * group_size].reshape(k, group_size)
        out_s.append(scores[perm].sum(axis=1))
        out_y.append(np.full(k, cls, dtype=np.int64))
    return np.concatenate(out_s), np.concatenate(out_y)


def group_level_metrics(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[int] | np.ndarray,
    groups: Sequence[Any] | np.ndarray,
    group_size: int,
    *,
    limit: int | None = None,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> dict[str, Any] | None:
    """The group attack (paper 002 A.4) on disjoint groups (:func:`disjoint_group_sums`):
    :func:`lmleak.attacks.roc.summarize` of the group sums, whose ``num_members`` /
    ``num_non_members`` are the true numbers of disjoint groups, and ``auc_ci`` from the users'
    bootstrap, the groups re-formed from each replicate's texts. None with fewer than one group a class.

    Example:
        >>> rng = np.random.default_rng(1)
        >>> y = np.r_[np.ones(100), np.zeros(100)]
        >>> m = group_level_metrics(rng.normal(size=200) + 0.3 * y, y, np.arange(200) // 4, 10, n_boot=200)
        >>> m["num_members"], m["num_non_members"], m["auc_ci"][0] <= m["auc"] <= m["auc_ci"][1]
        (10, 10, True)
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(np.int64)
    gs, gy = disjoint_group_sums(s, y, group_size, np.random.default_rng(seed + 1), limit=limit)
    if not gy.any() or gy.all():
        return None
    out: dict[str, Any] = {
        "num_excluded": int((~np.isfinite(s)).sum()),
        "num_groups": len({str(x) for x in groups}),
        **summarize(gs, gy),
    }
    for name, f in FPRS:  # its negatives are groups: "non-members, have 1" read as one non-member text
        if out[f"{name}_note"]:
            out[f"{name}_note"] = low_fpr_note(
                out["num_non_members"], f, unit=f"non-member groups of {group_size} texts"
            )

    def regrouped(metric: Any) -> tuple[float, float] | None:
        boot_rng = np.random.default_rng(seed + 2)

        def statistic(idx: np.ndarray) -> float:
            rs, ry = disjoint_group_sums(s[idx], y[idx], group_size, boot_rng, limit=limit)
            return float("nan") if not ry.any() or ry.all() else float(metric(rs, ry))

        return stratified_group_bootstrap(statistic, y, groups, n_boot=n_boot, seed=seed)

    boot = {"auc_ci": regrouped(roc_auc)}
    for name, f in FPRS:
        boot[f"{name}_ci"] = None if out[name] is None else regrouped(lambda a, b, f=f: tpr_at_fpr(a, b, f))
    # independent units: the disjoint groups, but no more than the users whose texts fill them
    g = np.asarray([str(x) for x in groups], dtype=object)
    users = {c: len(set(g[(y == c) & np.isfinite(s)].tolist())) for c in (0, 1)}
    _at_boundary(out, boot, min(out["num_members"], users[1]), min(out["num_non_members"], users[0]))
    return out
