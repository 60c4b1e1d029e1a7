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


def _tiny_plain_gpt(epochs: int) -> TrainConfig:
    """The small plain GPT the one-run audits retrain (1 layer, width 32, 20 % of users held out)."""
    return TrainConfig(
        mode="nodp", epochs=epochs, batch_size=8, lr=5e-3, seq_len=32, n_embd=32, n_layer=1, n_head=2,
        vocab_size=300, holdout_users=0.2,
    )  # fmt: skip


def test_a_placebo_run_trains_on_no_canary_and_certifies_nothing_where_the_real_run_does(tmp_path):
    # issue 26 item 3: the same audit with and without the canaries in training; only the
    # training data differs (same canaries, coin flips, tokenizer, recipe, seed)
    paths = synthesize(tmp_path / "data", users=6, dialogs_per_user=2, seed=0)
    cfg = _tiny_plain_gpt(epochs=8)
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


# ------------------------------------------------------------------ user-level canaries (issue 27 item 5)


def _fake_training(monkeypatch, seen: dict, privacy: dict | None = None):
    """Replace training with an n-gram memoriser of the training corpus (no torch training): the
    plumbing of canaries, inclusion, scores and guesses runs as in a real audit."""
    from types import SimpleNamespace

    from lmleak.audit import dp_audit as dp_module
    from lmleak.models.fake import FakeLM

    def fake_train(corpus, out_dir, cfg, **kwargs):
        seen["docs"] = [(d.user_id, d.doc_id, d.text) for d in corpus]
        seen["config"] = cfg
        out_dir.mkdir(parents=True)
        return SimpleNamespace(model_dir=out_dir, privacy=privacy or {"mode": cfg.mode}, final={})

    monkeypatch.setattr(dp_module, "train_model", fake_train)
    monkeypatch.setattr(
        dp_module, "load_small_model", lambda d: FakeLM.from_texts([t for _, _, t in seen["docs"]])
    )


@pytest.mark.parametrize("placebo", [False, True])
def test_a_user_level_audit_adds_each_included_canary_user_with_its_documents(tmp_path, monkeypatch, placebo):
    seen: dict = {}
    _fake_training(monkeypatch, seen)
    paths = synthesize(tmp_path / "data", users=4, dialogs_per_user=1, seed=0)
    cfg = TrainConfig(mode="nodp", seq_len=32, vocab_size=300, holdout_users=0.0)
    audit = DPAuditConfig(m=40, r=40, seed=3, privacy_unit="user", canary_documents=3, placebo=placebo)
    summary = run_dp_audit(paths["corpus"], tmp_path / "run", cfg, audit, progress=False)
    canaries = make_canaries(40, seed=3)  # the same secrets and coin flips as a sequence-level audit
    added = [(u, t) for u, _, t in seen["docs"] if u.startswith("dp-audit-canary-")]
    expected = (
        [] if placebo else [(c["user_id"], c["text"]) for c in canaries if c["included"] for _ in range(3)]
    )
    assert sorted(added) == sorted(expected)
    assert len({d for _, d, _ in seen["docs"]}) == len(seen["docs"])  # every document its own id
    table = pd.read_parquet(tmp_path / "run" / "canaries.parquet")
    assert len(table) == 40 and set(table["documents"]) == {3}  # one row per canary user
    a = summary["dp_audit"]
    assert summary["privacy_unit"] == a["privacy_unit"] == "user" and summary["canary_documents"] == 3
    assert a["m"] == 40 and a["v"] == int(table["correct"].sum())
    assert a["epsilon_lower_bound"] == epsilon_lower_bound(40, a["r"], a["v"], a["delta"], 0.95)
    assert "per person" in summary["statement"] and "3 documents" in summary["scenario"]["notes"]
    if placebo:  # no canary trained on: nothing certified
        assert summary["epsilon_lower_bound"] == 0.0 and a["num_trained_canaries"] == 0
    else:  # the memoriser ranks every included secret above every excluded one: 20 guesses "in",
        # 20 "out", so only the surplus of one side over 20 is guessed wrong
        n_in = sum(c["included"] for c in canaries)
        assert a["v"] == 40 - abs(n_in - 20) and summary["epsilon_lower_bound"] > 1.0


def test_the_audit_unit_and_canary_documents_are_checked():
    with pytest.raises(ConfigError, match="privacy unit"):
        DPAuditConfig(privacy_unit="document")
    with pytest.raises(ConfigError, match="canary_documents"):
        DPAuditConfig(privacy_unit="user", canary_documents=0)
    assert DPAuditConfig(canary_documents=5).documents_per_canary == 1  # a sequence canary: one document
    assert DPAuditConfig(privacy_unit="user", canary_documents=5).documents_per_canary == 5


