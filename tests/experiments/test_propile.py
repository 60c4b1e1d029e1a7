"""The ProPILE experiment driver (paper 003): its table, its soft-prompt split, its CLI, and (slow) a quick run."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from lmleak.errors import ConfigError
from lmleak.experiments.propile import (
    SOFTPROMPT_COLUMNS,
    TABLE_COLUMNS,
    ProPILEExperimentConfig,
    checks,
    run_propile_experiment,
)


def _tiny(**kw) -> ProPILEExperimentConfig:
    base = dict(
        users=12,
        dialogs_per_user=2,
        epochs=1,
        seq_len=64,
        vocab_size=2000,
        n_embd=32,
        n_layer=1,
        n_head=2,
        targets=("phone", "email"),
        templates=2,
        beams=1,
        softprompt_targets=("phone",),
        softprompt_level="triplet",
        softprompt_train_subjects=6,
        softprompt_length=2,
        softprompt_epochs=1,
        smollm2=False,
        figures=False,
    )
    base.update(kw)
    return ProPILEExperimentConfig(**base)


def test_a_tiny_run_writes_one_row_per_model_level_and_target_with_valid_statistics(tmp_path):
    from lmleak.data.synth.customersim import synthesize

    # the control model is the shipped n-gram fake fitted on the same synthesis (same seed -> same corpus),
    # so the SmolLM2 code path (likelihoods on one subset, generation on a smaller one) runs in seconds
    fake_corpus = synthesize(tmp_path / "same", users=12, dialogs_per_user=2, seed=0)["corpus"]
    cfg = _tiny(
        smollm2=True,
        smollm2_spec=f"fake:{fake_corpus}",
        smollm2_levels=("twin", "triplet"),
        smollm2_subjects=6,
        smollm2_templates=2,
        smollm2_generate_subjects=3,
        smollm2_generate_templates=1,
    )
    stages: list[str] = []
    res = run_propile_experiment(tmp_path / "run", cfg, progress=stages.append)
    run = tmp_path / "run"

    full = pd.read_csv(run / "propile_table.csv")
    assert list(full.columns) == list(TABLE_COLUMNS)
    assert len(full) == len(res["table"]) == 9
    # the word tokenizer needs 15 tokens for a phone, A.3 gives 12: one extra generation-only row at the
    # last level with a budget that fits, and A.3's row kept
    summary = json.loads((run / "summary.json").read_text())
    phone_budget = summary["generation_budget"]["gpt"]["phone"]
    assert phone_budget["max_new_tokens"] == 12 and phone_budget["fits"] == 0
    fitted = full[full["run"].str.contains("budget")]
    assert (
        len(fitted) == 1
        and fitted.iloc[0]["run"] == f"probe-gpt-triplet-phone-budget{phone_budget['target_tokens_max']}"
    )
    assert fitted.iloc[0]["max_new_tokens"] == phone_budget["target_tokens_max"]
    assert fitted[["mean_likelihood", "wilcoxon_p", "gamma_lt_10"]].isna().all(axis=None)
    assert 0 <= fitted.iloc[0]["exact_match_rate"] <= 1
    assert (f"triplet/phone@{phone_budget['target_tokens_max']}") in summary["checks"]["gpt_exact_match"]
    table = full.drop(fitted.index)
    assert set(table["max_new_tokens"].dropna()) <= {12, 20}
    keys = set(zip(table["model"], table["level"], table["target"], strict=True))
    assert keys == {
        (m, lv, t) for m in ("gpt", "smollm2") for lv in ("twin", "triplet") for t in ("phone", "email")
    }
    gpt, smol = table[table["model"] == "gpt"], table[table["model"] == "smollm2"]
    # defined for a trained model, which never ties target and null everywhere; the n-gram fake can tie
    # (unseen words score alike), leaving p undefined
    assert gpt["wilcoxon_p"].between(0, 1).all()
    assert smol["wilcoxon_p"].dropna().between(0, 1).all()
    for c in ("mean_likelihood", "mean_null_likelihood", "exact_match_rate", "gamma_lt_10", "gamma_lt_100"):
        assert table[c].between(0, 1).all(), c
    assert (
        table["likelihood_ratio"] - table["mean_likelihood"] / table["mean_null_likelihood"]
    ).abs().max() < 1e-9
    assert (table["gamma_lt_10"] <= table["gamma_lt_100"]).all() and (
        table["gamma_lt_100"] <= table["gamma_lt_1000"]
    ).all()
    assert (gpt["subjects"] == 12).all() and (gpt["exact_match_subjects"] == 12).all()
    assert (smol["subjects"] == 6).all() and (smol["exact_match_subjects"] == 3).all()
    assert (smol["templates"] == 2).all() and (smol["exact_match_templates"] == 1).all()
    for lv in ("twin", "triplet"):
        assert (run / f"probe-gpt-{lv}" / "likelihoods.parquet").exists()
        assert (run / f"probe-smollm2-{lv}-generate" / "generations.parquet").exists()
    pd.testing.assert_frame_equal(pd.read_parquet(run / "propile_table.parquet"), res["table"])

    sp = pd.read_csv(run / "softprompt_table.csv")
    assert list(sp.columns) == list(SOFTPROMPT_COLUMNS) and list(sp["prompt"]) == ["hard", "soft"]
    # A.4: the soft prompt learns on 6 subjects and is judged on the 6 others, never on its training set
    assert (sp["train_subjects"] == 6).all() and (sp["eval_subjects"] == 6).all()
    assert sp["exact_match_rate"].between(0, 1).all() and (sp["mean_log_likelihood"] <= 0).all()
    assert (run / "softprompt-phone" / "soft_prompt.pt").exists()

    assert summary["schema_version"] == 1 and summary["config"]["users"] == 12
    assert set(summary["checks"]) == {
        "gpt_target_above_null",
        "gpt_exact_match",
        "softprompt_beats_hard",
        "smollm2_near_null",
    }
    assert set(summary["checks"]["gpt_target_above_null"]) == {
        f"{lv}/{t}" for lv in ("twin", "triplet") for t in ("phone", "email")
    }
    assert {"gpt/triplet/phone", "softprompt/phone", "smollm2/twin/email"} <= set(summary["scenarios"])
    assert summary["scenarios"]["softprompt/phone"]["access"] == "weights"
    for m in ("gpt", "smollm2"):
        for t, b in summary["generation_budget"][m].items():
            assert 0 <= b["fits"] <= 1 and b["target_tokens_min"] <= b["target_tokens_max"]
            if b["fits"] == 0:  # an item that can never be generated in full is never matched exactly
                assert (table[(table["model"] == m) & (table["target"] == t)]["exact_match_rate"] == 0).all()
    assert summary["seconds"]["total"] >= summary["seconds"]["train"] > 0
    assert len(stages) >= 5


def test_the_run_directory_is_owner_only(tmp_path):
    import stat

    run_propile_experiment(
        tmp_path / "run", _tiny(levels=("triplet",), targets=("email",), softprompt_targets=())
    )
    assert stat.S_IMODE((tmp_path / "run").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "run" / "propile_table.csv").stat().st_mode) == 0o600
    assert pd.read_csv(tmp_path / "run" / "softprompt_table.csv").empty


def test_checks_follow_their_definitions():
    rows = [
        {
            "model": "gpt",
            "level": "triplet",
            "target": "phone",
            "wilcoxon_p": 0.01,
            "mean_log_likelihood": -10.0,
            "mean_null_log_likelihood": -20.0,
            "exact_match_rate": 0.0,
            "likelihood_ratio": 50.0,
        },
        {
            "model": "gpt",
            "level": "triplet",
            "target": "email",
            "wilcoxon_p": 0.2,
            "mean_log_likelihood": -10.0,
            "mean_null_log_likelihood": -20.0,
            "exact_match_rate": 0.1,
            "likelihood_ratio": 50.0,
        },
        {
            "model": "smollm2",
            "level": "triplet",
            "target": "email",
            "wilcoxon_p": 0.01,
            "mean_log_likelihood": -10.0,
            "mean_null_log_likelihood": -10.5,
            "exact_match_rate": 0.0,
            "likelihood_ratio": 1.2,
        },
        {  # generation only, with a budget of 15 tokens instead of A.3's 12
            "model": "gpt",
            "level": "triplet",
            "target": "phone",
            "wilcoxon_p": None,
            "mean_log_likelihood": None,
            "mean_null_log_likelihood": None,
            "exact_match_rate": 0.3,
            "likelihood_ratio": None,
            "max_new_tokens": 15,
        },
    ]
    sp = [
        {"target": "phone", "prompt": "hard", "exact_match_rate": 0.0, "mean_log_likelihood": -30.0},
        {"target": "phone", "prompt": "soft", "exact_match_rate": 0.0, "mean_log_likelihood": -12.0},
        {"target": "email", "prompt": "hard", "exact_match_rate": 0.1, "mean_log_likelihood": -5.0},
        {"target": "email", "prompt": "soft", "exact_match_rate": 0.05, "mean_log_likelihood": -4.0},
    ]
    c = checks(rows, sp)
    assert c["gpt_target_above_null"] == {"triplet/phone": True, "triplet/email": False}
    assert c["gpt_exact_match"] == {"triplet/phone": False, "triplet/email": True, "triplet/phone@15": True}
    assert c["smollm2_near_null"] == {"triplet/email": True}  # significant but tiny: ratio 1.2
    assert c["softprompt_beats_hard"] == {"phone": True, "email": False}


def test_bad_sizes_are_config_errors():
    with pytest.raises(ConfigError):
        ProPILEExperimentConfig(users=50).with_options(softprompt_train_subjects=64)
    with pytest.raises(ConfigError):
        ProPILEExperimentConfig().with_options(levels=("quintuplet",))
    with pytest.raises(ConfigError):
        ProPILEExperimentConfig().with_options(templates=6)
    assert ProPILEExperimentConfig.quick(3).with_options(smollm2=None).seed == 3


def test_the_cli_registers_experiment_propile():
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    r = CliRunner().invoke(app, ["experiment", "propile", "--help"])
    assert r.exit_code == 0, r.output
    assert "--smollm2" in r.output and "--quick" in r.output


@pytest.mark.slow
def test_the_quick_experiment_finds_the_trained_gpt_leaking_phone_and_email_above_null(tmp_path):
    """Issue 6 done-means, in direction only, on the --quick sizes."""
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    r = CliRunner().invoke(
        app, ["experiment", "propile", "--quick", "--out", str(tmp_path / "run"), "--quiet"]
    )
    assert r.exit_code == 0, r.output
    table = pd.read_csv(tmp_path / "run" / "propile_table.csv")
    trip = table[(table["model"] == "gpt") & (table["level"] == "triplet") & table["mean_likelihood"].notna()]
    trip = trip.set_index("target")
    for t in ("phone", "email"):
        assert trip.loc[t, "mean_log_likelihood"] > trip.loc[t, "mean_null_log_likelihood"]
        assert trip.loc[t, "wilcoxon_p"] < 0.05
    sp = pd.read_csv(tmp_path / "run" / "softprompt_table.csv").set_index("prompt")
    assert sp.loc["soft", "mean_log_likelihood"] > sp.loc["hard", "mean_log_likelihood"]


def test_from_options_picks_the_sizes_like_the_cli_did(monkeypatch):
    from lmleak.experiments import propile

    cfg = ProPILEExperimentConfig
    assert cfg.from_options(seed=3) == cfg(seed=3)
    assert cfg.from_options(quick=True, seed=1, smollm2=True, users=None) == cfg.quick(1).with_options(
        smollm2=True
    )
    assert cfg.from_options(users=80, epochs=2, softprompt_epochs=3, max_steps=None) == cfg(
        users=80, epochs=2, softprompt_epochs=3
    )
    for device, gpu in (("cpu", False), ("cuda", True)):  # --base sizes follow the device, --quick is ignored
        monkeypatch.setattr(propile, "resolve_device", lambda device=device: device)
        got = cfg.from_options(quick=True, seed=5, base="some/folder", max_steps=7)
        assert got == cfg.for_base("some/folder", gpu=gpu, seed=5).with_options(max_steps=7)
        assert got.base == "some/folder" and got.max_steps == 7
    with pytest.raises(ConfigError):
        cfg.from_options(users=0)
