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
    assert rows["api"].note == UNVERIFIED_TOKENIZER and rows["ok"].note is None
    assert rows["api"].verdict == "pass"  # said, not failed: the perplexity check stops a wrong one
    one = {"tokenizer_verified": False, "unique_sequences": 3}
    (row,) = verdict_of(one, {"run": {"unique_sequences": 3}}, resolve_limits({"max_unique": 20})).checks
    assert row.note == UNVERIFIED_TOKENIZER
