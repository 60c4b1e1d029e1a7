"""lmleak.render.verdict: Pass / Fail / Not evaluable per limit, with the reason and the line that measures it."""

from __future__ import annotations

import json
import math
import re

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


@pytest.mark.parametrize(
    "placebo_ci,verdict",
    [
        ((0.70, 0.84), "not_evaluable"),
        ((0.12, 0.69), "pass"),
        ((0.5, 0.6), "pass"),
        ((0.2, 0.499), "not_evaluable"),
    ],
)
def test_a_membership_auc_whose_placebo_interval_excludes_half_is_not_evaluable(placebo_ci, verdict):
    """The quick demo's CRT model: AUC 0.62 'failed' while the same attack gave 0.77 [0.70, 0.84] on two
    halves of people the model never saw — the AUC is not a membership measurement there."""
    h = {
        "mia_auc": 0.55,
        "mia_method": "perplexity",
        "mia_num_per_side": 40,
        "placebo_auc": sum(placebo_ci) / 2,
        "placebo_auc_ci": list(placebo_ci),
    }
    (row,) = _verdict(_audit(m={"headline": h, "stages": {"mia": "x"}}), {"max_mia_auc": 0.6}).checks
    assert row.verdict == verdict
    assert f"[{placebo_ci[0]:.3g}, {placebo_ci[1]:.3g}] (should cover 0.5)" in row.note
    if verdict == "not_evaluable":
        assert "the placebo failed" in row.reason and "excludes 0.5" in row.reason and "--holdout" in row.fix
    else:
        assert row.reason is None


