"""The honest numbers of a membership run against direct computations: intervals equal to the
interval module's, a split-half choice that never looks at the reported half (planted cases), a
placebo that uses only the non-members, and group attacks on disjoint groups with their true counts."""

from __future__ import annotations

import numpy as np
import pytest

from lmleak.attacks.mia_stats import (
    disjoint_group_sums,
    group_level_metrics,
    metrics_with_intervals,
    placebo_labels,
    placebo_metrics,
    split_groups,
    split_half_headline,
)
from lmleak.attacks.roc import roc_auc, tpr_at_fpr
from lmleak.intervals import grouped_bootstrap_auc, stratified_group_bootstrap


def _users(n_per_side, per_user):
    """Members then non-members, ``per_user`` consecutive texts per user."""
    y = np.r_[np.ones(n_per_side, dtype=np.int64), np.zeros(n_per_side, dtype=np.int64)]
    return y, np.array([f"{'m' if c else 'n'}{i // per_user}" for i, c in enumerate(y)])


def test_metrics_and_intervals_equal_the_roc_and_interval_modules_on_the_finite_scores():
    rng = np.random.default_rng(0)
    y, g = _users(1100, 4)
    s = rng.normal(size=y.size) + 0.4 * y
    s[[3, 1500]] = np.nan  # e.g. Min-K% of a text too short for k
    m = metrics_with_intervals(s, y, g, n_boot=100, seed=3)
    ok = np.isfinite(s)
    assert m["num_excluded"] == 2 and m["num_members"] + m["num_non_members"] == y.size - 2
    assert m["auc"] == pytest.approx(roc_auc(s[ok], y[ok]))
    assert m["auc_ci"] == list(grouped_bootstrap_auc(s[ok], y[ok], g[ok], n_boot=100, seed=3))
    # 1,099 non-members: TPR at 1 % FPR is reported, with its interval; at 0.1 % it is not
    assert m["tpr_at_1pct_fpr"] == pytest.approx(tpr_at_fpr(s[ok], y[ok], 0.01))
    want = stratified_group_bootstrap(
        lambda i: tpr_at_fpr(s[ok][i], y[ok][i], 0.01), y[ok], g[ok], n_boot=100, seed=3
    )
    assert m["tpr_at_1pct_fpr_ci"] == list(want)
    assert m["tpr_at_0.1pct_fpr"] is None and m["tpr_at_0.1pct_fpr_ci"] is None
    only_members = metrics_with_intervals(s[:10], y[:10], g[:10], n_boot=10)
    assert only_members["auc"] is None and only_members["auc_ci"] is None


def test_split_groups_keeps_each_group_in_one_half_and_halves_each_class():
    y, g = _users(60, 3)  # 20 users a side
    half = split_groups(y, g, seed=5)
    for user in set(g):
        assert len(set(half[g == user].tolist())) == 1
    assert len(set(g[half & (y == 1)])) == 10 and len(set(g[half & (y == 0)])) == 10
    assert np.array_equal(half, split_groups(y, g, seed=5)) and not np.array_equal(
        half, split_groups(y, g, seed=6)
    )
    assert (
        split_groups(y[:9].tolist() + y[-9:].tolist(), list(g[:9]) + list(g[-9:])) is None
    )  # 3 users a side


def _planted(rng, y, half, *, lucky_on):
    """'real': AUC about 0.76 everywhere; 'lucky': perfect on the half `lucky_on`, noise elsewhere."""
    real = rng.normal(size=y.size) + 1.0 * y
    lucky = rng.normal(size=y.size)
    where = half if lucky_on == "selection" else ~half
    lucky[where] = np.where(y[where] == 1, 10.0, -10.0) + rng.normal(size=where.sum())
    return {"real": real, "lucky": lucky}


def test_split_half_reports_the_chosen_method_on_the_other_half_only():
    rng = np.random.default_rng(2)
    y, g = _users(400, 2)
    half = split_groups(y, g, seed=0)
    # a method that shines on the selection half is chosen, and reported where it is noise: the
    # headline is not inflated by the choice (the best raw AUC over all texts is)
    sc = _planted(rng, y, half, lucky_on="selection")
    h = split_half_headline(sc, y, g, seed=0, n_boot=100)
    assert h["method"] == "lucky" and h["selection_auc_by_attack"]["lucky"] > 0.99
    assert h["report"]["auc"] == pytest.approx(roc_auc(sc["lucky"][~half], y[~half]))
    assert abs(h["report"]["auc"] - 0.5) < 0.1 < roc_auc(sc["lucky"], y) - 0.5
    assert h["report"]["auc_ci"][0] < 0.5 < h["report"]["auc_ci"][1]
    assert (h["selection_groups"], h["report_groups"]) == (200, 200)
    # a method that shines only on the reported half is not chosen: the choice never saw that half
    sc = _planted(rng, y, half, lucky_on="report")
    h = split_half_headline(sc, y, g, seed=0, n_boot=100)
    assert h["method"] == "real" and roc_auc(sc["lucky"], y) > roc_auc(sc["real"], y)
    assert h["report"]["auc"] == pytest.approx(roc_auc(sc["real"][~half], y[~half]))


