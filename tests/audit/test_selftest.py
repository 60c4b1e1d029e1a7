"""lmleak.audit.selftest and ``lmleak selftest`` (cli/selftest.py): every check passes on this
install, and a formula planted wrong fails its own check, by name, with exit 1."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from lmleak.audit import selftest
from lmleak.cli.main import app

FAMILIES = ("ledger.", "exposure.", "mia.", "dp.", "wilson.", "newcombe.", "verdict.")


@pytest.fixture
def no_null_audit(monkeypatch):
    """The planted-error tests leave out the null-model audit (a few seconds of training each time;
    the first test runs it for real)."""
    monkeypatch.setattr(selftest, "_null_model_checks", lambda work: [])


def test_lmleak_selftest_passes_with_one_line_per_check():
    res = CliRunner().invoke(app, ["selftest"])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    checks = lines[:-1]
    assert all(" ok " in line and " vs " in line for line in checks), res.output
    names = [line.split()[0] for line in checks]
    for family in FAMILIES:
        assert any(n.startswith(family) for n in names), family
    for method in selftest.MIA_METHODS:
        assert f"mia.{method}" in names
    assert lines[-1].startswith(f"{len(checks)} checks, all passed (")


def test_a_planted_wrong_min_k_fails_that_check_by_name_and_exits_1(monkeypatch, no_null_audit):
    from lmleak.attacks import mia_methods

    # the mean of the k % *highest* log-probabilities instead of the lowest
    def wrong(lp, k):
        x = np.sort(np.asarray(lp, dtype=np.float64))[::-1]
        return float(x[: max(1, math.ceil(k * len(x)))].mean())

    monkeypatch.setattr(mia_methods, "min_k_prob", wrong)
    res = CliRunner().invoke(app, ["selftest", "--json"])
    assert res.exit_code == 1
    report = json.loads(res.output)
    assert report["failed"] == ["mia.min_k"]  # that check, and only it
    bad = next(c for c in report["checks"] if c["name"] == "mia.min_k")
    assert bad["ok"] is False and bad["got"] != bad["expected"]


def test_planted_errors_in_the_dp_bound_and_wilson_fail_their_checks(monkeypatch):
    from lmleak import intervals
    from lmleak.attacks import dp_audit

    assert all(c.ok for c in selftest._dp_checks() + selftest._wilson_checks() + selftest._newcombe_checks())
    real_p = dp_audit.p_value
    monkeypatch.setattr(dp_audit, "p_value", lambda m, r, v, e, d=0.0: real_p(m, r, v, e, 0.0))  # δ term lost
    assert [c.name for c in selftest._dp_checks() if not c.ok] == ["dp.delta_term"]

    # the normal-approximation (Wald) interval in Wilson's place: wrong at 0 of 20 and 1 of 29
    def wald(x, n, z=intervals.Z95):
        p = x / n
        h = z * math.sqrt(p * (1 - p) / n)
        return max(0.0, p - h), min(1.0, p + h)

    monkeypatch.setattr(intervals, "wilson_interval", wald)
    failed = [c.name for c in selftest._wilson_checks() if not c.ok]
    assert "wilson.0/20" in failed and "wilson.1/29" in failed


def test_a_check_family_that_raises_is_one_failed_check_and_the_others_still_run(
    monkeypatch, tmp_path, no_null_audit
):
    def broken(model, work):
        raise RuntimeError("planted")

    monkeypatch.setattr(selftest, "_ledger_checks", broken)
    monkeypatch.setattr(selftest, "_exposure_checks", lambda model: [])
    monkeypatch.setattr(selftest, "_mia_checks", lambda model, reference: [])
    checks = selftest.run_selftest(tmp_path)
    assert checks[0] == selftest.Check("ledger", False, "raised RuntimeError: planted", "no error")
    assert all(c.ok for c in checks[1:]) and len(checks) > 10
    assert checks[0].line().startswith("ledger                   FAILED lmleak raised RuntimeError")


def test_the_tiny_model_is_deterministic_and_the_texts_fit_min_k_whole():
    a, b = selftest.tiny_model(0), selftest.tiny_model(0)
    ids = a.tokenizer.encode(selftest.MIA_TEXTS[1])
    assert [len(a.tokenizer.encode(t)) for t in selftest.MIA_TEXTS] == [5, 10, 15]
    np.testing.assert_array_equal(a.token_stats([ids])[0].logprobs, b.token_stats([ids])[0].logprobs)
    assert not np.array_equal(
        a.token_stats([ids])[0].logprobs, selftest.tiny_model(1).token_stats([ids])[0].logprobs
    )


@pytest.mark.parametrize(("got", "expected", "ok"), [(1.0, 1.0 + 1e-6, True), (100.0, 100.02, False)])
def test_compare_is_relative_above_one_and_names_the_worst_pair(got, expected, ok):
    c = selftest._compare("x", [0.5, got], [0.5, expected], 1e-4)
    assert c.ok is ok and c.got == f"{got:.6g}" and c.expected == f"{expected:.6g}"


def test_a_passed_compare_shows_its_largest_pair_whatever_the_float_noise():
    # which pair is the worst of a pass is noise: here the noise moves, the shown pair does not
    for noise in ((3e-7, 1e-7, 0.0), (0.0, 1e-7, 3e-7)):
        got = [e + d for e, d in zip([-0.5, -4.0, -2.0], noise, strict=True)]
        c = selftest._compare("x", got, [-0.5, -4.0, -2.0], 1e-4)
        assert c.ok and c.expected == "-4" and c.got == f"{got[1]:.6g}"
    bad = selftest._compare("x", [-0.5, -4.0, -2.5], [-0.5, -4.0, -2.0], 1e-4)
    assert not bad.ok and (bad.got, bad.expected) == ("-2.5", "-2")


def test_a_planted_verdict_that_fails_every_model_fails_the_null_model_check(monkeypatch, tmp_path):
    from lmleak.audit import nullmodel

    monkeypatch.setattr(
        nullmodel, "release_status", lambda run: ("fail", [{"metric": "planted", "status": "fail"}])
    )
    (check,) = selftest._null_model_checks(tmp_path)
    assert check.name == "verdict.null_model" and not check.ok and check.got == "fail (planted)"
