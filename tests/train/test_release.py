"""What a release decision reads from a training run: ε with its unit and δ, group privacy stated as
such, the quality warning, CRT's unknown confidentiality, and a re-audit config the audit accepts."""

from __future__ import annotations

import json
import math

import pytest

from lmleak.train.accounting import group_privacy
from lmleak.train.release import (
    confidentiality_statement,
    dp_summary,
    epsilon_statement,
    perplexity_warning,
    reaudit_config,
    replaced_perplexity,
)


def test_every_dp_number_carries_its_unit_and_delta():
    user = {"mode": "dp", "epsilon": 2.9, "delta": 1e-5, "privacy_unit": "user", "max_sequences_per_user": 4}
    assert epsilon_statement(user).startswith("epsilon = 2.9 per person (user-level DP, delta = 1e-05")
    g_eps, g_delta = group_privacy(0.5, 1e-5, 17)
    seq = {
        "mode": "dp",
        "epsilon": 0.5,
        "delta": 1e-5,
        "privacy_unit": "sequence",
        "largest_user_sequences": 17,
        "group_privacy_epsilon_largest_user": g_eps,
        "group_privacy_delta_largest_user": g_delta,
    }
    line = epsilon_statement(seq)
    assert line.startswith("epsilon = 0.5 per training sequence (sequence-level DP, delta = 1e-05)")
    assert (
        "most sequences (17)" in line
        and f"epsilon = {g_eps:.3g}" in line
        and "not a user-level guarantee" in line
    )
    assert g_delta == pytest.approx(17 * math.exp(16 * 0.5) * 1e-5)  # 0.51: a coin flip of failure
    assert "no meaningful protection" in line
    small = {**seq, "largest_user_sequences": 2, "group_privacy_epsilon_largest_user": 1.0}
    assert "no meaningful protection" not in epsilon_statement(
        {**small, "group_privacy_delta_largest_user": 3e-5}
    )
    sdp = {**user, "mode": "sdp"}
    assert "per person for the tokens the policy flagged" in epsilon_statement(sdp)
    assert epsilon_statement({"mode": "nodp", "epsilon": None}) is None
    summary = dp_summary(seq)
    assert (summary["dp_epsilon"], summary["dp_delta"], summary["privacy_unit"]) == (0.5, 1e-5, "sequence")
    assert (
        summary["group_privacy_epsilon_largest_user"] == 17 * 0.5 and summary["largest_user_sequences"] == 17
    )


def test_a_group_delta_above_one_prints_no_protection_never_the_number():
    """Issue 32: a person with 49 sequences at a sequence-level epsilon of 7 had delta = 3.1e147 printed."""
    g_eps, g_delta = group_privacy(7.0, 1e-5, 49)
    assert g_delta > 1e140
    seq = {"mode": "dp", "epsilon": 7.0, "delta": 1e-5, "privacy_unit": "sequence", "largest_user_sequences": 49,
           "group_privacy_epsilon_largest_user": g_eps, "group_privacy_delta_largest_user": g_delta}  # fmt: skip
    line = epsilon_statement(seq)
    assert "delta = no protection" in line and f"{g_delta:.3g}" not in line and "e+" not in line


def test_a_collapsed_perplexity_warns_against_its_reference():
    assert perplexity_warning(61.0, reference=30.0, reference_name="the base") is not None
    assert perplexity_warning(59.0, reference=30.0, reference_name="the base") is None  # 1.97x: no collapse
    assert "uniformly among 4000" in perplexity_warning(2862.0, vocab_size=4000)
    assert perplexity_warning(1999.0, vocab_size=4000) is None
    assert (
        perplexity_warning(None, vocab_size=4000) is None
        and perplexity_warning(math.inf, vocab_size=10) is None
    )


def test_crt_without_gamma_is_unknown_confidentiality_not_an_epsilon_alone():
    assert "unknown" in confidentiality_statement({"mode": "crt", "epsilon": 0.848, "gamma": None})
    assert confidentiality_statement({"mode": "crt", "epsilon": 0.848, "gamma": 0.1}) is None
    assert confidentiality_statement({"mode": "dp", "epsilon": 1.0}) is None


def test_the_replaced_models_perplexity_is_compared_only_when_comparable(tmp_path):
    for name, ppl, users in (("a", 20.0, ["u1"]), ("b", 50.0, ["u1"]), ("c", 10.0, ["u2"])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.json").write_text(
            json.dumps({"val_users": users, "final": {"val_perplexity": ppl}})
        )
        (tmp_path / name / "tokenizer.json").write_text("{}")
    assert replaced_perplexity(tmp_path / "a", tmp_path / "b") == (20.0, "")
    assert replaced_perplexity(tmp_path / "c", tmp_path / "b") == (None, "it held out different users")
    (tmp_path / "a" / "tokenizer.json").write_text('{"other": 1}')
    assert replaced_perplexity(tmp_path / "a", tmp_path / "b") == (None, "it uses another tokenizer")


def test_the_reaudit_config_is_a_valid_audit_of_both_models(tmp_path):
    from lmleak.audit.config import parse_config
    from lmleak.safe_yaml import load_yaml

    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"user_id": "u1", "text": "hi"}\n')
    text = reaudit_config(tmp_path / "dp model", corpus, replaces=tmp_path / "plain", fine_tune=True)
    cfg = parse_config(load_yaml(text), base_dir=str(tmp_path))
    assert [m.path for m in cfg.models] == [str(tmp_path / "dp model"), str(tmp_path / "plain")]
    assert cfg.public_model == "base" and cfg.corpus.path == str(corpus)
