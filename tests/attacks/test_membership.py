"""Membership-inference metrics against slow oracles, and the attack on a memorising model."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.attacks.membership import evaluate_membership, min_k_prob, read_texts, text_scores
from lmleak.attacks.mia_methods import MethodOptions
from lmleak.attacks.mia_settings import MembershipSettings as MS
from lmleak.attacks.mia_texts import MembershipTexts
from lmleak.attacks.roc import best_accuracy, roc_auc, roc_curve, tpr_at_fpr
from lmleak.models.fake import FakeLM
from tests.attacks.demo_sets import demo_sets, line_owners

scored = st.lists(st.tuples(st.integers(-5, 5).map(float), st.booleans()), min_size=2, max_size=60).filter(
    lambda xs: any(b for _, b in xs) and not all(b for _, b in xs)
)


def pair_count_auc(scores, labels):
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def brute_best_accuracy(scores, labels):
    s, y = np.asarray(scores), np.asarray(labels).astype(bool)
    best = max(np.mean(y == False), np.mean(y))  # noqa: E712  (flag nothing / everything)
    for t in np.unique(s):
        best = max(best, np.mean((s >= t) == y))
    return best


@given(scored)
@settings(max_examples=200, deadline=None)
def test_auc_equals_the_pair_counting_oracle(pairs):
    scores, labels = zip(*pairs, strict=True)
    assert roc_auc(scores, labels) == pytest.approx(pair_count_auc(scores, labels))


@given(scored)
@settings(max_examples=200, deadline=None)
def test_best_accuracy_equals_trying_every_threshold(pairs):
    scores, labels = zip(*pairs, strict=True)
    acc, thr = best_accuracy(scores, labels)
    assert acc == pytest.approx(brute_best_accuracy(scores, labels))
    s, y = np.asarray(scores), np.asarray(labels).astype(bool)
    assert np.mean((s >= thr) == y) == pytest.approx(acc)


@given(scored, st.floats(0, 1))
@settings(max_examples=100, deadline=None)
def test_tpr_at_fpr_is_the_best_threshold_within_the_fpr_budget(pairs, f):
    scores, labels = zip(*pairs, strict=True)
    s, y = np.asarray(scores), np.asarray(labels).astype(bool)
    best = 0.0
    for t in [np.inf, *np.unique(s)]:
        flag = s >= t
        if flag[~y].mean() <= f + 1e-12:
            best = max(best, flag[y].mean())
    assert tpr_at_fpr(scores, labels, f) == pytest.approx(best)


def test_the_roc_curve_runs_from_nothing_flagged_to_everything_flagged():
    c = roc_curve([1.0, 2.0, 2.0, 3.0], [0, 1, 0, 1])
    assert (c.fpr[0], c.tpr[0], c.fpr[-1], c.tpr[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert np.all(np.diff(c.fpr) >= 0) and np.all(np.diff(c.tpr) >= 0)


def test_min_k_averages_the_least_likely_tokens():
    assert min_k_prob(np.array([-1.0, -2.0, -3.0, -4.0]), 0.5) == -3.5
    # int(k * n) tokens, as published: 0.2 * 9 = 1.8 -> 1 token; 0.2 * 1 -> none (NaN)
    assert min_k_prob(-np.arange(1.0, 10.0), 0.2) == -9.0
    assert np.isnan(min_k_prob(np.array([-1.0]), 0.2))


def _sentences(rng, n):
    return [
        f"my address is {rng.integers(100, 999)} {rng.choice(['oak', 'elm', 'pine', 'ash'])} street"
        for _ in range(n)
    ]


def test_a_memorising_model_is_caught_by_the_individual_and_the_group_attack():
    rng = np.random.default_rng(0)
    members = _sentences(rng, 60)
    non_members = _sentences(np.random.default_rng(99), 60)
    non_members = [t for t in non_members if t not in set(members)]
    lm = FakeLM.from_texts(members * 2 + non_members[:0] + ["my address is unknown street"], order=4)
    res = evaluate_membership(
        lm, members, non_members, MS(num_per_side=50, group_size=5), options=MethodOptions(reference=lm)
    )
    m = res.metrics.set_index(["level", "feature"])
    assert m.loc[("individual", "perplexity"), "accuracy"] > 0.75
    assert m.loc[("individual", "perplexity"), "auc"] > 0.8
    assert m.loc[("group5", "perplexity"), "accuracy"] >= m.loc[("individual", "perplexity"), "accuracy"]
    # a model calibrated against itself carries no signal: every ratio is -1
    assert m.loc[("individual", "reference"), "auc"] == pytest.approx(0.5)
    assert set(res.scores["member"]) == {0, 1} and len(res.scores) == 2 * res.num_per_side


def test_group_perplexity_score_is_minus_the_sum_of_perplexities():
    lm = FakeLM.from_texts(["a b c", "a b d"], order=3)
    sc = text_scores(lm, ["a b c", "a b d", "c b a"])
    ppl = np.exp(sc["log_ppl"])
    assert sc["perplexity"].sum() == pytest.approx(-ppl.sum())


def test_method_options_check_the_names_and_read_recalls_prefix_file(tmp_path):
    from lmleak.attacks.membership import method_options
    from lmleak.errors import ConfigError

    assert method_options(MS()).methods is None  # the defaults, chosen later
    (tmp_path / "prefix.txt").write_text("first non-member\n\nsecond one\n")
    s = MS(methods=("zlib", "recall"), recall_prefix=str(tmp_path / "prefix.txt"), neighbours=3, seed=4)
    opts = method_options(s)
    assert opts.methods == ("zlib", "recall")
    assert opts.recall_prefix == "first non-member\nsecond one\n"
    assert (opts.num_neighbours, opts.seed, opts.mlm) == (3, 4, None)
    with pytest.raises(ConfigError) as e:
        MS(methods=("zlibb",))
    assert e.value.field == "methods" and "zlib" in str(e.value)
    with pytest.raises(ConfigError):
        method_options(MS(methods=("reference",)))  # no reference model


def _membership_files(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"user_id": "u2", "text": f"my address is {100 + i} oak street"} for i in range(30)]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    members = tmp_path / "members.txt"
    members.write_text("".join(r["text"] + "\n" for r in rows))
    non = tmp_path / "non.jsonl"
    non.write_text(
        "".join(json.dumps({"text": f"my address is {500 + i} elm street"}) + "\n" for i in range(30))
    )
    return corpus, members, non


def test_membership_of_model_loads_the_spec_reads_the_files_and_equals_run_membership(tmp_path):
    from lmleak.attacks.membership import membership_of_model, method_options, run_membership
    from lmleak.models.loading import load_model

    corpus, members, non = _membership_files(tmp_path)
    said: list[str] = []
    settings = MS(members=str(members), non_members=str(non), methods=("zlib", "min_k_pp"), group_size=5)
    summary = membership_of_model(f"fake:{corpus}", tmp_path / "a", settings, echo=said.append)
    oracle = run_membership(
        load_model(f"fake:{corpus}"),
        MembershipTexts(read_texts(members), read_texts(non)),
        tmp_path / "b",
        MS(group_size=5),
        options=method_options(MS(methods=("zlib", "min_k_pp"))),
    )
    # no source line: two files given
    assert said == [
        "scoring up to 30 texts per side with fake:corpus.jsonl (after de-duplication: the summary's sets say how many)"
    ]
    assert {(r["level"], r["feature"]) for r in summary["metrics"]} == {
        (r["level"], r["feature"]) for r in oracle["metrics"]
    }
    assert summary["mia_auc_by_attack"] == oracle["mia_auc_by_attack"]
    assert summary["mia_auc"] == pytest.approx(1.0)  # the fake model memorised every member
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["mia_auc"] == summary["mia_auc"]


def test_membership_of_model_checks_the_methods_before_loading_anything(tmp_path):
    from lmleak.attacks.membership import membership_of_model
    from lmleak.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown membership method 'nope'"):
        membership_of_model(str(tmp_path / "no-such-model"), tmp_path / "run", MS(methods=("nope",)))
    assert not (tmp_path / "run").exists()


# ----------------------------------------------------------------------------------- issue 26
def test_the_sets_are_cleaned_and_every_count_is_in_the_summary(tmp_path):
    from lmleak.attacks.membership import run_membership

    members = [f"member note {i} about the blue parcel from the depot" for i in range(20)]
    members += members[:3]  # 3 exact repeats
    members += ["Member note 4 about the blue parcel from the depot!"]  # a near-duplicate of one
    members += ["a sentence that both sides share word for word"]  # on both sides
    non = [f"other note {i} on a green bicycle at the harbour" for i in range(20)]
    non += ["a sentence that both sides share word for word"]
    lm = FakeLM.from_texts(members, order=3)
    s = run_membership(lm, MembershipTexts(members, non), tmp_path / "run", MS(group_size=0, n_boot=100))
    m, n = s["sets"]["members"], s["sets"]["non_members"]
    assert (m["rows"], m["distinct"], m["near_duplicates"], m["removed_overlap"], m["kept"]) == (
        25,
        22,
        1,
        1,
        20,
    )
    assert (n["rows"], n["distinct"], n["near_duplicates"], n["removed_overlap"], n["kept"]) == (
        21,
        21,
        0,
        1,
        20,
    )
    assert m["used"] == n["used"] == s["num_per_side"] == 20
    scored = pd.read_parquet(tmp_path / "run" / "mia_scores.parquet")
    assert scored["text"].is_unique and "both sides share" not in " ".join(scored["text"])
    assert (
        s["sets"]["grouping"] == "pii-or-near-duplicate"
        and "each text is its own group" in s["sets"]["grouping_note"]
    )
    assert s["intervals"]["unit"] == "text cluster" and s["intervals"]["n_units"] == 40


def _user_corpus(tmp_path, users=24):
    from lmleak.data.synth.customersim import synthesize

    paths = synthesize(tmp_path / "syn", users=users, dialogs_per_user=2, seed=3)
    docs = [json.loads(x) for x in paths["corpus"].read_text().splitlines()]
    ids = sorted({d["user_id"] for d in docs})
    held = set(ids[: users // 2])
    return docs, held


def test_the_placebo_auc_covers_chance_on_a_model_trained_without_the_placebo_users(tmp_path):
    """The model memorised the trained users; the placebo halves are both held-out users, which it
    never saw, so the same attack cannot tell them apart beyond chance."""
    from lmleak.attacks.membership import run_membership, split_users_by_holdout
    from lmleak.data.corpus import Document

    docs, held = _user_corpus(tmp_path)
    corpus = [Document(d["user_id"], d["doc_id"], d["text"]) for d in docs]
    mem, non, mem_users, non_users = split_users_by_holdout(corpus, sorted(held))
    lm = FakeLM.from_texts([d["text"] for d in docs if d["user_id"] not in held], order=4)
    s = run_membership(
        lm,
        MembershipTexts(mem, non, None, (mem_users, non_users)),
        tmp_path / "run",
        MS(group_size=0, n_boot=500),
    )
    # a perfect separation of the reported half's 6 users a side proves AUC >= 0.025^(1/6) = 0.54 only
    # (the exact interval over 6 independent pairs), not the bootstrap's certain [1, 1]
    assert s["mia_auc"] == 1.0 and s["mia_auc_ci"] == pytest.approx([0.025 ** (1 / 6), 1.0])
    lo, hi = s["placebo_auc_ci"]
    assert lo <= s["placebo_auc"] <= hi and lo < 0.5 < hi and s["placebo_warning"] is None
    assert set(s["placebo_auc_by_attack"]) == set(s["mia_auc_by_attack"])
    assert s["sets"]["grouping"] == "user" and s["intervals"]["unit"] == "user"
    assert s["sets"]["non_members"]["groups"] == len(held) and s["intervals"]["n_units"] == 24
    # the honest headline: chosen on one half of the users, reported on the other
    assert s["headline_selection"] == "split-half" and s["mia_method"] == s["mia_attack"]
    assert s["mia_best_raw_auc"] == max(s["mia_auc_by_attack"].values())
    assert s["mia_best_raw_method"] in s["mia_auc_by_attack"] and "after the fact" in s["mia_best_raw_note"]
    for f, auc in s["mia_auc_by_attack"].items():
        lo, hi = s["mia_auc_ci_by_attack"][f]
        assert lo <= auc <= hi


def test_on_the_quick_demos_sets_the_grouped_blind_baseline_is_quiet_and_a_planted_bias_still_warns(tmp_path):
    """Issue 26's done-when: the demo's e-mail lines (trained users vs unseen users) warned for every
    model because the blind baseline's folds split people; grouped, it sits at chance. Members that
    all carry a word the non-members lack still warn."""
    from lmleak.attacks.blind import blind_baseline
    from lmleak.attacks.membership import run_membership

    members, non = demo_sets(tmp_path)
    lm = FakeLM.from_texts(members, order=4)  # a model that memorised its training lines
    s = run_membership(lm, MembershipTexts(members, non), tmp_path / "run", MS(group_size=0, n_boot=500))
    assert s["blind_baseline_warning"] is None and s["blind_auc_ci"][0] < 0.5 < s["blind_auc_ci"][1]
    scored = pd.read_parquet(tmp_path / "run" / "mia_scores.parquet")
    owners = line_owners(tmp_path)
    for member, side in ((True, "members"), (False, "non_members")):
        used = scored[scored.member == member]
        people = set().union(*(owners[t] for t in used.text))
        # the clusters recover the people: one group per person, and no group holds two people
        assert s["sets"][side]["groups"] == len(people) == used.group.nunique()
        assert all(len(set().union(*(owners[t] for t in g.text))) == 1 for _, g in used.groupby("group"))
    ungrouped = blind_baseline(list(scored.text), list(scored.member), groups=range(len(scored)), n_boot=200)
    assert ungrouped.auc > 0.8  # what the old, ungrouped baseline said of the same texts
    planted = [t + " Kind regards." for t in members]
    s = run_membership(
        FakeLM.from_texts(planted, order=4),
        MembershipTexts(planted, non),
        tmp_path / "biased",
        MS(group_size=0, n_boot=500),
    )
    assert s["blind_auc_ci"][0] > 0.9 and "blind baseline" in s["blind_baseline_warning"]
