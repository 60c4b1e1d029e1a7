"""lmleak.render.decision: a limit decided on its 95 % interval, and the sample size that would settle it
(issue 32)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lmleak.render.decision import decide, n_to_settle, no_interval_note, power_line


def _oracle(interval, limit, direction):
    """The rule read literally: every point of the interval within the limit passes, every point
    beyond it fails, anything else is inconclusive (checked on a fine grid of the interval)."""
    points = np.linspace(interval[0], interval[1], 2001)
    within = points >= limit if direction == "min" else points <= limit
    return "pass" if within.all() else "fail" if not within.any() else "inconclusive"


@pytest.mark.parametrize("direction", ["max", "min"])
def test_pass_and_fail_only_when_the_whole_interval_is_on_one_side_of_the_limit(direction):
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(400):
        lo, hi = sorted(rng.uniform(0, 1, 2))
        value = rng.uniform(lo, hi)
        limit = float(rng.choice([rng.uniform(0, 1), lo, hi]))  # the edges too
        got = decide(value, (lo, hi), limit, direction)
        assert got == _oracle((lo, hi), limit, direction), (value, lo, hi, limit, direction)
        seen.add(got)
    assert seen == {"pass", "fail", "inconclusive"}


def test_an_interval_straddling_the_limit_is_inconclusive_whatever_the_point_estimate():
    # the null audit: AUC 0.48 [0.08, 0.82] "passed" <= 0.6 on the point estimate
    assert decide(0.48, (0.08, 0.82), 0.6) == "inconclusive"
    assert decide(0.65, (0.55, 0.75), 0.6) == "inconclusive"  # "failed" on the point estimate
    # a limit of "<= 0" on a count can never pass on its interval: the count of 0 has [0, U x CP upper]
    assert decide(0.0, (0.0, 3.69), 0.0) == "inconclusive"
    # the mirror, a floor: the whole interval must be at or above it
    assert decide(1.2, (1.05, 1.4), 1.0, "min") == "pass"
    assert decide(0.8, (0.6, 0.95), 1.0, "min") == "fail"
    assert decide(1.1, (0.9, 1.3), 1.0, "min") == "inconclusive"
    # no interval: the value decides; a value outside its own interval widens it
    assert decide(0.6, None, 0.6) == "pass" and decide(0.61, None, 0.6) == "fail"
    assert decide(0.59, None, 0.6, "min") == "fail"
    assert decide(0.7, (0.4, 0.55), 0.6) == "inconclusive"


def test_the_people_needed_against_a_hand_computation():
    # 40 texts a side, AUC 0.55 [0.40, 0.70], limit 0.6: the half toward the limit is 0.15, the
    # effect 0.05, so 40 * (0.15 / 0.05)^2 = 40 * 9 = 360
    assert n_to_settle(40, 0.55, (0.40, 0.70), 0.6) == 360
    # an asymmetric interval uses its half on the limit's side: 0.08 - 0.01 = 0.07 toward 0.05
    assert n_to_settle(100, 0.08, (0.01, 0.15), 0.05) == math.ceil(100 * (0.07 / 0.03) ** 2) == 545
    # the value on the limit: no sample size settles it
    assert n_to_settle(40, 0.6, (0.5, 0.7), 0.6) == math.inf


def test_the_people_needed_is_where_a_wald_interval_first_excludes_the_limit():
    """A half-width that shrinks as 1/sqrt(n) exactly (Wald's, for a proportion at a fixed p): the
    returned n is the first sample size whose interval excludes the limit."""
    p, n, limit = 0.08, 100, 0.05

    def half(m):
        return 1.96 * math.sqrt(p * (1 - p) / m)

    needed = n_to_settle(n, p, (p - half(n), p + half(n)), limit)
    assert p - half(needed) > limit >= p - half(needed - 1)


def test_the_power_line_names_the_units_the_interval_is_over():
    line = power_line("mia_auc", 0.55, (0.40, 0.70), 0.6, {"mia_num_per_side": 40})
    assert "about 360 texts a side (now 40)" in line and "1/√n" in line
    two = power_line(
        "pii_people_excess",
        0.04,
        (-0.02, 0.10),
        0.05,
        {"pii_people_members_n": 100},
        {"pii_people_null_n": 25},  # the per-k row lacks it: the model's headline has it
    )
    # 0.06 toward the limit, effect 0.01: 36 times as many people in both groups
    assert "about 3,600 trained-on people and 900 held-out people (now 100 and 25)" in two
    assert "4× as many people" in power_line("tpr_at_fpr", 0.02, (0.0, 0.04), 0.03, {})
    assert "count grows with the corpus" in power_line("pii_unique_sequences", 2, (0, 5), 3, {})
    assert "never at this effect" in power_line("pii_unique_sequences", 0, (0, 3.69), 0, {})


def test_a_value_without_an_interval_says_how_it_was_decided():
    assert "one-sided 95 % lower bound" in no_interval_note("epsilon_lower_bound")
    assert no_interval_note("mia_auc") == "no 95 % interval recorded: decided on the value alone"