def test_the_placebo_uses_only_non_members_split_by_group_and_sits_at_chance_for_a_null_score():
    rng = np.random.default_rng(3)
    y, g = _users(300, 3)  # 100 non-member users
    idx, lab = placebo_labels(y, g, seed=0)
    assert (y[idx] == 0).all() and len(idx) == 300 and lab.sum() == 150  # 50 users of 3 texts
    for user in set(g[idx]):
        assert len(set(lab[g[idx] == user].tolist())) == 1
    s = rng.normal(size=y.size) + 3.0 * y  # members far above: the placebo never sees them
    p = placebo_metrics(s, y, g, seed=0, n_boot=200)
    assert p["auc"] == pytest.approx(roc_auc(s[idx], lab))
    assert p["auc_ci"][0] < 0.5 < p["auc_ci"][1]
    s2 = s.copy()
    s2[y == 1] = -s2[y == 1]
    assert placebo_metrics(s2, y, g, seed=0, n_boot=200) == p
    assert placebo_metrics(s, y, np.where(y == 1, g, "one user"), seed=0) is None


def test_groups_are_disjoint_and_counted_as_they_are():
    rng = np.random.default_rng(4)
    s = rng.normal(size=2000)
    y = np.r_[np.ones(1000, dtype=np.int64), np.zeros(1000, dtype=np.int64)]
    gs, gy = disjoint_group_sums(s, y, 20, np.random.default_rng(0))
    assert (gy == 1).sum() == 50 and (gy == 0).sum() == 50
    # disjoint: the group sums of a class add up to the class's total (every text used once)
    assert gs[gy == 1].sum() == pytest.approx(s[:1000].sum()) and gs[gy == 0].sum() == pytest.approx(
        s[1000:].sum()
    )
    g = np.array([f"u{i // 5}" for i in range(2000)])
    m = group_level_metrics(s, y, g, 20, seed=0, n_boot=200)
    assert (m["num_members"], m["num_non_members"]) == (50, 50)  # not 1,000 overlapping groups
    assert m["auc_ci"][0] < 0.5 < m["auc_ci"][1]
    # a null score's group AUC spreads like 50 groups a side: a 95 % interval about ±0.11 wide
    assert 0.12 < m["auc_ci"][1] - m["auc_ci"][0] < 0.35
    assert group_level_metrics(s, y, g, 20, limit=10, seed=0, n_boot=50)["num_members"] == 10
    # TPR at low FPR needs 1,000 / 10,000 negatives, which here are the 50 non-member groups
    assert m["tpr_at_1pct_fpr_note"] == "needs >= 1,000 non-member groups of 20 texts, have 50"


def test_a_perfect_attack_and_a_tpr_of_zero_get_exact_intervals_over_the_groups_not_points():
    """AUC 1 on 12 member users and 340 non-member users: the bootstrap says [1, 1]; 12 disjoint
    (member, non-member) user pairs all won bound it below by the exact interval of 12 of 12."""
    from scipy.stats import binomtest

    y = np.r_[np.ones(36, dtype=np.int64), np.zeros(1020, dtype=np.int64)]  # 1,020: TPR at 1 % is reported
    g = np.array([f"m{i // 3}" for i in range(36)] + [f"n{i // 3}" for i in range(1020)])
    s = np.where(y == 1, 10.0, 0.0) + np.arange(y.size) * 1e-3
    m = metrics_with_intervals(s, y, g, n_boot=100)
    assert grouped_bootstrap_auc(s, y, g, n_boot=100) == (1.0, 1.0)  # what it printed before
    ref = binomtest(12, 12).proportion_ci(confidence_level=0.95, method="exact")
    assert m["auc"] == 1.0 and m["auc_ci"] == pytest.approx([ref.low, 1.0], abs=1e-12)
    assert m["auc_ci_rule"] == "clopper-pearson: 12 of 12 group pairs"
    assert m["tpr_at_1pct_fpr"] == 1.0 and m["tpr_at_1pct_fpr_ci"][0] == pytest.approx(0.025 ** (1 / 12))
    # a score that ranks every member last: TPR 0 at 1 % FPR over 12 member users, AUC 0 the mirror
    low = metrics_with_intervals(-s, y, g, n_boot=100)
    ref0 = binomtest(0, 12).proportion_ci(confidence_level=0.95, method="exact")
    assert low["tpr_at_1pct_fpr"] == 0.0 and low["tpr_at_1pct_fpr_ci"] == pytest.approx([0.0, ref0.high])
    assert low["tpr_at_1pct_fpr_ci_rule"] == "clopper-pearson: 0 of 12 groups"
    assert low["auc"] == 0.0 and low["auc_ci"] == pytest.approx([0.0, ref0.high])
    # in between the bootstrap's own interval stands, with no rule
    rng = np.random.default_rng(1)
    mid = metrics_with_intervals(rng.normal(size=y.size) + y, y, g, n_boot=100)
    assert mid["auc_ci_rule"] is None and 0.0 < mid["auc_ci"][0] < mid["auc"] < mid["auc_ci"][1] < 1.0


def test_a_perfect_group_attack_counts_no_more_units_than_users():
    """Disjoint groups of 2 texts from 4 member users (3 texts each): 6 groups, but 4 users."""
    y = np.r_[np.ones(12, dtype=np.int64), np.zeros(12, dtype=np.int64)]
    g = np.array([f"m{i // 3}" for i in range(12)] + [f"n{i // 3}" for i in range(12)])
    m = group_level_metrics(np.where(y == 1, 5.0, 0.0) + np.arange(24) * 1e-3, y, g, 2, n_boot=50)
    assert m["num_members"] == 6 and m["auc"] == 1.0
    assert m["auc_ci_rule"] == "clopper-pearson: 4 of 4 group pairs"
    assert m["auc_ci"][0] == pytest.approx(0.025 ** (1 / 4))
