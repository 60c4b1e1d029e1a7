"""The eight-scenario experiment of paper 004 §5, end to end at toy size."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lmleak.attacks.mlm_generation import GibbsConfig
from lmleak.experiments.kart import (
    SCENARIOS,
    KartExperimentConfig,
    run_experiment,
    scenario_for,
)
from lmleak.experiments.options import KartExperimentOptions
from lmleak.models.hf_masked import MaskedLMConfig
from lmleak.scenarios import Scenario
from lmleak.scenarios.margins import margins_table

TINY = KartExperimentConfig(
    patients=12,
    notes_per_patient=2,
    docs_k_plus=8,
    docs_k_minus=8,
    mlm=MaskedLMConfig(
        hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, epochs=2, max_length=48
    ),
    gibbs=GibbsConfig(iterations=8, burn_in=2, top_k=20, disease_span=6, batch_size=8),
)


def test_the_eight_scenarios_are_the_papers_parameterisation():
    recs = {s: Scenario.from_dict(scenario_for(s)) for s in SCENARIOS}
    assert recs["K+A+R+"].notation() == "({full_name_p}_{p∈P}, id, {f_HIPAA(D_private)}, {diseases_p}_{p∈P})"
    assert recs["K-A-R-"].notation() == "(∅, f_HIPAA, ∅, {(full_name, diseases)_p}_{p∈P})"
    assert all(r.resources.access == "fill_mask" for r in recs.values())


def test_a_tiny_run_writes_consistent_counts_and_margins(tmp_path):
    s = run_experiment(tmp_path, TINY)
    assert list(s["counts"]) == SCENARIOS
    for name, c in s["counts"].items():
        assert 0 <= c["correct"] <= c["valid"]
        if name.endswith("R+"):  # R+ refines R-: never more predictions
            assert c["valid"] <= s["counts"][name[:-1] + "-"]["valid"]
    # the ratios and margins in the summary are what the margins module computes from counts.csv
    from lmleak.scenarios.margins import read_counts

    again = margins_table(read_counts(tmp_path / "counts.csv"))
    assert again["ratios"] == s["ratios"] and again["margins"] == s["margins"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["scenarios"]) == set(SCENARIOS)
    assert (tmp_path / "modelA_plus" / "model.safetensors").is_file()


@pytest.mark.slow
def test_cli_experiment_quick(tmp_path):
    from lmleak.cli.main import app

    r = CliRunner().invoke(app, ["kart", "experiment", "--quick", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["counts"]["K+A+R+"]["generated"] == KartExperimentConfig.quick().docs_k_plus


def _options_by_hand(quick, seed, patients, docs, epochs, iterations):
    """The config as ``lmleak kart experiment`` built it before KartExperimentOptions (the oracle)."""
    import dataclasses

    cfg = KartExperimentConfig.quick(seed) if quick else KartExperimentConfig(seed=seed)
    cfg = dataclasses.replace(
        cfg, mlm=dataclasses.replace(cfg.mlm, seed=seed), gibbs=dataclasses.replace(cfg.gibbs, seed=seed)
    )
    if patients is not None:
        cfg = dataclasses.replace(cfg, patients=patients)
    if docs is not None:
        cfg = dataclasses.replace(cfg, docs_k_plus=docs, docs_k_minus=docs)
    if epochs is not None:
        cfg = dataclasses.replace(cfg, mlm=dataclasses.replace(cfg.mlm, epochs=epochs))
    if iterations is not None:
        cfg = dataclasses.replace(
            cfg,
            gibbs=dataclasses.replace(
                cfg.gibbs, iterations=iterations, burn_in=min(cfg.gibbs.burn_in, iterations // 4)
            ),
        )
    return cfg


@pytest.mark.parametrize(
    "quick, seed, patients, docs, epochs, iterations",
    [
        (False, 0, None, None, None, None),
        (True, 7, None, None, None, None),
        (True, 2, 9, 5, 3, 8),
        (False, 1, None, 11, None, 400),  # burn-in stays 25 (< 400 // 4)
        (True, 0, 30, None, 1, 2),  # burn-in capped at 0
    ],
)
def test_the_options_build_the_cli_config(quick, seed, patients, docs, epochs, iterations):
    cfg = KartExperimentOptions(
        quick=quick, seed=seed, patients=patients, docs=docs, epochs=epochs, iterations=iterations
    ).config()
    assert cfg == _options_by_hand(quick, seed, patients, docs, epochs, iterations)
    assert cfg.seed == cfg.mlm.seed == cfg.gibbs.seed == seed
    if iterations is not None:
        assert cfg.gibbs.iterations == iterations and cfg.gibbs.burn_in <= iterations // 4
