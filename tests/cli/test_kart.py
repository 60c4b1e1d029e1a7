"""The KART CLI (paper 004): `lmleak kart review|describe|margins|run|experiment` and `synth clinical`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.runs import write_summary
from lmleak.scenarios import scenario_record
from tests.scenarios.test_margins import TABLE3_MARGINS, TABLE3_RATIOS, _csv


def test_cli_review_and_describe(tmp_path):
    r = CliRunner().invoke(app, ["kart", "review", "--json"])
    assert r.exit_code == 0 and len(json.loads(r.stdout)) == 13
    write_summary(tmp_path, {"scenario": scenario_record(attack="tab_attack", access="top_k", target="any")})
    r = CliRunner().invoke(app, ["kart", "describe", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["notation"] == "(∅, id, ∅, I_U)"
    r = CliRunner().invoke(app, ["kart", "describe", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no summary.json" in " ".join(r.output.split())


def test_kart_run_computes_ratios_from_prediction_files(tmp_path):
    (tmp_path / "gold.csv").write_text("subject,attribute\nAda Smith,asthma\nBo Li,gout\n")
    (tmp_path / "p1.csv").write_text("subject,attribute\nada smith,asthma\nbo li,asthma\n")
    (tmp_path / "p2.csv").write_text("subject,attribute\nbo li,asthma\n")
    (tmp_path / "s.yaml").write_text(
        "gold: gold.csv\nscenarios:\n"
        "  - {name: K+A+, attack: g, knowledge: [full_name], access: generation, target: diseases, predictions: p1.csv}\n"
        "  - {name: K-A+, attack: g, access: generation, target: [full_name, diseases], predictions: p2.csv}\n"
    )
    r = CliRunner().invoke(app, ["kart", "run", str(tmp_path / "s.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["ratios"] == {"K+A+": 50.0, "K-A+": 0.0}
    (m,) = d["margins"]
    assert {k: m[k] for k in ("anchor", "weakened", "factor", "margin", "violation")} == {
        "anchor": "K+A+",
        "weakened": "K-A+",
        "factor": "K",
        "margin": 50.0,
        "violation": False,
    }
    # 1 of 2 against 0 of 1: far too few predictions for a 50-point margin to mean anything
    assert m["ci_low"] < 0 < m["ci_high"] and m["significant"] is False
    assert d["ratio_intervals"]["K-A+"][0] == 0.0 and d["significant_violations"] == 0


def test_cli_margins_json_prints_table3(tmp_path):
    r = CliRunner().invoke(app, ["kart", "margins", str(_csv(tmp_path)), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["ratios"] == TABLE3_RATIOS
    assert [(m["anchor"], m["weakened"], m["margin"]) for m in d["margins"]] == [
        (a, w, m) for a, w, m in TABLE3_MARGINS
    ]


def test_kart_run_writes_its_summary_with_the_spec(tmp_path):
    (tmp_path / "gold.csv").write_text("subject,attribute\nAda Smith,asthma\n")
    (tmp_path / "p.csv").write_text("subject,attribute\nada smith,asthma\n")
    (tmp_path / "s.yaml").write_text(
        "gold: gold.csv\nscenarios:\n"
        "  - {name: K+A+, attack: g, knowledge: [full_name], access: generation, target: diseases, predictions: p.csv}\n"
    )
    r = CliRunner().invoke(app, ["kart", "run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["command"] == "kart run" and summary["spec"] == str(tmp_path / "s.yaml")
    assert summary["ratios"] == {"K+A+": 100.0} and summary["counts"] == {"K+A+": {"valid": 1, "correct": 1}}


def test_kart_review_json_is_table2_record_by_record():
    from lmleak.scenarios.catalogue import review

    r = CliRunner().invoke(app, ["kart", "review", "--json"])
    assert r.exit_code == 0
    got = json.loads(r.stdout)
    for rec, row in zip(got, review(), strict=True):
        assert rec["study"] == row.study and rec["scenario"] == row.scenario.to_record()
        assert {k: rec[k] for k in row.paper} == row.paper and rec["access_basis"] == row.access_basis
    r = CliRunner().invoke(app, ["kart", "review"], env={"COLUMNS": "250"})
    assert r.exit_code == 0 and "Lehman et al. (2021)" in r.output


def test_synth_clinical_writes_the_files_it_lists(tmp_path):
    r = CliRunner().invoke(
        app, ["synth", "clinical", "--out", str(tmp_path / "c"), "--patients", "3", "--json"]
    )
    assert r.exit_code == 0, r.output
    paths = json.loads(r.stdout)
    assert paths and all((tmp_path / "c") in Path(p).parents for p in paths.values())
    assert all(Path(p).stat().st_size > 0 for p in paths.values())
    r = CliRunner().invoke(app, ["synth", "clinical", "--out", str(tmp_path / "d"), "--patients", "0"])
    assert r.exit_code == 2


def test_kart_experiment_passes_the_options_and_prints_counts_and_margins(tmp_path, monkeypatch):
    import lmleak.experiments.kart as kart

    seen = {}
    res = {
        "counts": {
            "K+A+R+": {"generated": 10, "valid": 4, "correct": 2},
            "K-A+R+": {"generated": 10, "valid": 2, "correct": 0},
        },
        "ratios": {"K+A+R+": 50.0, "K-A+R+": 0.0},
        "margins": [
            {
                "anchor": "K+A+R+",
                "weakened": "K-A+R+",
                "margin": 50.0,
                "violation": False,
                "ci_low": -1.0,
                "ci_high": 80.0,
                "significant": False,
            }
        ],
        "all_nonnegative": True,
    }

    def fake_run(out_dir, cfg):
        seen["cfg"] = cfg
        return res

    monkeypatch.setattr(kart, "run_experiment", fake_run)
    r = CliRunner().invoke(
        app,
        ["kart", "experiment", "--out", str(tmp_path), "--quick", "--seed", "2", "--iterations", "8"],
        env={"COLUMNS": "200"},
    )
    assert r.exit_code == 0, r.output
    cfg = seen["cfg"]
    assert cfg.seed == 2 and cfg.mlm.seed == 2 and cfg.gibbs.seed == 2 and cfg.gibbs.iterations == 8
    assert cfg.gibbs.burn_in == min(kart.KartExperimentConfig.quick(2).gibbs.burn_in, 2)
    lines = [" ".join(line.replace("│", " ").split()) for line in r.output.splitlines()]
    assert "K+A+R+ 10 4 2 50.00%" in lines and "all calculable margins ≥ 0" in lines
    assert any(
        line.startswith("K+A+R+ 50.00% K-A+R+ 0.00% 50.00% (≥0) [-1.00, 80.00] n.s.") for line in lines
    )