def test_a_user_level_audit_of_a_plain_model_certifies_over_users_and_its_placebo_nothing(tmp_path):
    # issue 27 item 5: canary *users* (3 documents each, the same secret), included with
    # probability 1/2 as a whole; one trained model, the bound over the 32 users
    paths = synthesize(tmp_path / "data", users=6, dialogs_per_user=2, seed=0)
    cfg = _tiny_plain_gpt(epochs=4)
    runs = {}
    for placebo in (True, False):
        out = tmp_path / f"run-{placebo}"
        audit = DPAuditConfig(m=32, r=32, seed=1, placebo=placebo, privacy_unit="user", canary_documents=3)
        runs[placebo] = run_dp_audit(paths["corpus"], out, cfg, audit, progress=False)
        train = json.loads((out / "model" / "train.json").read_text())
        trained = {u for u in train["train_users"] if u.startswith("dp-audit-canary-")}
        assert len(trained) == runs[placebo]["dp_audit"]["num_trained_canaries"]
    placebo, real = runs[True], runs[False]
    assert real["privacy_unit"] == placebo["privacy_unit"] == "user"
    assert real["train"]["num_train_documents"] - placebo["train"]["num_train_documents"] == 3 * len(
        [c for c in make_canaries(32, seed=1) if c["included"]]
    )
    assert placebo["epsilon_lower_bound"] == 0.0 and "placebo_warning" not in placebo
    assert real["epsilon_lower_bound"] > 0.0  # the memorised canary users: the bound over people
    assert real["epsilon_lower_bound"] == epsilon_lower_bound(
        32, real["dp_audit"]["r"], real["dp_audit"]["v"], real["dp_audit"]["delta"], 0.95
    )
    assert real["statement"].endswith("per person (95% confidence)")


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
        # no μ̂ in this record, and the f-DP bound is not given at δ = 0 anyway
        "epsilon_lower_bound_fdp_at_claimed_delta": None,
        "claim_violated_fdp": None,
    }
    assert claim_check(None, 1e-3, record)["claim_violated"] is False  # no claim, nothing to violate


@pytest.mark.parametrize("trained_unit", ["user", "sequence"])
def test_a_user_level_audit_of_a_dp_model_tests_the_claim_per_person(tmp_path, trained_unit):
    """User-level DP-SGD (i27-train): the claim is per person as trained. Sequence-level DP-SGD: a
    canary user of K sequences is covered only by group privacy, (Kε, K e^((K-1)ε) δ), and that is
    the claim the per-person bound is compared with."""
    import math

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
        privacy_unit=trained_unit,
    )
    audit = DPAuditConfig(m=16, seed=2, privacy_unit="user", canary_documents=3)
    summary = run_dp_audit(paths["corpus"], tmp_path / "run", cfg, audit, progress=False)
    privacy = json.loads((tmp_path / "run" / "model" / "privacy.json").read_text())
    eps, delta = privacy["epsilon"], privacy["delta"]
    assert privacy["privacy_unit"] == summary["training_privacy_unit"] == trained_unit and eps > 0
    assert summary["privacy_unit"] == "user" and summary["dp_epsilon_trained"] == eps
    if trained_unit == "user":
        assert (summary["dp_epsilon"], summary["dp_delta"]) == (eps, delta)
        assert (
            summary["claim_basis"].startswith("as trained")
            and "dp[user]:" in summary["scenario"]["anonymization"]
        )
    else:
        assert summary["dp_epsilon"] == pytest.approx(3 * eps)
        assert summary["dp_delta"] == pytest.approx(3 * math.exp(2 * eps) * delta)
        assert "group privacy" in summary["claim_basis"]
    a = summary["dp_audit"]
    assert a["delta"] == summary["dp_delta"]  # the bound is taken at the per-person claim's δ
    assert summary["claim_violated"] == (
        summary["epsilon_lower_bound_at_claimed_delta"] > summary["dp_epsilon"]
    )
    assert summary["statement"].startswith(f"claimed ε ≤ {summary['dp_epsilon']:.3g} per person; measured ≥ ")


def test_a_sequence_level_claim_whose_group_privacy_delta_reaches_1_claims_nothing_per_person(
    tmp_path, monkeypatch
):
    # measured: DP-SGD at ε = 3.43 per sequence audited with canary users of 4 documents gave
    # δ_4 = 4 e^(3ε) δ > 1, and the bound's δ check refused it; now the audit says what is left
    trained = {"mode": "dp", "epsilon": 5.0, "delta": 1e-5, "privacy_unit": "sequence"}
    _fake_training(monkeypatch, {}, privacy=trained)
    paths = synthesize(tmp_path / "data", users=4, dialogs_per_user=1, seed=0)
    cfg = TrainConfig(mode="nodp", seq_len=32, vocab_size=300, holdout_users=0.0)
    audit = DPAuditConfig(m=16, seed=3, privacy_unit="user", canary_documents=4)
    summary = run_dp_audit(paths["corpus"], tmp_path / "run", cfg, audit, progress=False)
    assert summary["dp_epsilon"] is None and summary["dp_epsilon_trained"] == 5.0
    assert summary["dp_audit"]["delta"] == 1e-5 and summary["claim_violated"] is False
    assert "no guarantee at all" in summary["claim_basis"]
    assert summary["statement"].startswith(
        "no per-person DP claim (ε = 5 per training sequence; group privacy over 4 sequences gives δ ≥ 1)"
    )
