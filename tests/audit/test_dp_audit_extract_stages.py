"""Issue 20 in the audit: the ``dp_audit`` and ``extract`` config keys and stages, their KART
records and HTML cards, and the gate's ``--min-epsilon-lower-bound`` / ``--max-extracted``."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from lmleak.audit.config import parse_config
from lmleak.audit.gate import check_gate
from lmleak.cli.main import app
from lmleak.data.synth.customersim import synthesize
from lmleak.errors import ConfigError


def test_the_new_analyses_parse_with_defaults_and_reject_unknown_keys():
    base = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]}
    cfg = parse_config({**base, "analyses": {"dp_audit": {"m": 64}, "extract": True}})
    assert cfg.analyses.dp_audit.m == 64 and cfg.analyses.dp_audit.confidence == 0.95
    assert cfg.analyses.extract.num_samples == 1000 and cfg.analyses.extract.top_k == 40
    assert parse_config(base).analyses.dp_audit is None
    with pytest.raises(ConfigError, match="num_sample"):
        parse_config({**base, "analyses": {"extract": {"num_sample": 5}}})


def _summary(tmp_path, **headline):
    (tmp_path / "summary.json").write_text(json.dumps({"models": {"m": {"headline": headline}}}))
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
                "models": {
                    "dp": {"headline": {"dp_epsilon": 3.0, "epsilon_lower_bound": 0.4}},
                    "plain": {"headline": {"epsilon_lower_bound": 0.7}},
                }
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


def test_the_gate_cli_counts_extracted_samples_and_a_missing_measurement_fails(tmp_path):
    run = _summary(tmp_path, extracted=3)
    assert CliRunner().invoke(app, ["gate", str(run), "--max-extracted", "3"]).exit_code == 0
    assert CliRunner().invoke(app, ["gate", str(run), "--max-extracted", "2"]).exit_code == 1
    assert CliRunner().invoke(app, ["gate", str(run), "--min-epsilon-lower-bound", "0"]).exit_code == 1


@pytest.mark.slow  # two trainings and a full HTML report: ~10 s CPU, far more on a busy machine
def test_an_audit_runs_extraction_and_a_dp_audit_of_the_models_own_recipe(tmp_path):
    from lmleak.data.loaders import load_corpus
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model

    paths = synthesize(tmp_path / "data", users=5, dialogs_per_user=2, seed=2)
    train_model(
        load_corpus(paths["corpus"]),
        tmp_path / "model",
        TrainConfig(
            epochs=1,
            batch_size=8,
            seq_len=32,
            n_embd=32,
            n_layer=1,
            n_head=2,
            vocab_size=300,
            holdout_users=0.0,
        ),
        progress=False,
    )
    cfg = {
        "out": "run",
        "corpus": {"path": "data/corpus.jsonl"},
        "models": [{"name": "tiny", "path": "model"}, {"name": "fake", "path": f"fake:{paths['corpus']}"}],
        "analyses": {
            "dp_audit": {"m": 16, "r": 8},
            "extract": {
                "num_samples": 6,
                "max_new_tokens": 8,
                "top_n": 5,
                "min_match_tokens": 6,
                "prefix_tokens": 4,
                "suffix_tokens": 4,
                "discoverable_docs": 3,
            },
        },
    }
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(app, ["audit", str(tmp_path / "audit.yaml"), "--json", "--quiet"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    tiny, fake = summary["models"]["tiny"], summary["models"]["fake"]
    assert set(tiny["stages"]) == {"dp_audit", "extract"}
    assert tiny["headline"]["epsilon_lower_bound"] >= 0.0
    assert "extracted" in tiny["headline"] and "extracted" in fake["headline"]
    assert "dp_audit" in fake["skipped"]  # a fake model has no training recipe to re-run
    assert tiny["scenarios"]["extract"]["target"] == "any"
    assert tiny["scenarios"]["dp_audit"]["attack"] == "dp_audit_one_run"
    stage = json.loads(
        (tmp_path / "run" / "models" / "tiny" / "dp_audit" / "model" / "privacy.json").read_text()
    )
    assert stage["dp_audit"]["m"] == 16 and "epsilon_lower_bound" in stage
    html = (tmp_path / "run" / "report.html").read_text()
    assert "Measured ε lower bound (DP audit)" in html and "Extracted training samples (verified)" in html
    assert "No DP claim (plain training); measured ≥" in html
