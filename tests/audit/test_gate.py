"""lmleak.audit.gate: one check per model, metric and k; a DP claim the measured bound refutes always fails."""

from __future__ import annotations

import json

import pytest

from lmleak.audit.gate import GateCheck, check_gate
from lmleak.data.corpus import Corpus, Document
from lmleak.models.fake import FakeLM
from lmleak.report.leakage import ReportConfig, run_report

#: Provenance of a model behind an API: nothing to re-hash, so the gate checks the limits only (a
#: summary without provenance is refused, issue 33).
API = {"provenance": {"model": {"backend": "http", "hash": "probe"}}}


def _summary(tmp_path, **headline):
    (tmp_path / "summary.json").write_text(json.dumps({**API, "models": {"m": {"headline": headline}}}))
    return tmp_path


def test_a_measured_bound_above_the_claimed_epsilon_fails_the_gate_whatever_the_limits(tmp_path):
    run = _summary(tmp_path, dp_epsilon=1.0, epsilon_lower_bound=1.7, extracted=0)
    checks = check_gate(run, {"extracted": 10})
    assert [c.passed for c in checks] == [False, True]
    assert "claimed" in checks[0].metric


def test_a_bound_below_the_claim_passes_and_the_floor_checks_the_audits_power_on_controls(tmp_path):
    (tmp_path / "summary.json").write_text(
        json.dumps(
            {
                **API,
                "models": {
                    "dp": {"headline": {"dp_epsilon": 3.0, "epsilon_lower_bound": 0.4}},
                    "plain": {"headline": {"epsilon_lower_bound": 0.7}},
                },
            }
        )
    )
    checks = check_gate(tmp_path, {"min_epsilon_lower_bound": 0.5})
    assert [(c.model, c.direction, c.passed) for c in checks] == [("dp", "max", True), ("plain", "min", True)]
    floor = [c for c in check_gate(tmp_path, {"min_epsilon_lower_bound": 1.0}) if c.direction == "min"]
    assert len(floor) == 1 and not floor[0].passed
    assert "floor 1" in floor[0].describe()


def test_the_floor_fails_when_every_model_claims_dp_and_zero_checks_only_the_claim(tmp_path):
    run = _summary(tmp_path, dp_epsilon=3.0, epsilon_lower_bound=0.4)
    assert [c.passed for c in check_gate(run, {"min_epsilon_lower_bound": 0.0})] == [True]  # the claim only
    checks = check_gate(run, {"min_epsilon_lower_bound": 0.5})
    assert [c.passed for c in checks] == [True, False]  # the claim holds; no control shows power
    assert "without a DP claim" in checks[1].metric


def test_the_gate_checks_every_k_and_its_verdict_does_not_depend_on_their_order(tmp_path):
    texts = [f"user {i} code {i * 7919 % 1000} and the word {i % 3} then {i * 31 % 7}" for i in range(12)]
    model = FakeLM.from_texts(texts, order=2)  # a bigram model: k = 1 and k = 3 leak different counts
    corpus = Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)])
    verdicts = []
    for order in ((1, 3), (3, 1)):
        run = tmp_path / f"run-{order[0]}"
        summary = run_report(model, corpus, run, ReportConfig(k=order))
        by_k = {k: summary["by_k"][str(k)]["unique_sequences"] for k in order}
        limit = min(by_k.values())  # passes at one k, fails at the other when they differ
        checks = check_gate(run, {"unique_sequences": limit})
        assert {c.metric for c in checks} == {"unique_sequences (k=1)", "unique_sequences (k=3)"}
        verdicts.append((all(c.passed for c in checks), sorted((c.metric, c.value) for c in checks)))
    assert len(set(by_k.values())) == 2
    assert verdicts[0] == verdicts[1]
    assert verdicts[0][0] is False  # the old gate read only the first k: one of the orders passed


def test_a_leakage_epsilon_too_large_for_a_float_fails_every_limit_and_an_unmeasured_metric_fails(tmp_path):
    run = _summary(tmp_path, log_leakage_epsilon=800.0, mia_auc=0.61)
    eps, auc, exposure = check_gate(run, {"leakage_epsilon": 1e300, "mia_auc": 0.6, "max_exposure": 5})
    assert eps.value == float("inf") and not eps.passed and "= ∞" in eps.describe()
    assert auc.value == 0.61 and not auc.passed and auc.describe() == "m: mia_auc = 0.61 (limit 0.6) FAILED"
    assert exposure.value is None and not exposure.passed and "was not measured" in exposure.describe()
    (small,) = check_gate(_summary(tmp_path, log_leakage_epsilon=2.0), {"leakage_epsilon": 7.5})
    assert small.value == pytest.approx(7.38905609893065) and small.passed  # e^2 <= 7.5


def test_a_check_passes_exactly_at_its_limit_in_either_direction():
    assert GateCheck("m", "mia_auc", 0.6, 0.6).passed and not GateCheck("m", "mia_auc", 0.6, 0.6000001).passed
    assert GateCheck("m", "epsilon_lower_bound", 0.5, 0.5, direction="min").passed
    assert not GateCheck("m", "epsilon_lower_bound", 0.5, 0.4999, direction="min").passed


