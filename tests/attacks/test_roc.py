"""ROC metrics checked against brute-force definitions (every threshold, every member/non-member pair)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.attacks.roc import (
    best_accuracy,
    best_balanced_accuracy,
    low_fpr_note,
    roc_auc,
    roc_curve,
    summarize,
    tpr_at_fpr,
)

# small integer scores make ties frequent, which is where the fast paths can go wrong
cases = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 1)), min_size=2, max_size=30).filter(
    lambda xs: 0 < sum(y for _, y in xs) < len(xs)
)


def _brute_points(scores, labels):
    """(fpr, tpr) of ``score >= t`` for t = +inf and every distinct score, by counting."""
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    pts = [(0.0, 0.0)]
    for t in sorted(set(s.tolist()), reverse=True):
        flagged = s >= t
        pts.append(((flagged & ~y).sum() / (~y).sum(), (flagged & y).sum() / y.sum()))
    return pts


@settings(max_examples=60, deadline=None)
@given(cases)
def test_auc_is_the_pairwise_win_rate_with_ties_counting_half(xs):
    scores, labels = zip(*xs, strict=True)
    members = [s for s, y in xs if y]
    others = [s for s, y in xs if not y]
    wins = sum((m > o) + 0.5 * (m == o) for m in members for o in others)
    assert roc_auc(scores, labels) == pytest.approx(wins / (len(members) * len(others)))


@settings(max_examples=60, deadline=None)
@given(cases)
def test_curve_accuracy_and_low_fpr_tpr_equal_a_threshold_by_threshold_count(xs):
    scores, labels = zip(*xs, strict=True)
    pts = _brute_points(scores, labels)
    c = roc_curve(scores, labels)
    assert np.c_[c.fpr, c.tpr] == pytest.approx(np.array(pts))
    p, n = sum(labels), len(labels) - sum(labels)
    accs = [(tpr * p + (1 - fpr) * n) / (p + n) for fpr, tpr in pts]
    assert best_accuracy(scores, labels)[0] == pytest.approx(max(accs))
    for f in (0.0, 0.25, 0.5):
        assert tpr_at_fpr(scores, labels, f) == pytest.approx(max(t for fp, t in pts if fp <= f + 1e-12))


def test_best_threshold_and_summary_by_hand():
    # members 0.9, 0.7; non-members 0.8, 0.1: t = 0.9 -> 3/4 right, t = 0.7 -> 3/4, t = 0.1 -> 2/4
    acc, thr = best_accuracy([0.9, 0.7, 0.8, 0.1], [1, 1, 0, 0])
    assert (acc, thr) == (0.75, 0.9)  # the first (strictest) of the tied best thresholds
    m = summarize([0.9, 0.7, 0.8, 0.1], [1, 1, 0, 0])
    assert m["auc"] == 0.75 and m["num_members"] == 2 and m["num_non_members"] == 2
    assert m["tpr_at_0.1pct_fpr"] is None and m["tpr_at_0.1pct_fpr_note"] == low_fpr_note(2, 0.001)


def test_tpr_at_low_fpr_is_reported_with_enough_negatives():
    rng = np.random.default_rng(0)
    neg = rng.normal(size=1000)
    pos = rng.normal(loc=3.0, size=50)
    scores, labels = np.r_[pos, neg], np.r_[np.ones(50), np.zeros(1000)]
    m = summarize(scores, labels)
    # no ties: any threshold above the 11th largest non-member flags at most 10/1000 = 1 % of them
    eleventh_negative = np.sort(neg)[-11]
    assert m["tpr_at_1pct_fpr"] == pytest.approx((pos > eleventh_negative).mean())
    assert m["tpr_at_1pct_fpr_note"] is None


@pytest.mark.parametrize(
    "scores,labels",
    [([0.1, 0.2], [1, 1]), ([0.1], [1, 0]), ([0.1, float("nan")], [1, 0]), ([[0.1], [0.2]], [[1], [0]])],
)
def test_bad_inputs_are_refused(scores, labels):
    with pytest.raises(ValueError):
        roc_curve(scores, labels)


@settings(max_examples=60, deadline=None)
@given(cases)
def test_balanced_accuracy_is_the_best_mean_of_both_sides_accuracy_by_counting(xs):
    """Slow obvious oracle: every threshold (and flagging nobody), members' and non-members' share
    right, averaged; on a balanced set it is the plain accuracy."""
    scores, labels = zip(*xs, strict=True)
    s, y = np.asarray(scores, float), np.asarray(labels, bool)
    best = 0.5  # flag nobody: every non-member right, no member
    for t in set(s.tolist()):
        flagged = s >= t
        best = max(best, ((flagged & y).sum() / y.sum() + (~flagged & ~y).sum() / (~y).sum()) / 2)
    acc, thr = best_balanced_accuracy(scores, labels)
    assert acc == pytest.approx(best)
    assert ((s >= thr)[y].mean() + (s < thr)[~y].mean()) / 2 == pytest.approx(acc)
    assert summarize(scores, labels)["accuracy"] == pytest.approx(acc)
    if y.sum() == (~y).sum():
        assert acc == pytest.approx(best_accuracy(scores, labels)[0])


def test_an_unbalanced_half_no_longer_reports_the_majority_share_as_accuracy():
    """Found by an independent oracle on a mail audit: the split-half headline's reported half held
    11 members and 14 non-members, and mia_accuracy 0.56 was exactly 'call everyone a non-member'
    (14 / 25) while the report said 50 % is chance. Balanced, a score that ranks no member above any
    non-member is at chance."""
    scores = [0.0] * 11 + [
        1.0
    ] * 14  # every member below every non-member: no information in the right direction
    labels = [1] * 11 + [0] * 14
    assert best_accuracy(scores, labels)[0] == pytest.approx(14 / 25)
    assert summarize(scores, labels)["accuracy"] == 0.5
