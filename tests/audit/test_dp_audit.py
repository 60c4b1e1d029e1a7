"""lmleak.audit.dp_audit: the one-run DP audit as a training run (Steinke, Nasr & Jagielski 2023):
the canaries trained on, the scores against a one-at-a-time oracle, the bound beside the claim."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from lmleak.attacks.dp_audit import epsilon_lower_bound, make_canaries
from lmleak.audit.dp_audit import DPAuditConfig, run_dp_audit
from lmleak.data.synth.customersim import synthesize
from lmleak.errors import ConfigError
from lmleak.models.small import load_small_model
from lmleak.train.config import TrainConfig


def test_one_audit_run_records_the_inclusion_and_writes_the_bound_beside_the_claim(tmp_path):
    paths = synthesize(tmp_path / "data", users=6, dialogs_per_user=2, seed=0)
    cfg = TrainConfig(
        mode="nodp",
        epochs=2,
        batch_size=8,
        seq_len=32,
        n_embd=32,
        n_layer=1,
        n_head=2,
        vocab_size=300,
        holdout_users=0.2,
    )
    summary = run_dp_audit(
        paths["corpus"], tmp_path / "run", cfg, DPAuditConfig(m=24, r=12, seed=1), progress=False
    )
    table = pd.read_parquet(tmp_path / "run" / "canaries.parquet")
    expected = make_canaries(24, seed=1)
    assert table["included"].tolist() == [c["included"] for c in expected]
    assert table["secret"].tolist() == [c["secret"] for c in expected]
    # what was trained on: exactly the included canaries (train.json lists the training users)
    train = json.loads((tmp_path / "run" / "model" / "train.json").read_text())
    canary_users = {u for u in train["train_users"] if u.startswith("dp-audit-canary-")}
    assert canary_users == {c["user_id"] for c in expected if c["included"]}
    privacy = json.loads((tmp_path / "run" / "model" / "privacy.json").read_text())
    a = privacy["dp_audit"]
    assert (a["m"], a["r"]) == (24, 12)
    assert a["v"] == int(table["correct"].sum())
    assert privacy["epsilon_lower_bound"] == pytest.approx(
        epsilon_lower_bound(24, 12, a["v"], a["delta"], 0.95)
    )
    assert privacy["epsilon"] is None and summary["dp_epsilon"] is None
    assert summary["epsilon_lower_bound"] == privacy["epsilon_lower_bound"]
    assert summary["scenario"]["target"] == "membership"
    # scores are log p(secret | prefix): the slow way, one canary at a time
    model = load_small_model(tmp_path / "run" / "model")
    c = expected[0]
    full, ctx = model.tokenizer.encode(c["text"]), model.tokenizer.encode(c["prefix"])
    one = float(model.token_stats([full])[0].logprobs[len(ctx) :].astype(np.float64).sum())
    assert table["logprob"].iloc[0] == pytest.approx(one, abs=1e-4)


def test_a_canary_longer_than_one_training_sequence_is_refused_before_training(tmp_path):
    paths = synthesize(tmp_path / "data", users=3, dialogs_per_user=1, seed=0)
    cfg = TrainConfig(mode="nodp", epochs=1, seq_len=6, n_embd=32, n_layer=1, n_head=2, vocab_size=200)
    with pytest.raises(ConfigError, match="seq_len"):
        run_dp_audit(paths["corpus"], tmp_path / "run", cfg, DPAuditConfig(m=4), progress=False)
    assert not (tmp_path / "run" / "model").exists()


@pytest.mark.slow  # a DP-SGD training run
def test_a_dp_run_reports_the_accountants_epsilon_beside_the_measured_bound(tmp_path):
    paths = synthesize(tmp_path / "data", users=6, dialogs_per_user=2, seed=0)
    cfg = TrainConfig(
        mode="dp",
        epochs=1,
        batch_size=8,
        seq_len=32,
        n_embd=32,
        n_layer=1,
        n_head=2,
        vocab_size=300,
        noise_multiplier=1.0,
        holdout_users=0.0,
    )
    summary = run_dp_audit(paths["corpus"], tmp_path / "run", cfg, DPAuditConfig(m=16), progress=False)
    privacy = json.loads((tmp_path / "run" / "model" / "privacy.json").read_text())
    assert privacy["mode"] == "dp" and privacy["epsilon"] > 0
    assert summary["dp_epsilon"] == privacy["epsilon"] and privacy["dp_audit"]["delta"] == privacy["delta"]
    assert summary["claim_violated"] == (privacy["epsilon_lower_bound"] > privacy["epsilon"])
    assert summary["statement"].startswith(f"claimed ε ≤ {privacy['epsilon']:.3g}; measured ≥ ")
    assert summary["scenario"]["anonymization"].startswith("dp")


def test_with_report_runs_the_audit_then_renders_its_run_and_adds_the_reports_path(tmp_path, monkeypatch):
    # the training itself is covered above and end to end in tests/cli/test_dpaudit.py
    from lmleak.audit import dp_audit as dp_module

    calls: list[tuple] = []

    def fake_audit(corpus, out, cfg, audit, *, progress):
        calls.append(("audit", corpus, out, cfg, audit, progress))
        return {"epsilon_lower_bound": 0.5}

    def fake_render(run):
        calls.append(("render", run))
        return tmp_path / "run" / "report.html"

    monkeypatch.setattr(dp_module, "run_dp_audit", fake_audit)
    monkeypatch.setattr(dp_module, "render_report", fake_render)
    audit = DPAuditConfig(m=4)
    summary = dp_module.run_dp_audit_with_report("c.jsonl", tmp_path / "run", "cfg", audit, progress=False)
    assert calls == [
        ("audit", "c.jsonl", tmp_path / "run", "cfg", audit, False),
        ("render", tmp_path / "run"),
    ]
    assert summary == {"epsilon_lower_bound": 0.5, "report": str(tmp_path / "run" / "report.html")}


def test_a_placebo_run_trains_on_no_canary_and_certifies_nothing_where_the_real_run_does(tmp_path):
    # issue 26 item 3: the same audit with and without the canaries in training; only the
    # training data differs (same canaries, coin flips, tokenizer, recipe, seed)
    paths = synthesize(tmp_path / "data", users=6, dialogs_per_user=2, seed=0)
    cfg = TrainConfig(
        mode="nodp",
        epochs=8,
        batch_size=8,
        lr=5e-3,
        seq_len=32,
        n_embd=32,
        n_layer=1,
        n_head=2,
        vocab_size=300,
        holdout_users=0.2,
    )
    runs = {}
    for placebo in (True, False):
        out = tmp_path / f"run-{placebo}"
        audit = DPAuditConfig(m=32, r=32, seed=1, placebo=placebo)
        runs[placebo] = run_dp_audit(paths["corpus"], out, cfg, audit, progress=False)
        train = json.loads((out / "model" / "train.json").read_text())
        trained = {u for u in train["train_users"] if u.startswith("dp-audit-canary-")}
        assert len(trained) == runs[placebo]["dp_audit"]["num_trained_canaries"]
    placebo, real = runs[True], runs[False]
    assert placebo["placebo"] is True and placebo["dp_audit"]["num_trained_canaries"] == 0
    assert placebo["dp_audit"]["num_included"] == real["dp_audit"]["num_trained_canaries"] > 0
    assert placebo["epsilon_lower_bound"] == 0.0 and "placebo_warning" not in placebo
    assert placebo["statement"].startswith("placebo run (no canary trained on): ")
    assert real["epsilon_lower_bound"] > 0.0  # the memorised canaries: the pipeline can see them
    # the null, read from the written table: guesses on excluded canaries against included ones
    table = pd.read_parquet(tmp_path / "run-False" / "canaries.parquet")
    null = real["dp_audit"]["null"]
    assert null["excluded_guessed_in"] == int(((~table["included"]) & (table["guess"] > 0)).sum())
    assert null["included_guessed_in"] + null["excluded_guessed_out"] == real["dp_audit"]["v"]
    assert real["null"] == null["statement"] and "excluded canaries are the null" in real["null"]
    # the most 32 guesses can certify: all 32 right, at the run's delta (1e-5 without an accountant)
    assert real["max_certifiable_epsilon"] == epsilon_lower_bound(32, 32, 32, 1e-5, 0.95)
    assert real["limit"].startswith("with 32 guesses about 32 canaries this audit certifies at most ε ≥ 2.32")


def test_the_claim_is_judged_at_the_claimed_delta_not_at_a_smaller_audit_delta():
    """Regression: `--delta` below the claimed δ gives a larger bound, which printed a violation that
    the counts do not support. Hand check: the bound at the claimed δ is where the p-value of Theorem 3
    (`p_value`) crosses 5 %."""
    from lmleak.attacks.dp_audit import epsilon_lower_bound, p_value
    from lmleak.audit.dp_audit import claim_check

    m, r, v = 1000, 100, 100
    at_zero = epsilon_lower_bound(m, r, v, 0.0, 0.95)
    record = {"m": m, "r": r, "v": v, "delta": 0.0, "confidence": 0.95, "epsilon_lower_bound": at_zero}
    check = claim_check(3.0, 1e-3, record)
    bound = check["epsilon_lower_bound_at_claimed_delta"]
    assert at_zero > 3.0 > bound  # refuted at the audit's delta = 0, not at the claimed delta
    assert not check["claim_violated"] and check["claimed_delta"] == 1e-3
    assert p_value(m, r, v, bound - 1e-4, 1e-3) < 0.05 <= p_value(m, r, v, bound + 1e-4, 1e-3)
    assert claim_check(3.0, 0.0, record) == {
        "claimed_delta": 0.0,
        "epsilon_lower_bound_at_claimed_delta": at_zero,
        "claim_violated": True,
    }
    assert claim_check(None, 1e-3, record)["claim_violated"] is False  # no claim, nothing to violate
