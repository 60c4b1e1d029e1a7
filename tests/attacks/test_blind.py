"""The blind baseline's pieces: n-gram features and the logistic fit, against slow definitions.

The baseline on biased and unbiased splits is tested in tests/attacks/test_mia_methods.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from lmleak.attacks.blind import WARN_MARGIN, blind_warning, fit_logistic, ngram_features


def _loss(theta, X, y, l2):
    """The objective written out row by row."""
    d = X.shape[1]
    w, b = theta[:d], theta[d]
    total = 0.0
    for i in range(X.shape[0]):
        s = 2.0 * y[i] - 1.0
        total += np.logaddexp(0.0, -s * (X[i] @ w + b))
    return total + 0.5 * l2 * w @ w


def test_newton_cg_reaches_the_minimum_a_generic_optimiser_finds():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    y = (X[:, 0] - 0.5 * X[:, 2] + rng.normal(scale=0.8, size=40) > 0).astype(float)
    w, b = fit_logistic(X, y, l2=0.7)
    slow = minimize(_loss, np.zeros(6), args=(X, y, 0.7), method="BFGS").x
    assert np.r_[w, b] == pytest.approx(slow, abs=1e-4)
    # the intercept is not penalised: the bias's gradient alone is zero at the optimum
    p = 1.0 / (1.0 + np.exp(-(X @ w + b)))
    assert abs((p - y).sum()) < 1e-5


def test_ngram_rows_are_unit_length_and_equal_texts_get_equal_rows():
    X = ngram_features(["the cat sat", "the cat sat", "a dog ran far"], dim=256).toarray()
    assert np.linalg.norm(X, axis=1) == pytest.approx([1.0, 1.0, 1.0])
    assert np.array_equal(X[0], X[1]) and X[0] @ X[2] < 0.99


def test_the_warning_starts_within_the_margin_of_the_best_finite_attack():
    aucs = {"loss": 0.99, "zlib": 0.7, "broken": float("nan")}
    assert blind_warning(0.99 - WARN_MARGIN - 1e-6, aucs) is None
    text = blind_warning(0.99 - WARN_MARGIN + 1e-6, aucs)
    assert text is not None and "(loss, AUC 0.990)" in text
    assert blind_warning(0.99, {"broken": float("nan")}) is None


def test_with_intervals_the_warning_needs_a_baseline_above_chance_that_the_attack_does_not_clear():
    aucs = {"min_k": 0.80, "zlib": 0.60}
    cis = {"min_k": (0.72, 0.88), "zlib": (0.50, 0.70)}
    # the baseline's interval covers 0.5: the text alone shows nothing, whatever the attacks read
    assert blind_warning(0.58, aucs, blind_ci=(0.49, 0.67), attack_cis=cis) is None
    # above chance, and the best attack's interval overlaps it: warn, naming both intervals
    text = blind_warning(0.70, aucs, blind_ci=(0.62, 0.78), attack_cis=cis)
    assert text is not None and "[0.620, 0.780]" in text and "(min_k, AUC 0.800 [0.720, 0.880])" in text
    # above chance, but the best attack's interval lies wholly above it: the attack sees more than the text
    assert blind_warning(0.60, aucs, blind_ci=(0.52, 0.68), attack_cis=cis) is None
    # a below-chance baseline (grouped cross-validation on few groups reads low under no shift) never warns
    assert blind_warning(0.30, aucs, blind_ci=(0.16, 0.42), attack_cis=cis) is None


def test_the_blind_interval_is_the_grouped_bootstrap_of_its_out_of_fold_scores():
    from lmleak.attacks.blind import blind_baseline
    from lmleak.intervals import grouped_bootstrap_auc

    texts = [f"note {i} about the {w} parcel" for i, w in enumerate(["red", "blue"] * 20)]
    labels = [1] * 20 + [0] * 20
    users = [f"u{i // 2}" for i in range(40)]
    r = blind_baseline(texts, labels, groups=users, n_boot=300, seed=2)
    assert r.grouping == "given" and r.num_groups == 20 and len(set(r.groups)) == 20
    assert r.auc_ci == grouped_bootstrap_auc(r.scores, labels, list(r.groups), n_boot=300, seed=2)


def test_a_blind_baseline_that_separates_every_group_gets_an_exact_interval_not_one_to_one():
    from scipy.stats import binomtest

    from lmleak.attacks.blind import blind_baseline

    texts = [f"note {i} from 2019" for i in range(12)] + [f"note {i} from 2023" for i in range(12)]
    users = [f"u{i // 2}" for i in range(24)]  # 6 users a side
    r = blind_baseline(texts, [1] * 12 + [0] * 12, groups=users, folds=3, n_boot=100)
    ref = binomtest(6, 6).proportion_ci(confidence_level=0.95, method="exact")
    assert r.auc == 1.0 and r.auc_ci == pytest.approx((ref.low, 1.0), abs=1e-12)
    assert r.auc_ci_rule == "clopper-pearson: 6 of 6 group pairs"
