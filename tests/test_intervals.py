"""lmleak.intervals against independent computations: scipy's exact binomial interval, the
published Wilson examples, the ROC module's AUC, and the coverage a null statistic must have."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from lmleak.attacks.roc import roc_auc
from lmleak.intervals import (
    auc_mann_whitney,
    clopper_pearson_interval,
    group_bootstrap,
    grouped_bootstrap_auc,
    interval_record,
    wilson_interval,
)
from lmleak.scenarios import margins


def test_wilson_is_the_one_margins_reexports():
    assert margins.wilson_interval is wilson_interval
    # Newcombe 1998, Table I: 81/263 -> 0.2553-0.3662 (method 3)
    lo, hi = wilson_interval(81, 263)
    assert (round(lo, 4), round(hi, 4)) == (0.2553, 0.3662)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 562), (1, 562), (5, 10), (10, 10), (37, 120)])
def test_clopper_pearson_matches_scipys_exact_interval(k, n):
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    lo, hi = clopper_pearson_interval(k, n)
    assert lo == pytest.approx(ref.low, abs=1e-12)
    assert hi == pytest.approx(ref.high, abs=1e-12)


def test_empty_samples_give_no_interval_and_bad_counts_are_refused():
    assert clopper_pearson_interval(0, 0) is None
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        clopper_pearson_interval(3, 2)
    with pytest.raises(ValueError):
        clopper_pearson_interval(1, 2, level=1.5)


def test_mann_whitney_auc_equals_the_roc_modules_auc():
    rng = np.random.default_rng(3)
    s = np.round(rng.normal(size=300), 1)  # rounded: plenty of ties
    y = rng.integers(0, 2, size=300)
    assert auc_mann_whitney(s, y) == pytest.approx(roc_auc(s, y), abs=1e-12)


def test_group_bootstrap_by_hand_with_one_group_per_item_is_the_plain_bootstrap():
    values = np.arange(10.0)
    got = group_bootstrap(lambda i: values[i].mean(), list(range(10)), n_boot=200, seed=7)
    rng = np.random.default_rng(7)
    reps = np.array([values[rng.integers(0, 10, size=10)].mean() for _ in range(200)])
    assert got == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])))


def test_a_prolific_user_widens_the_interval_compared_with_treating_texts_as_independent():
    # 10 users; each user's texts share that user's value: 100 texts are really 10 samples
    rng = np.random.default_rng(0)
    user_value = rng.normal(size=10)
    groups = np.repeat(np.arange(10), 10)
    values = user_value[groups] + 0.01 * rng.normal(size=100)
    grouped = group_bootstrap(lambda i: values[i].mean(), groups, seed=1)
    naive = group_bootstrap(lambda i: values[i].mean(), np.arange(100), seed=1)
    assert (grouped[1] - grouped[0]) > 2.5 * (naive[1] - naive[0])


def test_grouped_auc_interval_covers_chance_for_a_null_score_about_95_percent_of_the_time():
    rng = np.random.default_rng(11)
    covered = 0
    trials = 60
    for t in range(trials):
        groups = np.repeat(np.arange(40), 3)
        labels = (groups < 20).astype(int)  # 20 member users, 20 non-member users
        user_effect = rng.normal(size=40)[groups]  # scores correlated within a user, unrelated to label
        scores = user_effect + 0.3 * rng.normal(size=groups.size)
        lo, hi = grouped_bootstrap_auc(scores, labels, groups, n_boot=200, seed=t)
        covered += lo <= 0.5 <= hi
    assert (
        covered / trials >= 0.85
    )  # nominal 0.95; percentile intervals run a little short at 20 users a side


def test_grouped_auc_interval_excludes_chance_for_a_strong_attack_and_needs_both_classes():
    rng = np.random.default_rng(5)
    labels = np.r_[np.ones(60), np.zeros(60)]
    scores = labels * 2.0 + rng.normal(size=120)
    lo, hi = grouped_bootstrap_auc(scores, labels, np.arange(120) // 2)
    assert lo > 0.8 and hi <= 1.0
    assert grouped_bootstrap_auc(scores[:60], labels[:60], np.arange(60)) is None


def test_interval_record_names_its_method():
    rec = interval_record(method="grouped bootstrap", unit="user", n_units=12, n_boot=1000)
    assert rec == {
        "method": "grouped bootstrap",
        "level": 0.95,
        "unit": "user",
        "n_units": 12,
        "n_boot": 1000,
    }


def test_the_sum_bootstrap_draws_as_the_group_bootstrap_with_one_item_per_group():
    from lmleak.intervals import bootstrap_sum_interval, group_bootstrap

    counts = np.array([0, 3, 0, 0, 1, 0, 7, 0, 0, 2, 0, 0])
    fast = bootstrap_sum_interval(counts, n_boot=500, seed=4)
    slow = group_bootstrap(lambda idx: float(counts[idx].sum()), list(range(12)), n_boot=500, seed=4)
    assert fast == slow
    lo, hi = fast
    assert lo <= counts.sum() <= hi
    assert bootstrap_sum_interval([2, 2, 2]) == (6.0, 6.0)  # every draw sums to the same
    with pytest.raises(ValueError):
        bootstrap_sum_interval([1], n_boot=0)


def test_the_unit_bootstrap_auc_draws_the_grouped_bootstraps_replicates_with_one_item_per_group():
    from lmleak.intervals import unit_bootstrap_auc

    rng = np.random.default_rng(3)
    scores = np.round(rng.normal(size=150), 1)  # ties on purpose
    labels = (rng.random(150) < 0.3).astype(int)
    fast = unit_bootstrap_auc(scores, labels, n_boot=300, seed=5)
    assert fast == grouped_bootstrap_auc(scores, labels, np.arange(150), n_boot=300, seed=5)
    lo, hi = fast
    assert lo <= auc_mann_whitney(scores, labels) <= hi
    assert unit_bootstrap_auc(scores, np.zeros(150)) is None


@pytest.mark.parametrize("max_cells", [0, 4_000_000])
def test_grouped_bootstrap_auc_is_the_stratified_bootstrap_of_the_rank_auc(monkeypatch, max_cells):
    """The group-pair win matrix (and, above its size limit, ranking every replicate) gives the
    same replicates as ranking the resampled texts directly: ties, uneven groups, 1-text groups."""
    import lmleak.intervals as iv
    from lmleak.intervals import few_groups_auc_interval, stratified_replicates

    monkeypatch.setattr(iv, "_MAX_WIN_CELLS", max_cells)
    rng = np.random.default_rng(7)
    s = np.round(rng.normal(size=130) + np.r_[np.full(70, 0.5), np.zeros(60)], 1)  # ties
    y = np.r_[np.ones(70), np.zeros(60)]
    g = np.r_[np.arange(70) // 3, 100 + rng.integers(0, 25, size=60)]  # uneven groups
    by_auc = grouped_bootstrap_auc(s, y, g, n_boot=300, seed=4)
    raw = stratified_replicates(lambda i: auc_mann_whitney(s[i], y[i]), y, g, n_boot=300, seed=4)
    by_stat = few_groups_auc_interval(
        auc_mann_whitney(s, y.astype(bool)), raw, 24, len(set(g[70:]))
    )  # 70 // 3 + 1
    assert by_auc == pytest.approx(by_stat, abs=1e-12)
    g[69] = 100  # a group with a member and non-members: it is resampled whole, as its first item's class
    mixed = grouped_bootstrap_auc(s, y, g, n_boot=300, seed=4)
    raw = stratified_replicates(lambda i: auc_mann_whitney(s[i], y[i]), y, g, n_boot=300, seed=4)
    _, pos, neg, _, _ = iv._class_groups(y.astype(bool), g)
    assert mixed == few_groups_auc_interval(auc_mann_whitney(s, y.astype(bool)), raw, pos.size, neg.size)


def test_every_stratified_replicate_keeps_each_classs_number_of_groups():
    from lmleak.intervals import stratified_group_bootstrap

    y = np.r_[np.ones(60), np.zeros(60)]
    g = np.arange(120) // 3
    # every replicate draws 20 groups of 3 per class: 60 positives and 60 negatives, always
    counts = []
    stratified_group_bootstrap(
        lambda i: counts.append(int(y[i].sum()) * 1000 + len(i)) or 0.0, y, g, n_boot=50
    )
    assert set(counts) == {60 * 1000 + 120}
    assert stratified_group_bootstrap(lambda i: 0.0, np.ones(4), [0, 0, 1, 1]) is None


# --- the boundary: a bootstrap of a sample without variation is a point (issue 26 polish) ---


def test_a_share_with_no_hits_gets_the_exact_interval_over_its_users_not_a_point():
    from lmleak.intervals import cluster_proportion_interval

    users = [f"u{i % 9}" for i in range(23)]  # 23 probes of 9 people, none reproduced
    (lo, hi), rule = cluster_proportion_interval([False] * 23, users)
    ref = binomtest(0, 9).proportion_ci(confidence_level=0.95, method="exact")  # 9 users, not 23 probes
    assert (lo, hi) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert hi == pytest.approx(1 - 0.025 ** (1 / 9), abs=1e-12)  # by hand: (1 - p)^9 = 0.025
    assert rule == "clopper-pearson: 0 of 9 users"
    (lo, hi), rule = cluster_proportion_interval([True] * 23, users)  # all hits: the mirror image
    assert (lo, hi) == pytest.approx((0.025 ** (1 / 9), 1.0), abs=1e-12) and rule.startswith("clopper")
    # one user, half the items hit: the bootstrap would say [0.5, 0.5]
    (lo, hi), rule = cluster_proportion_interval([True, False], ["a", "a"])
    assert lo < 0.01 and hi > 0.99 and rule == "clopper-pearson: 0.5 of 1 user"
    # variation between users: the bootstrap's interval joined with the design-effect one, no rule
    from lmleak.intervals import design_effect_interval

    h = [True, False, False, True, False, False]
    g = ["a", "b", "c", "d", "e", "f"]
    ci, rule = cluster_proportion_interval(h, g, n_boot=300, seed=2)
    boot = group_bootstrap(lambda i: np.asarray(h, float)[i].mean(), g, n_boot=300, seed=2)
    deff = design_effect_interval(np.asarray(h, float), np.ones(6))
    assert rule is None and ci == (min(boot[0], deff[0]), max(boot[1], deff[1]))
    assert cluster_proportion_interval([], []) == (None, None)


def test_the_fractional_clopper_pearson_runs_between_its_integer_neighbours():
    from lmleak.intervals import units_clopper_pearson

    for n in (1, 4, 17):
        for k in range(n):
            a, b = clopper_pearson_interval(k, n), clopper_pearson_interval(k + 1, n)
            assert units_clopper_pearson(k, n) == a
            mid = units_clopper_pearson(k + 0.5, n)
            assert a[0] <= mid[0] <= b[0] and a[1] <= mid[1] <= b[1]
    with pytest.raises(ValueError):
        units_clopper_pearson(2.5, 2)


def test_the_boundary_interval_of_a_rate_and_of_an_auc():
    from lmleak.intervals import boundary_auc_interval, boundary_proportion_interval

    ref = binomtest(0, 23).proportion_ci(confidence_level=0.95, method="exact")
    ci, rule = boundary_proportion_interval(0.0, 23, (0.0, 0.0))
    assert ci == pytest.approx((0.0, ref.high)) and rule == "clopper-pearson: 0 of 23 users"
    ci, _ = boundary_proportion_interval(0.0, 23, (0.0, 0.4))  # a wider bootstrap is kept
    assert ci == (0.0, 0.4)
    assert boundary_proportion_interval(0.3, 23, (0.1, 0.5)) == ((0.1, 0.5), None)
    assert boundary_proportion_interval(None, 23, None) == (None, None)
    # AUC 1 with 30 member users and 12 non-member users: 12 independent pairs, all won
    ref = binomtest(12, 12).proportion_ci(confidence_level=0.95, method="exact")
    ci, rule = boundary_auc_interval(1.0, 30, 12, (1.0, 1.0))
    assert ci == pytest.approx((ref.low, 1.0)) and rule == "clopper-pearson: 12 of 12 user pairs"


def test_a_count_of_no_leaks_gets_the_most_users_that_could_leak_not_zero():
    from lmleak.intervals import bootstrap_sum_interval, count_interval

    for users in (1, 40, 5000):
        (lo, hi), rule = count_interval([0] * users)
        assert lo == 0.0 and hi == pytest.approx(users * (1 - 0.025 ** (1 / users)), rel=1e-12)
        assert "0 of" in rule and "one leak each" in rule
    assert count_interval([0] * 10**6)[0][1] == pytest.approx(-np.log(0.025), rel=1e-4)  # Poisson's 3.69
    # 2 of 6 users leaked (3 and 1): the hull of the bootstrap and 6 CP(2 of 6) x [1, 3] (the t
    # interval of the mean, 2 +- 12.7, clipped to the range)
    counts = [0, 3, 0, 1, 0, 0]
    ref = binomtest(2, 6).proportion_ci(confidence_level=0.95, method="exact")
    boot = bootstrap_sum_interval(counts, n_boot=300)
    ci, rule = count_interval(counts, n_boot=300)
    assert ci == pytest.approx((min(boot[0], 6 * ref.low * 1), max(boot[1], 6 * ref.high * 3)))
    assert rule == "2 of 6 users: clopper-pearson leakers x leaks per leaker"
    (lo, hi), _ = count_interval([0] * 9 + [4], n_boot=300)  # one leaker of 10: 10 CP(1 of 10) x 4
    ref = binomtest(1, 10).proportion_ci(confidence_level=0.95, method="exact")
    assert hi == pytest.approx(max(10 * ref.high * 4, bootstrap_sum_interval([0] * 9 + [4], n_boot=300)[1]))
    # many leakers: the bootstrap is the wider one and stands alone
    many = [1, 2] * 200 + [0] * 400
    assert count_interval(many, n_boot=300) == (bootstrap_sum_interval(many, n_boot=300), None)
    assert count_interval([]) == (None, None)


def test_a_count_of_no_leaks_charges_the_users_that_could_leak_their_capacity():
    """0 of 200 users leaked: m = 200 CP_up(0 of 200) = 3.655 users could, each with at most its
    capacity of leaks; the bound is the 3 largest capacities and 0.655 of the fourth (by hand)."""
    from lmleak.intervals import count_interval

    cap = np.r_[np.full(196, 2.0), 50.0, 40.0, 30.0, 20.0]
    m = 200 * (1 - 0.025 ** (1 / 200))
    (lo, hi), rule = count_interval(np.zeros(200), capacity=cap)
    assert lo == 0.0 and hi == pytest.approx(50 + 40 + 30 + (m - 3) * 20, rel=1e-12)
    assert rule.startswith("0 of 200 users: the 3.66 users") and rule.endswith("(their capacity)")
    assert count_interval(np.zeros(3), capacity=np.zeros(3))[0] == (0.0, 0.0)  # nothing could leak
    # capacity 1 each is the one-leak-each rule
    assert count_interval(np.zeros(40), capacity=np.ones(40))[0][1] == pytest.approx(
        count_interval(np.zeros(40))[0][1]
    )
    with pytest.raises(ValueError):
        count_interval([0, 0], capacity=[1])


def test_the_boundary_rule_restores_coverage_where_the_bootstrap_alone_has_none():
    """Each of 40 users leaks with chance 0.02 (all three of a user's probes together): about 45 % of
    samples have no hit, where the bootstrap alone gives [0, 0]; with the rule coverage is ~95 %."""
    from lmleak.intervals import cluster_proportion_interval

    rng = np.random.default_rng(3)
    users = np.repeat(np.arange(40), 3)
    covered = bootstrap_covered = 0
    trials = 150
    for t in range(trials):
        hits = (rng.random(40) < 0.02)[users]
        (lo, hi), _ = cluster_proportion_interval(hits, users, n_boot=100, seed=t)
        covered += lo <= 0.02 <= hi
        blo, bhi = group_bootstrap(lambda i, h=hits: h[i].mean(), users, n_boot=100, seed=t)
        bootstrap_covered += blo <= 0.02 <= bhi
    assert covered / trials >= 0.9 and bootstrap_covered / trials < 0.7


def test_the_auc_interval_covers_chance_95_times_in_100_with_few_users_a_side(monkeypatch):
    """A null score with strong user effects (each user's texts share an offset), 6 users a side: the
    percentile cluster bootstrap alone covered 0.5 in 181 of 200 runs (the demo's placebo AUCs
    scattered past their intervals); widened for few groups 189 of 200; at 30 a side the widening
    is small (factor 1.04). The first runs are checked against the slow stratified bootstrap."""
    import lmleak.intervals as iv
    from lmleak.intervals import few_groups_auc_interval, few_groups_widened, stratified_replicates

    rng = np.random.default_rng(1)
    data = []
    for _ in range(200):
        users = np.repeat(np.arange(12), 7)
        s = rng.normal(size=12)[users] + rng.normal(size=users.size)
        data.append((s, (users < 6).astype(int), users))
    widened = [grouped_bootstrap_auc(s, y, u, n_boot=400, seed=k) for k, (s, y, u) in enumerate(data)]
    for k, (s, y, u) in enumerate(data[:5]):  # the oracle: rank every resampled text, then widen
        raw = stratified_replicates(
            lambda i, s=s, y=y: auc_mann_whitney(s[i], y[i]), y, u, n_boot=400, seed=k
        )
        est = auc_mann_whitney(s, y.astype(bool))
        assert widened[k] == pytest.approx(few_groups_auc_interval(est, raw, 6, 6))
        assert widened[k][0] <= few_groups_widened(est, iv._percentile(raw, 0.95), 6, 6)[0]
    monkeypatch.setattr(iv, "few_groups_auc_interval", lambda est, reps, *a, **k: iv._percentile(reps, 0.95))
    raw_all = [grouped_bootstrap_auc(s, y, u, n_boot=400, seed=k) for k, (s, y, u) in enumerate(data)]
    covered_raw = sum(lo <= 0.5 <= hi for lo, hi in raw_all)
    covered = sum(lo <= 0.5 <= hi for lo, hi in widened)
    assert covered_raw < covered and covered_raw / 200 < 0.92  # the bootstrap alone is too narrow here
    assert 0.92 <= covered / 200 <= 0.99
    lo, hi = few_groups_widened(0.6, (0.5, 0.7), 30, 30)
    assert 0.1 < 0.6 - lo < 0.105 and hi - 0.6 == pytest.approx(0.6 - lo)


def test_the_auc_interval_near_1_is_joined_with_the_logit_interval_by_hand():
    """Estimate 0.95, 6 a side, replicates with sd 0.03: logit(0.95) = 2.944, half-width on the logit
    scale sqrt(6/5) t(10) 0.03 / (0.95 x 0.05) = 1.542, so the lower end is expit(1.402) = 0.8025,
    well below the widened percentile interval's."""
    import math

    from scipy.stats import t

    from lmleak.intervals import few_groups_auc_interval, few_groups_widened

    reps = 0.95 + 0.03 * np.array([-1.0, 1.0] * 500)  # sd 0.03 (ddof 1: 0.030015)
    sd = reps.std(ddof=1)
    half = math.sqrt(6 / 5) * t.ppf(0.975, 10) * sd / (0.95 * 0.05)
    lo_by_hand = 1 / (1 + math.exp(-(math.log(0.95 / 0.05) - half)))
    assert lo_by_hand == pytest.approx(0.8025, abs=1e-3)
    lo, hi = few_groups_auc_interval(0.95, reps, 6, 6)
    widened = few_groups_widened(0.95, (0.92, 0.98), 6, 6)
    assert lo == pytest.approx(lo_by_hand, rel=1e-12) and lo < widened[0]
    assert hi == pytest.approx(max(widened[1], 1 / (1 + math.exp(-(math.log(19) + half)))))
    # at 0 or 1 (no logit) and with one group a side, the widened interval stands
    assert few_groups_auc_interval(1.0, np.ones(10), 6, 6) == few_groups_widened(1.0, (1.0, 1.0), 6, 6)
    assert few_groups_auc_interval(0.7, reps, 1, 6) == (0.0, 1.0)
    assert few_groups_auc_interval(0.7, None, 6, 6) is None


def test_the_design_effect_interval_by_hand():
    """8 hits of 27 probes over 9 users (3 each): p = 8/27, the ratio estimator's cluster variance
    v = 9/8 x sum (h - p m)^2 / 27^2, n_eff = p(1-p)/v = 15.2, Clopper-Pearson at t(8)'s level."""
    from scipy.stats import beta, norm, t

    from lmleak.intervals import design_effect_interval

    h, m = np.array([1, 0, 2, 0, 1, 3, 0, 1, 0.0]), np.full(9, 3.0)
    p = 8 / 27
    v = 9 / 8 * sum((hg - p * 3) ** 2 for hg in h) / 27**2
    n_eff = p * (1 - p) / v
    assert n_eff == pytest.approx(15.2, abs=1e-9)
    alpha = 2 * norm.sf(t.ppf(0.975, 8))
    ref = (
        beta.ppf(alpha / 2, p * n_eff, n_eff - p * n_eff + 1),
        beta.ppf(1 - alpha / 2, p * n_eff + 1, n_eff - p * n_eff),
    )
    assert design_effect_interval(h, m) == pytest.approx(ref, rel=1e-12)
    # independent trials (one per user): n_eff = N (G - 1) / G, close to the exact interval of 7 of 30
    lo, hi = design_effect_interval(np.r_[np.ones(7), np.zeros(23)], np.ones(30))
    exact = binomtest(7, 30).proportion_ci(confidence_level=0.95, method="exact")
    assert abs(lo - exact.low) < 0.01 and abs(hi - exact.high) < 0.02
    assert design_effect_interval([0, 0, 0], [2, 2, 2]) is None  # no variation: the boundary rule's case
    assert design_effect_interval([1], [2]) is None  # one group


# --- coverage, measured (issue 32 item 4): one slow simulation per interval, fixed seeds ---


def _auc_sample(rng, g, auc, texts=7):
    """g users a side, 7 texts each; each user's texts share an N(0, 1) offset, each text adds N(0, 1),
    members are shifted by mu: a member's text beats a non-member's with probability Phi(mu / 2)."""
    from scipy.stats import norm

    users = np.repeat(np.arange(2 * g), texts)
    y = (users < g).astype(int)
    s = rng.normal(size=2 * g)[users] + rng.normal(size=users.size) + 2 * norm.ppf(auc) * y
    return s, y, users


def _auc_coverage(g, auc, runs, seed, n_boot=400):
    from lmleak.intervals import boundary_auc_interval

    rng = np.random.default_rng(seed)
    hits, widths = 0, 0.0
    for k in range(runs):
        s, y, u = _auc_sample(rng, g, auc)
        est = auc_mann_whitney(s, y)
        ci, _ = boundary_auc_interval(est, g, g, grouped_bootstrap_auc(s, y, u, n_boot=n_boot, seed=k))
        hits += ci[0] <= auc <= ci[1]
        widths += ci[1] - ci[0]
    return hits / runs, widths / runs


@pytest.mark.slow
def test_the_auc_interval_covers_95_percent_from_chance_to_0_95_with_3_to_30_people_a_side():
    """Each cell 150 runs (about 90 s in all): coverage >= 0.93 everywhere; docs/GLOSSARY.md has the table."""
    table = {}
    for g in (3, 6, 12, 30):
        for auc in (0.5, 0.7, 0.85, 0.93, 0.95):
            table[g, auc] = _auc_coverage(g, auc, runs=150, seed=1000 * g + int(auc * 100))
    print({k: round(v[0], 3) for k, v in table.items()})
    assert all(cov >= 0.93 for cov, _ in table.values()), table


def _clustered_counts(rng, users, leakers, runs):
    """``runs`` corpora of ``users`` users, each leaking with probability leakers / users; a leaking
    user leaks 5-10 sequences of their 10-60 unique ones (the capacity)."""
    leak = rng.random((runs, users)) < leakers / users
    capacity = rng.integers(10, 61, size=(runs, users))
    counts = np.where(leak, rng.integers(5, 11, size=(runs, users)), 0)
    return counts, capacity, users * (leakers / users) * 7.5


@pytest.mark.slow
def test_the_count_interval_covers_clustered_leaks():
    """Leaking users leak 5-10 sequences each; the expected count is users x p x 7.5. With the old
    rule (one leak each) a count of 0 covered 0.33-0.64; now coverage >= 0.93 over every cell."""
    from lmleak.intervals import count_interval

    rng = np.random.default_rng(32)
    table = {}
    for users in (20, 200):
        for leakers in (0.5, 1, 3, 10):
            counts, capacity, truth = _clustered_counts(rng, users, leakers, runs=300)
            covered = 0
            for k in range(300):
                (lo, hi), _ = count_interval(counts[k], capacity=capacity[k], n_boot=500, seed=k)
                covered += lo <= truth <= hi
            table[users, leakers] = covered / 300
    print(table)
    assert all(c >= 0.93 for c in table.values()), table


@pytest.mark.slow
def test_the_share_interval_covers_with_few_users():
    """9 (and 5, 20) users with 1-7 probes each, per-user rates Beta around p with intra-user
    correlation 0.1 and 0.5: the cluster bootstrap alone covered p = 0.3 in 0.87-0.88 of runs."""
    from lmleak.intervals import cluster_proportion_interval

    rng = np.random.default_rng(9)
    table = {}
    for g in (5, 9, 20):
        for p, rho in ((0.3, 0.1), (0.3, 0.5), (0.1, 0.1), (0.5, 0.5)):
            covered = 0
            a, b = p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho
            for k in range(200):
                m = rng.integers(1, 8, size=g)
                hits = rng.random(m.sum()) < np.repeat(rng.beta(a, b, size=g), m)
                ci, _ = cluster_proportion_interval(hits, np.repeat(np.arange(g), m), n_boot=400, seed=k)
                covered += ci[0] <= p <= ci[1]
            table[g, p, rho] = covered / 200
    print(table)
    assert all(c >= 0.93 for c in table.values()), table


@pytest.mark.parametrize(
    ("x1", "n1", "x2", "n2", "lo", "hi"),
    [  # Newcombe (1998), Table II, method 10: examples (a), (b), (d), (e), (f)
        (56, 70, 48, 80, 0.0524, 0.3339),
        (9, 10, 3, 10, 0.1705, 0.8090),
        (5, 56, 0, 29, -0.0381, 0.1926),
        (0, 10, 0, 20, -0.1611, 0.2775),
        (10, 10, 0, 20, 0.6791, 1.0000),
    ],
)
def test_newcombe_difference_matches_the_published_worked_examples(x1, n1, x2, n2, lo, hi):
    from lmleak.intervals import newcombe_difference_interval

    got = newcombe_difference_interval(x1, n1, x2, n2)
    assert got is not None
    assert round(got[0], 4) == lo and round(got[1], 4) == hi


def _exact_coverage(interval, n1, n2, p1, p2):
    """The slow oracle: the probability, summed over every outcome (x1, x2), that the interval holds
    the true difference."""
    from scipy.stats import binom

    cover = 0.0
    for x1 in range(n1 + 1):
        for x2 in range(n2 + 1):
            ci = interval(x1, n1, x2, n2)
            if ci[0] - 1e-12 <= p1 - p2 <= ci[1] + 1e-12:
                cover += binom.pmf(x1, n1, p1) * binom.pmf(x2, n2, p2)
    return cover


def test_newcombe_difference_has_its_coverage_at_small_n_where_wald_does_not():
    """Exact coverage by enumeration of every outcome, at 8 and 12 people a side, over a grid of
    true shares (small ones, as a leak rate is): Newcombe's hybrid holds about 95 % on average and
    never falls far; the Wald interval falls well short near 0."""
    from lmleak.intervals import newcombe_difference_interval

    def wald(x1, n1, x2, n2):
        p1, p2 = x1 / n1, x2 / n2
        h = 1.959963984540054 * np.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
        return p1 - p2 - h, p1 - p2 + h

    grid = [(p1, p2) for p1 in (0.02, 0.1, 0.3, 0.5) for p2 in (0.02, 0.1, 0.3)]
    newc = [_exact_coverage(newcombe_difference_interval, 8, 12, p1, p2) for p1, p2 in grid]
    walds = [_exact_coverage(wald, 8, 12, p1, p2) for p1, p2 in grid]
    assert sum(newc) / len(newc) >= 0.93
    assert min(newc) >= 0.85
    assert sum(walds) / len(walds) < sum(newc) / len(newc) - 0.05
