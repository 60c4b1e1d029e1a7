"""Members vs controls in probing (issue 14) and the Wilcoxon test on raw likelihoods (issue 15)."""

from __future__ import annotations

import math
from math import comb

import pytest

from lmleak.intervals import BOUNDARY_RULE
from lmleak.probe.metrics import fisher_greater_p, mann_whitney_greater_p, wilcoxon_p
from lmleak.probe.probing import compare_groups


def test_fisher_equals_the_hypergeometric_tail_by_hand():
    # 8 of 10 members vs 1 of 10 controls: P(X >= 8), X ~ Hypergeometric(N=20, K=9 hits, n=10 members)
    tail = sum(comb(9, x) * comb(11, 10 - x) for x in range(8, 10)) / comb(20, 10)
    assert fisher_greater_p(8, 10, 1, 10) == pytest.approx(tail)


def test_mann_whitney_equals_the_exact_count_by_hand():
    # every member above every control: only 1 of the C(8, 4) = 70 orderings is as extreme
    assert mann_whitney_greater_p([5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0]) == pytest.approx(1 / 70)


def test_wilcoxon_on_raw_likelihoods_differs_from_log_likelihoods_as_by_hand():
    target, null = [0.9, 1e-5, 0.5], [0.1, 1e-9, 0.6]
    # raw |d|: 1e-5 (rank 1), 0.1 (rank 2, negative), 0.8 (rank 3): W+ = 4, P(W+ >= 4 | n=3) = 3/8
    assert wilcoxon_p(target, null) == pytest.approx(3 / 8)
    # log |d|: 0.18 (rank 1, negative), 2.2 (rank 2), 9.2 (rank 3): W+ = 5, P(W+ >= 5) = 2/8
    assert wilcoxon_p([math.log(x) for x in target], [math.log(x) for x in null]) == pytest.approx(2 / 8)


def _rows(subject, member_like):
    lik, null = (0.5, 0.01) if member_like else (0.01, 0.01)
    return (
        {
            "subject_id": subject,
            "target_type": "email",
            "likelihood": lik,
            "null_likelihood": null,
            "log_likelihood": math.log(lik),
            "null_log_likelihood": math.log(null),
        },
        {"subject_id": subject, "target_type": "email", "exact_match": member_like},
    )


def test_groups_report_members_and_controls_side_by_side_where_a_pooled_test_would_blur_them():
    lrows, grows, users = [], [], {}
    for i in range(12):
        member = i < 6
        lr, gr = _rows(f"s{i}", member)
        lr["null_likelihood"] = 0.01 + 0.001 * i  # distinct differences, so the signed ranks are untied
        lr["null_log_likelihood"] = math.log(lr["null_likelihood"])
        lrows.append(lr)
        grows.append(gr)
        users[f"s{i}"] = f"u{i}"
    out = compare_groups(lrows, grows, controls={f"u{i}" for i in range(6, 12)}, subject_user=users)
    m, c = out["members"], out["controls"]
    assert (m["exact_match_rate"], c["exact_match_rate"]) == (1.0, 0.0)
    assert out["tests"]["exact_match_fisher_p"] == pytest.approx(1 / comb(12, 6))
    assert m["wilcoxon_p"] == pytest.approx(1 / 64)  # all 6 member differences positive
    assert c["wilcoxon_p"] == pytest.approx(1.0)  # every control: target below null
    assert out["tests"]["log_ratio_mann_whitney_p"] < 0.01


@pytest.mark.parametrize(
    ("generated", "expected"),
    [
        # two numbers: 201 is not the area code of 555-0142 (the old metric joined their digits)
        (
            "call 201 or 555-0142",
            {"area_code": False, "first_7": False, "edit_le_2": False, "edit_le_3": True},
        ),
        ("(201) 555-0142.", {"area_code": True, "first_9": True, "edit_le_1": True}),
        (
            "tel +1 201 555 0142",
            {"area_code": True, "first_9": True, "edit_le_1": True},
        ),  # a window skips the +1
        ("201-555-0143 or 303-555-0142", {"area_code": True, "first_9": True, "edit_le_1": True}),
        ("no number here", {"area_code": False, "edit_le_3": False}),
    ],
)
def test_phone_metrics_look_at_one_number_at_a_time(generated, expected):
    from lmleak.probe.metrics import phone_metrics

    got = phone_metrics(generated, "201-555-0142")
    assert {k: got[k] for k in expected} == expected


# ------------------------------------------------------------ intervals of exact match (issue 26 item 4)


