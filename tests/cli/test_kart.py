"""The KART CLI (paper 004): `lmleak kart review|describe|margins|run|experiment` and `synth clinical`."""

from __future__ import annotations

import json

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