def test_run_gate_holds_every_check_and_fails_when_one_does(tmp_path):
    from lmleak.audit.gate import GateResult, run_gate

    (tmp_path / "summary.json").write_text(
        json.dumps({**API, "models": {"m": {"headline": {"mia_auc": 0.7, "max_exposure": 3.0}}}})
    )
    limits = {"max_exposure": 4.0, "mia_auc": 0.6}
    r = run_gate(tmp_path, limits)
    assert r == GateResult(tuple(check_gate(tmp_path, limits)))
    assert not r.passed and [c.metric for c in r.failed] == ["mia_auc"]
    d = r.to_dict()
    assert d["passed"] is False and d["allow_not_evaluable"] is False and d["profile"] is None
    keys = (
        "model",
        "metric",
        "limit",
        "value",
        "passed",
        "status",
    )  # the keys gate --json has always had, + status
    assert [{k: c[k] for k in keys} for c in d["checks"]] == [
        {
            "model": "m",
            "metric": "max_exposure",
            "limit": 4.0,
            "value": 3.0,
            "passed": True,
            "status": "pass",
        },
        {"model": "m", "metric": "mia_auc", "limit": 0.6, "value": 0.7, "passed": False, "status": "fail"},
    ]
    ok = run_gate(tmp_path, {"mia_auc": 0.8})
    assert ok.passed and ok.failed == [] and ok.to_dict()["passed"] is True


# --- issue 32: decided on the interval; --allow-inconclusive --------------------------------------


def _gate(*args):
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    return CliRunner().invoke(app, ["gate", *map(str, args)], env={"COLUMNS": "200"})


STRADDLES = {"mia_auc": 0.55, "mia_auc_ci": [0.40, 0.70], "mia_num_per_side": 40, "mia_method": "perplexity"}


def test_an_inconclusive_limit_fails_the_gate_unless_allow_inconclusive_and_the_json_says_which(tmp_path):
    run = _summary(tmp_path, **STRADDLES)
    r = _gate(run, "--max-mia-auc", "0.6", "--json")
    got = json.loads(r.stdout)
    assert r.exit_code == 1 and got["passed"] is False and got["status"] == "inconclusive"
    assert got["allow_inconclusive"] is False and got["allow_not_evaluable"] is False
    (check,) = got["checks"]
    assert check["status"] == "inconclusive" and check["passed"] is False and check["interval"] == [0.4, 0.7]
    assert "about 360 texts a side (now 40)" in check["power"]
    r = _gate(run, "--max-mia-auc", "0.6", "--allow-inconclusive", "--json")
    got = json.loads(r.stdout)
    assert r.exit_code == 0 and got["passed"] is True and got["status"] == "pass"
    assert got["allow_inconclusive"] is True and got["checks"][0]["status"] == "inconclusive"
    # the terminal: the table's result and the power line in the reasons below it
    text = _gate(run, "--max-mia-auc", "0.6")
    (row,) = [line for line in text.output.splitlines() if "Membership inference AUC" in line and "│" in line]
    assert [c.strip() for c in row.split("│")[1:-1]][-1] == "Inconclusive (blocks)"
    flat = " ".join(text.output.split())
    assert "about 360 texts a side (now 40) would settle it" in flat
    assert "gate failed: 1 check(s) (1 inconclusive: --allow-inconclusive passes those)" in flat
    # a limit the interval settles: pass and fail exit as before
    assert _gate(run, "--max-mia-auc", "0.7").exit_code == 0
    assert (
        _gate(_summary(tmp_path, mia_auc=0.7, mia_auc_ci=[0.62, 0.78]), "--max-mia-auc", "0.6").exit_code == 1
    )


def test_the_gate_config_key_allow_inconclusive_and_the_api_take_the_same_decision(tmp_path):
    from lmleak.audit.gate import gate_run, run_gate

    for allow in (False, True):
        d = tmp_path / str(allow)
        d.mkdir()
        summary = {
            "models": {"m": {"headline": STRADDLES}},
            "config": {"gate": {"max_mia_auc": 0.6, "allow_inconclusive": allow}},
            "provenance": {"model": {"hash": "probe"}},  # a model behind an API: nothing to re-hash
        }
        (d / "summary.json").write_text(json.dumps(summary))
        assert _gate(d).exit_code == (0 if allow else 1)
        assert gate_run(d, {}).passed is allow and gate_run(d, {}).allow_inconclusive is allow
    run = tmp_path / "False"
    assert gate_run(run, {}, allow_inconclusive=True).passed  # the flag allows what the config does not
    assert run_gate(run, {"max_mia_auc": 0.6}).status == "inconclusive"
    assert run_gate(run, {"max_mia_auc": 0.6}, allow_inconclusive=True).passed


def test_the_new_limits_are_gate_options_and_audit_config_keys(tmp_path):
    from lmleak.audit.config import parse_config
    from lmleak.errors import ConfigError

    headline = {
        "pii_exact_match_excess": 0.2,
        "pii_exact_match_excess_ci": [0.1, 0.3],
        "by_k": {"1": {"pii_people_excess": 0.01, "pii_people_excess_ci": [-0.01, 0.03]}},
    }
    run = _summary(tmp_path, **headline)
    r = _gate(run, "--max-pii-people-excess", "0.05", "--max-pii-exact-match-excess", "0.05", "--json")
    got = {c["metric"]: c["status"] for c in json.loads(r.stdout)["checks"]}
    assert got == {"pii_people_excess (k=1)": "pass", "pii_exact_match_excess": "fail"} and r.exit_code == 1
    base = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "fake:c.jsonl"}]}
    cfg = parse_config(
        {**base, "gate": {"profile": "release", "max_pii_people_excess": 0.1, "allow_inconclusive": True}}
    )
    assert cfg.gate.max_pii_people_excess == 0.1 and cfg.gate.allow_inconclusive is True
    with pytest.raises(ConfigError, match="gate.max_pii_people_excess"):
        parse_config({**base, "gate": {"max_pii_people_excess": -0.1}})