def test_with_one_pair_per_user_the_hit_rate_interval_is_the_plain_bootstrap_joined_with_clopper_pearson():
    """Issue 32: the share's interval is the hull of the cluster bootstrap and Clopper-Pearson at the
    design-effect sample size; with one pair per user n_eff = N (G - 1) / G = 29, at t(29)'s level."""
    import numpy as np
    from scipy.stats import beta, norm, t

    from lmleak.probe.metrics import hit_rate_interval_and_rule

    hits = np.array([True] * 7 + [False] * 23)
    users = [f"u{i}" for i in range(30)]
    rng = np.random.default_rng(0)  # the plain bootstrap of the mean, by hand, with the same draws
    boot = np.quantile([hits[rng.integers(0, 30, size=30)].mean() for _ in range(1000)], [0.025, 0.975])
    alpha = 2 * norm.sf(t.ppf(0.975, 29))
    x = 7 / 30 * 29
    cp = (beta.ppf(alpha / 2, x, 29 - x + 1), beta.ppf(1 - alpha / 2, x + 1, 29 - x))
    assert hit_rate_interval_and_rule(hits, users)[0] == pytest.approx(
        [min(boot[0], cp[0]), max(boot[1], cp[1])]
    )
    lo, hi = hit_rate_interval_and_rule(hits, users)[0]
    assert lo < 7 / 30 < hi


def test_a_prolific_user_counts_once_per_draw_and_widens_the_interval():
    from lmleak.probe.metrics import hit_rate_interval_and_rule

    # 40 pairs: one user holds 20 of them, all hits; 20 other users one miss each
    hits = [True] * 20 + [False] * 20
    grouped = hit_rate_interval_and_rule(hits, ["big"] * 20 + [f"u{i}" for i in range(20)])[0]
    per_pair = hit_rate_interval_and_rule(hits, [f"p{i}" for i in range(40)])[0]
    assert grouped[1] - grouped[0] > 1.5 * (per_pair[1] - per_pair[0])
    with pytest.raises(ValueError):
        hit_rate_interval_and_rule([True], [])


def test_exact_match_intervals_give_the_pooled_rate_and_each_groups_over_their_users():
    import numpy as np

    from lmleak.probe.metrics import hit_rate_interval_and_rule
    from lmleak.probe.probing import exact_match_intervals

    # 10 users; member users u0..u5 each have two subjects, three target types per subject
    subjects, grows = [], []
    for i in range(10):
        for j in range(2 if i < 6 else 1):
            sid = f"s{i}-{j}"
            subjects.append({"subject_id": sid, "user_id": f"u{i}"})
            for t, hit in (("email", i < 4), ("phone", i < 2), ("address", False)):
                grows.append({"subject_id": sid, "target_type": t, "exact_match": hit})
                grows.append({"subject_id": sid, "target_type": t, "exact_match": False})  # a second template
    out = exact_match_intervals(grows, subjects, controls={"u6", "u7", "u8", "u9"})
    # the same pairs by hand: one per (subject, type), max over templates, owned by the subject's user
    pairs = {(g["subject_id"], g["target_type"]): False for g in grows}
    for g in grows:
        pairs[(g["subject_id"], g["target_type"])] |= g["exact_match"]
    keys = sorted(pairs, key=lambda k: (k[1], k[0]))  # groupby's order: target type, then subject
    users = [k[0].split("-")[0].replace("s", "u") for k in keys]
    hits = np.array([pairs[k] for k in keys])
    assert out["pii_exact_match_ci"] == hit_rate_interval_and_rule(hits, users)[0]
    member = np.array([u not in {"u6", "u7", "u8", "u9"} for u in users])
    members_users = [u for u, m in zip(users, member, strict=True) if m]
    assert (
        out["exact_match_ci_by_group"]["members"]
        == hit_rate_interval_and_rule(hits[member], members_users)[0]
    )
    # no control ever hit: not the bootstrap's point [0, 0] but the exact interval of 0 of 4 users
    from scipy.stats import binomtest

    ref = binomtest(0, 4).proportion_ci(confidence_level=0.95, method="exact")
    assert out["exact_match_ci_by_group"]["controls"] == pytest.approx([0.0, ref.high], abs=1e-12)
    assert out["intervals"] == {
        "method": "percentile cluster bootstrap (groups resampled with replacement)",
        "level": 0.95,
        "unit": "user",
        "n_units": 10,
        "n_boot": 1000,
        "boundary_rule": BOUNDARY_RULE,
        "at_boundary": {"groups.controls.exact_match_rate_ci": "clopper-pearson: 0 of 4 users"},
    }
    assert exact_match_intervals([], subjects) == {}


def test_a_probe_with_no_hit_prints_the_exact_interval_over_its_people_not_zero_to_zero():
    """The merge's "PII exact-match rate 0 [0, 0]" (0 of 23 probes): 23 pairs of 9 people."""
    from scipy.stats import binomtest

    from lmleak.probe.probing import exact_match_intervals

    subjects = [{"subject_id": f"s{i}", "user_id": f"u{i % 9}"} for i in range(23)]
    grows = [{"subject_id": f"s{i}", "target_type": "email", "exact_match": False} for i in range(23)]
    out = exact_match_intervals(grows, subjects)
    ref = binomtest(0, 9).proportion_ci(confidence_level=0.95, method="exact")
    assert out["pii_exact_match_ci"] == pytest.approx([0.0, ref.high], abs=1e-12)
    assert out["pii_exact_match_ci"][1] > 0.3  # 9 people, not 23 independent probes (0.148)
    assert out["intervals"]["at_boundary"] == {"pii_exact_match_ci": "clopper-pearson: 0 of 9 users"}
