"""lmleak.render.verdict: Pass / Fail / Not evaluable per limit, with the reason and the line that measures it."""

from __future__ import annotations

import math

import pytest

from lmleak.errors import ConfigError
from lmleak.render.verdict import (
    MIN_MIA_PER_SIDE,
    PROFILES,
    GateCheck,
    Limit,
    limits_from_config,
    profile_limits,
    resolve_limits,
    verdict_of,
    verdict_rows,
)


def _audit(**models):
    """An audit summary whose models ran the stages named in their ``stages``."""
    return {
        "models": {
            name: {
                "headline": m.get("headline", {}),
                "stages": m.get("stages", {}),
                "skipped": m.get("skipped", {}),
            }
            for name, m in models.items()
        },
        "release": {"models": {name: {"not_run": m.get("not_run", [])} for name, m in models.items()}},
    }


def _headlines(summary):
    return {name: m["headline"] for name, m in summary["models"].items()}


def _verdict(summary, limits, **kw):
    return verdict_of(summary, _headlines(summary), resolve_limits(limits), **kw)


def test_a_model_with_no_user_unique_sequence_passes_the_leakage_limit_and_says_why():
    """Regression: 0 user-unique sequences failed `gate --max-leakage-epsilon` as "not measured"."""
    s = _audit(m={"headline": {"by_k": {"1": {"unique_sequences": 0}}}, "stages": {"report": "x"}})
    (check,) = _verdict(s, {"max_leakage_epsilon": 2.0}).checks
    assert check.verdict == "pass" and check.value is None and "nothing to bound" in check.reason
    assert check.to_dict()["passed"] is True


def test_an_infinite_leakage_epsilon_fails_although_json_stored_it_as_null():
    h = {"by_k": {"1": {"unique_sequences": 3, "leakage_epsilon_infinite": True}}}
    (check,) = _verdict(
        _audit(m={"headline": h, "stages": {"report": "x"}}), {"max_leakage_epsilon": 1e300}
    ).checks
    assert check.value == math.inf and check.verdict == "fail" and "= ∞" in check.describe()


def test_an_unmeasured_limit_is_not_evaluable_with_its_reason_and_fix_and_fails_unless_allowed():
    s = _audit(
        m={
            "headline": {"mia_auc": 0.55},
            "stages": {"mia": "x"},
            "not_run": [
                {
                    "analysis": "canary exposure",
                    "reason": "no canaries",
                    "fix": "insert canaries",
                    "metrics": ["max_exposure"],
                }
            ],
        }
    )
    v = _verdict(s, {"max_exposure": 10, "max_mia_auc": 0.6})
    exposure, auc = v.checks
    assert (
        exposure.verdict == "not_evaluable"
        and exposure.reason == "no canaries"
        and exposure.fix == "insert canaries"
    )
    assert exposure.to_dict()["reason"] == "no canaries" and exposure.to_dict()["passed"] is False
    assert auc.verdict == "pass" and not v.passed and v.failed == [exposure]
    assert v.model_status("m") == "not_evaluable"
    allowed = _verdict(s, {"max_exposure": 10, "max_mia_auc": 0.6}, allow_not_evaluable=True)
    assert allowed.passed and allowed.model_status("m") == "pass"
    # a skipped stage's reason is the row's reason when the release summary has none
    s2 = _audit(m={"headline": {}, "skipped": {"mia": "no holdout.json"}})
    (row,) = _verdict(s2, {"max_mia_auc": 0.6}).checks
    assert row.verdict == "not_evaluable" and "no holdout.json" in row.reason


def test_the_membership_row_names_the_headline_attack_and_the_best_raw_auc_selected_after_the_fact():
    h = {
        "mia_auc": 0.679,
        "mia_method": "perplexity",
        "mia_num_per_side": 400,
        "mia_auc_by_attack": {"perplexity": 0.679, "min_k": 0.798, "zlib": 0.783},
        "mia_auc_ci": [0.64, 0.71],
    }
    (row,) = _verdict(_audit(m={"headline": h, "stages": {"mia": "x"}}), {"max_mia_auc": 0.75}).checks
    assert row.method == "perplexity" and row.verdict == "pass" and row.interval == (0.64, 0.71)
    assert "best raw AUC 0.798 (min_k, selected after the fact)" in row.note
    assert "[perplexity]" in row.describe() and "[95% 0.64, 0.71]" in row.describe()


