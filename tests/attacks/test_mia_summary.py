"""The summary of a membership run, from planted results (no model): how the headline was chosen,
the placebo's warning, the blind baseline's keys, the ROC table, and the ``intervals`` record."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lmleak.attacks.mia_stats import (
    metrics_with_intervals,
    placebo_labels,
    placebo_metrics,
    split_half_headline,
)
from lmleak.attacks.mia_summary import MembershipResult, membership_summary, roc_table
from lmleak.attacks.roc import roc_curve


def _result(
    scores: dict[str, np.ndarray], y: np.ndarray, g: np.ndarray, *, split: bool = True
) -> MembershipResult:
    rows = [
        {"level": "individual", "feature": f, **metrics_with_intervals(s, y, g, n_boot=100)}
        for f, s in scores.items()
    ]
    return MembershipResult(
        scores=None,
        metrics=pd.DataFrame(rows),
        num_per_side=int(y.sum()),
        methods=tuple(scores),
        sets={"grouping": "user"},
        groups=list(g),
        headline=split_half_headline(scores, y, g, n_boot=100) if split else None,
        placebo={f: placebo_metrics(s, y, g, n_boot=100) for f, s in scores.items()},
        n_boot=100,
    )


def _summary(res: MembershipResult) -> dict:
    return membership_summary("m", res, reference=None, source=None, group_size=0, options=None)


def _users(n_users: int, per_user: int = 2):
    y = np.r_[np.ones(n_users * per_user, dtype=np.int64), np.zeros(n_users * per_user, dtype=np.int64)]
    g = np.array([f"{'m' if c else 'n'}:{i // per_user}" for i, c in enumerate(y)])
    return y, g


def test_the_headline_is_chosen_on_one_half_and_reported_on_the_other():
    rng = np.random.default_rng(0)
    y, g = _users(20)
    strong, weak = rng.normal(size=y.size) + 1.5 * y, rng.normal(size=y.size)
    res = _result({"perplexity": weak, "zlib": strong}, y, g)
    s = _summary(res)
    assert s["headline_selection"] == "split-half" and s["mia_method"] == res.headline["method"] == "zlib"
    assert (
        s["mia_auc"] == res.headline["report"]["auc"] and s["mia_auc_ci"] == res.headline["report"]["auc_ci"]
    )
    assert s["mia_best_raw_method"] == "zlib" and s["mia_auc_by_attack"]["zlib"] == s["mia_best_raw_auc"]
    assert (
        s["intervals"]["unit"] == "user"
        and s["intervals"]["n_units"] == 40
        and s["intervals"]["n_boot"] == 100
    )
    fixed = _summary(_result({"perplexity": weak, "zlib": strong}, y, g, split=False))
    assert (
        fixed["headline_selection"] == "fixed" and fixed["mia_method"] == "perplexity"
    )  # the rule, not the best
    single = _summary(_result({"zlib": strong}, y, g))
    assert (
        single["headline_selection"] == "single-method"
        and single["mia_auc"] == single["mia_auc_by_attack"]["zlib"]
    )


def test_the_placebo_warns_only_when_its_interval_excludes_chance_and_blind_says_why_it_did_not_run():
    rng = np.random.default_rng(1)
    y, g = _users(30)
    quiet = _summary(_result({"perplexity": rng.normal(size=y.size) + y}, y, g))
    lo, hi = quiet["placebo_auc_ci"]
    assert lo < 0.5 < hi and quiet["placebo_warning"] is None
    # a score that separates the two halves of the non-members: the placebo must warn
    res = _result({"perplexity": rng.normal(size=y.size) + y}, y, g)
    idx, half = placebo_labels(y, g)  # the non-members' halves the placebo compares
    planted = rng.normal(size=y.size)
    planted[idx] += 5.0 * half
    res.placebo = {"perplexity": placebo_metrics(planted, y, g, n_boot=100)}
    s = _summary(res)
    assert not s["placebo_auc_ci"][0] <= 0.5 <= s["placebo_auc_ci"][1]
    assert s["placebo_warning"] is not None and "excludes 0.5" in s["placebo_warning"]
    assert quiet["blind_auc"] is None and quiet["blind_note"] == "not run (--no-blind)"


def test_the_roc_table_has_one_row_per_threshold_of_each_curve():
    c = roc_curve(np.array([0.9, 0.4, 0.3, 0.1]), np.array([1, 0, 1, 0]))
    t = roc_table({"individual/perplexity": c})
    assert len(t) == len(c.fpr) and set(t["curve"]) == {"individual/perplexity"}
    assert t["fpr"].tolist() == pytest.approx(list(c.fpr)) and t["tpr"].tolist() == pytest.approx(list(c.tpr))


def test_a_perfect_attack_says_in_the_intervals_record_which_intervals_the_boundary_rule_made():
    rng = np.random.default_rng(2)
    y, g = _users(20)
    perfect = np.where(y == 1, 10.0, 0.0) + rng.normal(size=y.size) * 0.1
    s = _summary(_result({"perplexity": rng.normal(size=y.size), "zlib": perfect}, y, g))
    at = s["intervals"]["at_boundary"]
    assert s["mia_method"] == "zlib" and s["mia_auc"] == 1.0
    halves = s["mia_headline_note"].split("other half (")[1].split(" groups")[0]  # 10 + 10 groups reported
    assert at["mia_auc_ci"] == f"clopper-pearson: {int(halves) // 2} of {int(halves) // 2} group pairs"
    assert s["mia_auc_ci"][0] == pytest.approx(0.025 ** (1 / (int(halves) // 2)))
    assert at["mia_auc_ci_by_attack.zlib"] == "clopper-pearson: 20 of 20 group pairs"
    assert at["mia_best_raw_auc_ci"] == at["mia_auc_ci_by_attack.zlib"]
    assert "mia_auc_ci_by_attack.perplexity" not in at  # a chance AUC: the bootstrap's own
    assert "placebo_auc_ci" not in at and s["intervals"]["boundary_rule"].startswith(
        "a bootstrap of a sample"
    )


# ----------------------------------------------------------- issue 35, item 6: the strongest honest attack
def test_the_split_half_headline_weighs_rmia_wbc_and_samia_like_every_other_method():
    """The release profile and the HTML read ``mia_method`` / ``mia_auc``: the method best on the
    selection half among *all* those run, the fine-tune and text-only attacks included."""
    rng = np.random.default_rng(3)
    y, g = _users(20)
    noise = {m: rng.normal(size=y.size) for m in ("perplexity", "zlib", "min_k")}
    samia = rng.normal(size=y.size) + 0.5 * y
    samia[::7] = np.nan  # texts SaMIA could not score (empty prefix) are left out, not ranked
    scores = {**noise, "wbc": rng.normal(size=y.size) + 0.8 * y, "rmia": rng.normal(size=y.size) + 3.0 * y,
              "samia": samia}  # fmt: skip
    res = _result(scores, y, g)
    s = _summary(res)
    assert s["headline_selection"] == "split-half" and s["mia_method"] == "rmia"
    assert set(s["mia_selection_auc_by_attack"]) == set(scores)
    sel = s["mia_selection_auc_by_attack"]
    assert max(sel, key=sel.get) == "rmia" and s["mia_auc"] == res.headline["report"]["auc"] > 0.9
    # SaMIA strongest, with its unscored texts: chosen the same way
    strong_samia = np.where(np.isnan(samia), np.nan, rng.normal(size=y.size) + 4.0 * y)
    s2 = _summary(_result({**scores, "rmia": noise["zlib"], "samia": strong_samia}, y, g))
    assert s2["mia_method"] == "samia" and s2["headline_selection"] == "split-half"


def test_evaluate_membership_offers_the_split_half_every_method_it_scored():
    """End to end on a fake fine-tune (tests/attacks/test_rmia.py): WBC and RMIA are scored and the
    headline is the selection half's best of all four methods."""
    from lmleak.attacks.membership import MembershipSettings, evaluate_membership
    from lmleak.attacks.mia_methods import MethodOptions
    from lmleak.models.fake import FakeLM
    from tests.attacks.test_mia_methods import _notes

    texts = _notes(np.random.default_rng(5), 120)
    members, non_members = texts[:45], texts[45:]
    base = FakeLM.from_texts(texts, order=3, name="base")
    tuned = FakeLM.from_texts(texts + members * 2, order=3, name="tuned")
    opts = MethodOptions(methods=("perplexity", "zlib", "wbc", "rmia"), rmia_population=25, reference=base)
    res = evaluate_membership(
        tuned, members, non_members, MembershipSettings(group_size=0, blind=False), options=opts
    )
    sel = res.headline["selection_auc_by_attack"]
    assert set(sel) == {"perplexity", "zlib", "wbc", "rmia"}
    assert res.headline["method"] == max(sel, key=sel.get)
