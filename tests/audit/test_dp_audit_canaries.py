"""Crafted canaries in the one-run DP audit (Panda et al., ICLR 2025): the same coin flips as the
random design, rune secrets that are new tokens, the design recorded, a corpus that already uses
the runes refused, and the f-DP bound in the summary."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from lmleak.attacks.dp_audit import DEFAULT_PREFIX, DPAuditConfig, make_canaries
from lmleak.attacks.fdp_audit import gdp_epsilon
from lmleak.audit.dp_audit import claim_check, run_dp_audit
from lmleak.data.canaries import CRAFTED_ALPHABET, CRAFTED_PREFIX, craft_secret
from lmleak.data.synth.customersim import synthesize
from lmleak.errors import ConfigError
from lmleak.models.small import load_small_model
from lmleak.train.config import TrainConfig

TINY = dict(mode="nodp", epochs=2, batch_size=8, seq_len=32, n_embd=32, n_layer=1, n_head=2, vocab_size=300)


def test_crafted_canaries_are_the_random_draws_in_runes_with_the_same_coin_flips():
    rnd = make_canaries(200, seed=4)
    cft = make_canaries(200, prefix=CRAFTED_PREFIX, seed=4, design="crafted")
    assert [c["included"] for c in cft] == [c["included"] for c in rnd]
    assert [c["secret"] for c in cft] == [craft_secret(c["secret"]) for c in rnd]
    assert len({c["secret"] for c in cft}) == 200  # the mapping is one to one
    assert all(set(c["secret"]) <= set(CRAFTED_ALPHABET[:10]) for c in cft)
    assert all(c["text"] == CRAFTED_PREFIX + c["secret"] for c in cft)


def test_the_config_picks_the_crafted_prefix_and_refuses_an_unknown_design():
    assert DPAuditConfig().canary_prefix == DEFAULT_PREFIX
    assert DPAuditConfig(canary_design="crafted").canary_prefix == CRAFTED_PREFIX
    assert DPAuditConfig(canary_design="crafted", prefix="Key: ").canary_prefix == "Key: "
    with pytest.raises(ConfigError, match="canary design"):
        DPAuditConfig(canary_design="optimised")


def test_a_crafted_audit_trains_rune_secrets_as_new_tokens_and_records_its_design(tmp_path):
    paths = synthesize(tmp_path / "data", users=6, dialogs_per_user=2, seed=0)
    cfg = TrainConfig(**TINY, holdout_users=0.0)  # type: ignore[arg-type]
    audit = DPAuditConfig(m=24, r=24, seed=1, canary_design="crafted")
    summary = run_dp_audit(paths["corpus"], tmp_path / "run", cfg, audit, progress=False)
    table = pd.read_parquet(tmp_path / "run" / "canaries.parquet")
    expected = make_canaries(24, prefix=CRAFTED_PREFIX, seed=1, design="crafted")
    assert table["secret"].tolist() == [c["secret"] for c in expected]
    assert table["included"].tolist() == [c["included"] for c in make_canaries(24, seed=1)]
    tok = load_small_model(tmp_path / "run" / "model").tokenizer
    for s in table["secret"]:
        ids = tok.encode(s)
        assert len(ids) == len(s) and tok.decode(ids) == s  # one new token per rune
    assert summary["canary_design"] == "crafted"
    record = json.loads((tmp_path / "run" / "dp_audit.json").read_text())
    assert record["canary_design"] == "crafted" and CRAFTED_PREFIX in record["canary_format"]
    # both bounds in the summary, the f-DP one at the audit's δ (1e-5 without a DP claim)
    assert summary["epsilon_lower_bound_fdp"] == pytest.approx(
        gdp_epsilon(summary["mu_lower_bound"], record["delta"]), abs=1e-9
    )
    assert "Gaussian" in summary["fdp_assumption"] and summary["fdp_note"] is None


def test_a_random_audit_says_so(tmp_path):
    paths = synthesize(tmp_path / "data", users=4, dialogs_per_user=1, seed=0)
    cfg = TrainConfig(**{**TINY, "epochs": 1}, holdout_users=0.0)  # type: ignore[arg-type]
    summary = run_dp_audit(paths["corpus"], tmp_path / "run", cfg, DPAuditConfig(m=8), progress=False)
    assert summary["canary_design"] == "random" and summary["dp_audit"]["canary_design"] == "random"
    assert "epsilon_lower_bound_fdp" in summary and "mu_lower_bound" in summary


def test_a_corpus_that_already_uses_the_runes_is_refused_for_crafted_canaries(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {"user_id": f"u{i}", "doc_id": f"d{i}", "text": f"hello {CRAFTED_ALPHABET[i]} there"}
        for i in range(3)
    ]
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    cfg = TrainConfig(**TINY, holdout_users=0.0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="would not be new tokens"):
        run_dp_audit(
            corpus, tmp_path / "run", cfg, DPAuditConfig(m=8, canary_design="crafted"), progress=False
        )
    assert not (tmp_path / "run").exists()


def test_the_f_dp_claim_check_is_at_the_claimed_delta_and_not_given_at_delta_zero():
    rec = {"m": 1000, "r": 1000, "v": 900, "delta": 1e-5, "confidence": 0.95, "mu_lower_bound": 0.8804}
    c = claim_check(3.0, 1e-5, {**rec, "epsilon_lower_bound": 2.02})
    assert c["claim_violated"] is False and c["claim_violated_fdp"] is True  # 3.78 > 3 under the Gaussian
    assert c["epsilon_lower_bound_fdp_at_claimed_delta"] == pytest.approx(gdp_epsilon(0.8804, 1e-5))
    c0 = claim_check(3.0, 0.0, {**rec, "epsilon_lower_bound": 2.02})
    assert c0["epsilon_lower_bound_fdp_at_claimed_delta"] is None and c0["claim_violated_fdp"] is None