def test_too_few_membership_texts_are_not_evaluable_whatever_the_auc():
    n = MIN_MIA_PER_SIDE - 1
    h = {"mia_auc": 0.5, "mia_method": "perplexity", "mia_num_per_side": n}
    (row,) = _verdict(_audit(m={"headline": h, "stages": {"mia": "x"}}), {"max_mia_auc": 0.6}).checks
    assert row.verdict == "not_evaluable" and f"{n} texts a side" in row.reason
    sd = math.sqrt((2 * n + 1) / (12 * n * n))  # the null AUC's sd (Mann-Whitney, no ties)
    assert f"standard deviation of {sd:.2f}" in row.reason


def test_the_dp_claim_is_checked_at_the_claimed_delta():
    h = {
        "dp_epsilon": 3.0,
        "epsilon_lower_bound": 3.5,
        "epsilon_lower_bound_at_claimed_delta": 0.8,
        "claimed_delta": 1e-3,
    }
    (claim,) = _verdict(_audit(m={"headline": h}), {}).checks
    assert claim.value == 0.8 and claim.verdict == "pass" and "claimed δ = 0.001" in claim.note


def test_the_release_profile_states_every_limit_with_a_rationale_and_needs_no_canaries():
    limits = profile_limits("release")
    assert all(lim.rationale for lim in limits)
    assert {lim.option for lim in limits if not lim.required} >= {"max_exposure", "max_leakage_epsilon"}
    # a model trained without canaries, with no public model and no probing: passes on what ran
    s = _audit(
        m={
            "headline": {
                "mia_auc": 0.52,
                "mia_num_per_side": 200,
                "by_k": {"1": {"unique_sequences": 4, "pii_unique_sequences": 0}},
            },
            "stages": {"report": "r", "mia": "x"},
            "not_run": [
                {
                    "analysis": "canary exposure",
                    "reason": "no canaries",
                    "fix": "f",
                    "metrics": ["max_exposure"],
                }
            ],
        }
    )
    v = verdict_of(s, _headlines(s), limits, profile="release")
    statuses = {c.metric: c.verdict for c in v.checks}
    assert statuses["max_exposure"] == "not_evaluable" and statuses["mia_auc"] == "pass"
    assert v.passed and v.to_dict()["profile"] == "release"
    exposure = next(r for r in verdict_rows(v) if r["limit"].startswith("Highest canary exposure"))
    assert exposure["result"] == "Not evaluable (optional)" and "no canaries" in exposure["why"]
    with pytest.raises(ConfigError, match="release"):
        profile_limits("relase")


def test_options_override_the_profile_and_the_config_section_reads_the_same_way():
    limits = resolve_limits({"max_mia_auc": 0.7, "max_unique": None}, "release")
    auc = [lim for lim in limits if lim.option == "max_mia_auc"]
    assert auc == [Limit("max_mia_auc", 0.7)] and len(limits) == len(PROFILES["release"])
    cfg_limits, allow, profile = limits_from_config(
        {"profile": "release", "max_mia_auc": 0.7, "allow_not_evaluable": True}
    )
    assert cfg_limits == limits and allow is True and profile == "release"
    assert limits_from_config(None) == ((), False, None)
    with pytest.raises(ConfigError, match="max_mia_auc"):
        resolve_limits({"max_mia_acu": 0.7})


def test_a_check_passes_exactly_at_its_limit_and_the_rows_are_what_the_html_and_terminal_print():
    assert GateCheck("m", "mia_auc", 0.6, 0.6).passed and not GateCheck("m", "mia_auc", 0.6, 0.6000001).passed
    s = _audit(m={"headline": {"mia_auc": 0.7, "mia_method": "zlib"}, "stages": {"mia": "x"}})
    (row,) = verdict_rows(_verdict(s, {"max_mia_auc": 0.6}))
    assert row == {
        "model": "m",
        "limit": "Membership inference AUC [zlib] ≤ 0.6",
        "value": "0.7",
        "interval": "—",
        "result": "Fail",
        "status": "fail",
        "why": "",
        "rationale": "",
    }