def test_an_exact_match_rate_of_held_out_controls_alone_is_not_evaluable():
    """The demo probed six trained people recorded (wrongly) as held out: 0 members, 18 control probes,
    and the pooled 0 % passed the exact-match limit on nobody the model trained on."""
    h = {"pii_exact_match": 0.0, "pii_exact_match_controls": 0.0, "pii_exact_match_controls_n": 18}
    (row,) = _verdict(
        _audit(m={"headline": h, "stages": {"probe": "x"}}), {"max_pii_exact_match": 0.05}
    ).checks
    assert row.verdict == "not_evaluable" and "all 18 probes were of held-out controls" in row.reason
    assert "probe build" in row.fix
    h.update(pii_exact_match_members=0.0, pii_exact_match_members_n=12)
    (row,) = _verdict(
        _audit(m={"headline": h, "stages": {"probe": "x"}}), {"max_pii_exact_match": 0.05}
    ).checks
    assert row.verdict == "pass" and "members 0.0% (n = 12)" in row.note


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
    # issue 32: the leak limit is an excess over the held-out null, the bare counts are gone
    required = {lim.option: lim.value for lim in limits if lim.required}
    assert required == {"max_pii_people_excess": 0.05, "max_mia_auc": 0.6}
    options = {lim.option for lim in limits}
    assert "max_pii_exact_match_excess" in options
    assert not options & {"max_pii_unique", "max_pii_exact_match", "max_unique"}
    # a model trained without canaries, with no public model and no probing: passes on what ran
    s = _audit(
        m={
            "headline": {
                "mia_auc": 0.52,
                "mia_auc_ci": [0.46, 0.58],
                "mia_num_per_side": 200,
                "by_k": {
                    "1": {
                        "unique_sequences": 4,
                        "pii_unique_sequences": 0,
                        "pii_people_excess": 0.0,
                        "pii_people_excess_ci": [-0.02, 0.03],
                    }
                },
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
    assert statuses["pii_people_excess (k=1)"] == "pass"
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
        "why": "no 95 % interval recorded: decided on the value alone",  # issue 32: says how it was decided
        "rationale": "",
    }


def _browser():
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _chromium(page, *args):
    import subprocess

    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--hide-scrollbars",
    ]
    proc = subprocess.run(
        [_browser(), *flags, "--virtual-time-budget=3000", *args, page.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.stdout


def _render_and_gate(tmp_path, models, gate):
    from typer.testing import CliRunner

    from lmleak.cli.main import app
    from lmleak.render.html import render_report

    summary = _audit(**models)
    summary["config"] = {"gate": gate}
    summary["provenance"] = {"model": {"hash": "probe"}}  # a model behind an API: nothing to re-hash
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    page = render_report(tmp_path)
    exit_code = CliRunner().invoke(app, ["gate", str(tmp_path)]).exit_code
    checks = json.loads(CliRunner().invoke(app, ["gate", str(tmp_path), "--json"]).stdout)["checks"]
    return page, exit_code, checks


def _dom_verdict(page):
    """Per model the badge Chromium shows, and every verdict row's status, from the DOM after scripts ran."""
    dom = _chromium(page, "--dump-dom")
    cards = re.findall(r'<h3>([^<]+)<span class="badge ([a-z_]+)" data-status="([a-z_]+)"', dom)
    assert cards and all(a == b for _, a, b in cards)
    return {name: status for name, _, status in cards}, re.findall(r'<tr data-status="([a-z_]+)">', dom)


HEAD = {"mia_num_per_side": 60, "mia_method": "perplexity", "by_k": {"1": {"unique_sequences": 2}}}


def test_the_verdict_in_the_html_as_chromium_shows_it_agrees_with_the_gates_exit(tmp_path):
    """Three models -- one passes, one fails, one lacks a required measurement: Chromium shows each
    card's verdict as `lmleak gate` computes it, row by row, and the gate exits 1; the first screen
    shows the verdict cards in their colours."""
    import numpy as np
    from PIL import Image

    if _browser() is None:
        pytest.skip("no Chromium on this machine (CI installs Debian's chromium)")
    models = {
        "ok": {
            "headline": {**HEAD, "mia_auc": 0.55, "max_exposure": 2.0},
            "stages": {"mia": "x", "report": "y"},
        },
        "leaky": {
            "headline": {**HEAD, "mia_auc": 0.9, "max_exposure": 2.0},
            "stages": {"mia": "x", "report": "y"},
        },
        "unaudited": {"headline": {**HEAD, "mia_auc": 0.55}, "stages": {"mia": "x", "report": "y"}},
    }
    page, exit_code, checks = _render_and_gate(tmp_path, models, {"max_mia_auc": 0.6, "max_exposure": 10})
    badges, rows = _dom_verdict(page)
    assert badges == {"ok": "pass", "leaky": "fail", "unaudited": "not_evaluable"}
    assert rows == [c["status"] for c in checks]  # the same table, row by row
    assert exit_code == 1 and any(s != "pass" for s in badges.values())
    shot = tmp_path / "verdict.png"
    _chromium(page, "--window-size=1280,1600", f"--screenshot={shot}")
    img = np.asarray(Image.open(shot).convert("RGB"), dtype=np.int32)

    def pixels(rgb):
        return int((np.abs(img - np.array(rgb)).sum(axis=2) < 30).sum())

    # each card's border and badge in its colour: green pass, red fail, amber not evaluable
    assert pixels((6, 118, 71)) > 500 and pixels((180, 35, 24)) > 500 and pixels((181, 71, 8)) > 500


@pytest.mark.slow
@pytest.mark.parametrize(
    "gate, exit_code",
    [
        ({"max_mia_auc": 0.8, "max_unique": 5}, 0),  # both hold
        ({"max_mia_auc": 0.6, "max_unique": 5}, 1),  # the AUC fails
        ({"max_mia_auc": 0.8, "max_exposure": 10}, 1),  # exposure not evaluable, required
        ({"max_mia_auc": 0.8, "max_exposure": 10, "allow_not_evaluable": True}, 0),
    ],
)
def test_one_models_verdict_in_chromium_follows_the_gate_exit_under_each_kind_of_limit(
    tmp_path, gate, exit_code
):
    if _browser() is None:
        pytest.skip("no Chromium on this machine (CI installs Debian's chromium)")
    page, got, checks = _render_and_gate(
        tmp_path, {"m": {"headline": {**HEAD, "mia_auc": 0.7}, "stages": {"mia": "x"}}}, gate
    )
    badges, rows = _dom_verdict(page)
    assert got == exit_code and (exit_code == 0) == (badges == {"m": "pass"})
    assert rows == [c["status"] for c in checks]


# --- issue 32: every limit decided on its 95 % interval ------------------------------------------


def _mia(auc, ci, n=40):
    h = {"mia_auc": auc, "mia_auc_ci": list(ci), "mia_method": "perplexity", "mia_num_per_side": n}
    return _audit(m={"headline": h, "stages": {"mia": "x"}})


@pytest.mark.parametrize(
    "auc, ci, status",
    [
        (0.48, (0.08, 0.82), "inconclusive"),  # the null audit "passed" on its point estimate
        (0.65, (0.55, 0.75), "inconclusive"),  # "failed" on its point estimate
        (0.52, (0.45, 0.59), "pass"),
        (0.52, (0.45, 0.60), "pass"),  # the limit itself holds
        (0.70, (0.61, 0.79), "fail"),
    ],
)
def test_the_membership_limit_is_decided_on_its_interval(auc, ci, status):
    (row,) = _verdict(_mia(auc, ci), {"max_mia_auc": 0.6}).checks
    assert row.verdict == status and row.to_dict()["status"] == status
    assert (row.power is not None) == (status == "inconclusive")


def test_an_inconclusive_row_has_a_power_line_and_blocks_the_verdict_unless_allowed():
    s = _mia(0.55, (0.40, 0.70))
    v = _verdict(s, {"max_mia_auc": 0.6})
    (row,) = v.checks
    assert row.power.startswith("at this effect (0.55 against 0.6) about 360 texts a side (now 40)")
    assert not v.passed and v.failed == [row] and v.status == "inconclusive"
    assert v.model_status("m") == "inconclusive"
    (cells,) = verdict_rows(v)
    assert cells["result"] == "Inconclusive (blocks)" and cells["status"] == "inconclusive"
    assert "about 360 texts a side" in cells["why"] and cells["interval"] == "[0.4, 0.7]"
    assert "INCONCLUSIVE" in row.describe() and "about 360 texts a side" in row.describe()
    allowed = _verdict(s, {"max_mia_auc": 0.6}, allow_inconclusive=True)
    assert allowed.passed and allowed.status == "pass" and allowed.model_status("m") == "pass"
    assert verdict_rows(allowed)[0]["result"] == "Inconclusive (allowed)"
    # an optional limit that ran and did not settle blocks as well: it was measured, not skipped
    assert GateCheck("m", "mia_auc", 0.6, 0.55, interval=(0.4, 0.7), required=False).blocks()


def test_the_json_status_is_the_first_of_fail_inconclusive_not_evaluable_that_blocks():
    def status(**headline):
        s = _audit(m={"headline": headline, "stages": {"mia": "x", "exposure": "x"}})
        return _verdict(s, {"max_mia_auc": 0.6, "max_exposure": 10}).to_dict()

    both = {"mia_auc": 0.55, "mia_auc_ci": [0.4, 0.7], "mia_num_per_side": 40}
    got = status(**both)  # inconclusive AUC, exposure not measured
    assert got["status"] == "inconclusive" and got["passed"] is False
    assert got["allow_inconclusive"] is False and got["allow_not_evaluable"] is False
    assert [c["status"] for c in got["checks"]] == ["inconclusive", "not_evaluable"]
    assert status(**both, max_exposure=12.0)["status"] == "fail"
    assert status(mia_auc=0.5, mia_auc_ci=[0.4, 0.59], mia_num_per_side=40)["status"] == "not_evaluable"
    assert (
        status(mia_auc=0.5, mia_auc_ci=[0.4, 0.59], mia_num_per_side=40, max_exposure=2.0)["status"] == "pass"
    )


def test_a_floor_is_decided_on_its_interval_mirrored_and_a_bound_without_one_on_its_value():
    assert GateCheck("m", "x", 1.0, 1.2, direction="min", interval=(1.05, 1.4)).verdict == "pass"
    assert GateCheck("m", "x", 1.0, 0.8, direction="min", interval=(0.6, 0.95)).verdict == "fail"
    assert GateCheck("m", "x", 1.0, 1.1, direction="min", interval=(0.9, 1.3)).verdict == "inconclusive"
    s = _audit(plain={"headline": {"epsilon_lower_bound": 0.7}, "stages": {"dp_audit": "x"}})
    (floor,) = _verdict(s, {"min_epsilon_lower_bound": 0.5}).checks
    assert floor.verdict == "pass" and "one-sided 95 % lower bound" in floor.note
    claim = _audit(dp={"headline": {"dp_epsilon": 1.0, "epsilon_lower_bound": 1.7}})
    (row,) = _verdict(claim, {}).checks
    assert row.verdict == "fail" and "one-sided 95 % lower bound" in row.note


def test_a_count_limit_of_zero_cannot_pass_on_its_interval_and_says_a_larger_sample_will_not_help():
    h = {"by_k": {"1": {"pii_unique_sequences": 0, "pii_unique_sequences_ci": [0.0, 3.69]}}}
    (row,) = _verdict(_audit(m={"headline": h, "stages": {"report": "r"}}), {"max_pii_unique": 0}).checks
    assert row.verdict == "inconclusive" and "never at this effect" in row.power
    h = {"by_k": {"1": {"pii_unique_sequences": 2, "pii_unique_sequences_ci": [0.0, 5.0]}}}
    (row,) = _verdict(_audit(m={"headline": h, "stages": {"report": "r"}}), {"max_pii_unique": 3}).checks
    assert row.verdict == "inconclusive" and "max_pii_people_excess" in row.power


def _release(headline, **extra):
    s = _audit(m={"headline": headline, "stages": {"report": "r", "mia": "x", "probe": "p"}, **extra})
    return verdict_of(s, _headlines(s), profile_limits("release"), profile="release")


#: a fake headline with the report's and the probe's null keys (docs: /work/wt/CONTRACT.md)
NULLED = {
    "mia_auc": 0.51,
    "mia_auc_ci": [0.45, 0.57],
    "mia_num_per_side": 300,
    "mia_method": "perplexity",
    "pii_people_members": 12,
    "pii_people_members_n": 200,
    "pii_people_null": 3,
    "pii_people_null_n": 50,
    "null_kind": "held_out",
    "pii_exact_match_excess": 0.2,
    "pii_exact_match_excess_ci": [0.12, 0.28],
    "pii_exact_match_members": 0.25,
    "pii_exact_match_members_n": 120,
    "pii_exact_match_controls": 0.05,
    "pii_exact_match_controls_n": 40,
    "by_k": {
        "1": {"unique_sequences": 5, "pii_people_excess": 0.0, "pii_people_excess_ci": [-0.05, 0.04]},
        "3": {"unique_sequences": 40, "pii_people_excess": 0.04, "pii_people_excess_ci": [-0.02, 0.10]},
    },
}


def test_the_release_profile_decides_the_excess_over_the_null_per_k_on_fake_summaries():
    v = _release(NULLED)
    rows = {c.metric: c for c in v.checks}
    assert rows["pii_people_excess (k=1)"].verdict == "pass"
    k3 = rows["pii_people_excess (k=3)"]
    assert k3.verdict == "inconclusive"
    # 0.06 toward the limit at an effect of 0.01: 36 times as many people in both groups
    assert "about 7,200 trained-on people and 1,800 held-out people (now 200 and 50)" in k3.power
    assert "trained-on people 12 of 200 (6.0%)" in k3.note and "held-out people" in k3.note
    assert rows["pii_exact_match_excess"].verdict == "fail"  # optional, measured and beyond: blocks
    assert "members 25.0% (n = 120), held-out controls 5.0% (n = 40)" in rows["pii_exact_match_excess"].note
    assert rows["mia_auc"].verdict == "pass"
    assert v.status == "fail" and v.model_status("m") == "fail"
    cells = {r["limit"]: r for r in verdict_rows(v)}
    k3_cells = cells["People with leaked PII beyond the null (share) (k=3) ≤ 0.05"]
    assert k3_cells["result"] == "Inconclusive (blocks)" and "7,200 trained-on people" in k3_cells["why"]
    assert k3_cells["rationale"].startswith("The share of trained-on people")
    settled = json.loads(json.dumps(NULLED))
    settled["by_k"]["3"].update(pii_people_excess=0.01, pii_people_excess_ci=[-0.02, 0.045])
    settled.update(pii_exact_match_excess=0.01, pii_exact_match_excess_ci=[-0.03, 0.04])
    assert _release(settled).passed


def test_an_excess_with_no_null_is_not_evaluable_with_the_stages_reason_and_fix_never_fail():
    no_null = json.loads(json.dumps(NULLED))
    for k in no_null["by_k"].values():
        k["pii_people_excess"] = None
        k.pop("pii_people_excess_ci")
    no_null.update(
        pii_people_excess=None,
        pii_people_excess_reason="no held-out people and no public model: nothing to compare the leaks with",
        pii_people_excess_fix="set `public_model: leave-out` in the audit config",
        pii_exact_match_excess=0.0,
        pii_exact_match_excess_ci=[-0.02, 0.03],
    )
    v = _release(no_null)
    for k in ("1", "3"):
        row = next(c for c in v.checks if c.metric == f"pii_people_excess (k={k})")
        assert row.verdict == "not_evaluable" and row.reason.startswith("no held-out people")
        assert row.fix == "set `public_model: leave-out` in the audit config"
    assert v.status == "not_evaluable" and not v.passed
    # with no reason recorded (an older run), the verdict says what would give a null
    no_null.pop("pii_people_excess_reason")
    row = next(c for c in _release(no_null).checks if c.metric == "pii_people_excess (k=1)")
    assert row.verdict == "not_evaluable" and "no null" in row.reason and "holdout" in row.fix


def test_leakage_epsilon_with_nothing_to_bound_states_it_and_without_a_public_model_is_not_evaluable():
    """The DP demo model: 0 user-unique sequences and no public model showed "Pass —"."""
    h = {"by_k": {"1": {"unique_sequences": 0}}}
    (row,) = _verdict(
        _audit(m={"headline": h, "stages": {"report": "r"}}), {"max_leakage_epsilon": 10}
    ).checks
    assert row.verdict == "pass" and row.shown == "0 sequences to bound"
    assert (
        verdict_rows(
            _verdict(_audit(m={"headline": h, "stages": {"report": "r"}}), {"max_leakage_epsilon": 10})
        )[0]["value"]
        == "0 sequences to bound"
    )
    no_public = [
        {
            "analysis": "leakage ε",
            "reason": "no public model: leakage ε compares ...",
            "fix": "set `public_model:`",
            "metrics": ["leakage_epsilon", "curated_unique_sequences"],
        }
    ]
    s = _audit(m={"headline": h, "stages": {"report": "r"}, "not_run": no_public})
    (row,) = _verdict(s, {"max_leakage_epsilon": 10}).checks
    assert (
        row.verdict == "not_evaluable"
        and row.reason.startswith("no public model")
        and "public_model" in row.fix
    )
    # a single report stage's summary records public_model: null
    single = {"public_model": None, "by_k": {"1": {"unique_sequences": 0}}}
    (row,) = verdict_of(single, {"run": h}, resolve_limits({"max_leakage_epsilon": 10})).checks
    assert row.verdict == "not_evaluable"
    # no row passes with "—" as its value
    for c in _release(NULLED).checks + _verdict(s, {"max_leakage_epsilon": 10}).checks:
        assert c.verdict != "pass" or c.value is not None or c.shown, c


def test_an_unverified_tokenizer_is_said_on_every_row_of_its_model():
    """Issue 33: a model behind an API whose tokenizer was not checked against /tokenize (the audit's
    access record, or a one-stage summary's tokenizer_verified: false) gets the note on every row; a
    verified one does not."""
    from lmleak.render.verdict import UNVERIFIED_TOKENIZER

    s = _audit(
        api={"headline": {"by_k": {"1": {"unique_sequences": 3}}}, "stages": {"report": "x"}},
        ok={"headline": {"by_k": {"1": {"unique_sequences": 3}}}, "stages": {"report": "x"}},
    )
    s["models"]["api"]["access"] = {"tier": "echo", "tokenizer_verified": False}
    s["models"]["ok"]["access"] = {"tier": "echo", "tokenizer_verified": True}
    rows = {c.model: c for c in _verdict(s, {"max_unique": 20}).checks}
    assert UNVERIFIED_TOKENIZER in rows["api"].note and UNVERIFIED_TOKENIZER not in (rows["ok"].note or "")
    assert rows["api"].verdict == "pass"  # said, not failed: the perplexity check stops a wrong one
    one = {"tokenizer_verified": False, "unique_sequences": 3}
    (row,) = verdict_of(one, {"run": {"unique_sequences": 3}}, resolve_limits({"max_unique": 20})).checks
    assert UNVERIFIED_TOKENIZER in row.note
