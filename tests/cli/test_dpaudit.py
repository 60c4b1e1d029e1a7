"""``lmleak dp-audit bound`` and ``lmleak dp-audit run`` (cli/dpaudit.py): what they print and
write, and their errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lmleak.attacks.dp_audit import epsilon_lower_bound
from lmleak.cli.common import out
from lmleak.cli.main import app
from lmleak.render.printouts import print_dp_audit


def test_the_cli_prints_the_bound():
    res = CliRunner().invoke(
        app, ["dp-audit", "bound", "--m", "1000", "--r", "10", "--v", "10", "--confidence", "0.95"]
    )
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[0] == "epsilon_lower_bound: 1.05187"
    assert " ".join(lines[1:]).startswith("epsilon_lower_bound_fdp: not given at δ = 0")
    res = CliRunner().invoke(
        app, ["dp-audit", "bound", "--m", "1000", "--r", "1000", "--v", "900", "--delta", "1e-5", "--json"]
    )
    both = json.loads(res.output)  # issue 35: both bounds from the same guesses, 2.02 and 3.78
    assert round(both["epsilon_lower_bound"], 2) == 2.02 and round(both["epsilon_lower_bound_fdp"], 2) == 3.78
    assert "Gaussian" in both["fdp_assumption"]
    res = CliRunner().invoke(
        app, ["dp-audit", "bound", "--m", "1000", "--r", "100", "--v", "80", "--delta", "1e-5", "--json"]
    )
    assert json.loads(res.output)["epsilon_lower_bound"] == pytest.approx(
        epsilon_lower_bound(1000, 100, 80, 1e-5)
    )
    res = CliRunner().invoke(app, ["dp-audit", "bound", "--m", "10", "--r", "20", "--v", "1"])
    assert res.exit_code == 2


def test_run_trains_once_and_prints_the_bound_and_the_run(tmp_path):
    from lmleak.data.synth.customersim import synthesize

    paths = synthesize(tmp_path / "data", users=4, dialogs_per_user=1, seed=0)
    args = ["dp-audit", "run", "--corpus", str(paths["corpus"]), "--out", str(tmp_path / "run")]
    args += ["--m", "8", "--mode", "nodp", "--epochs", "1", "--seq-len", "32", "--width", "32"]
    args += ["--layers", "1", "--heads", "2", "--vocab-size", "200", "--holdout-users", "0", "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    a = summary["dp_audit"]
    assert (a["m"], a["r"]) == (8, 4)  # r defaults to m / 2
    assert summary["epsilon_lower_bound"] == pytest.approx(
        epsilon_lower_bound(a["m"], a["r"], a["v"], a["delta"], 0.95)
    )
    assert (tmp_path / "run" / "canaries.parquet").is_file()
    assert summary["report"].endswith(".html")
    res = CliRunner().invoke(app, [*args[:5], str(tmp_path / "run2"), "--mode", "nope"])
    assert res.exit_code == 2


def test_the_summary_lines_give_the_bound_the_guesses_and_a_violated_claim(capsys):
    summary = {
        "epsilon_lower_bound": 1.234567,
        "statement": "claimed ε ≤ 1; measured ≥ 1.23",
        "dp_audit": {"v": 9, "r": 10, "m": 20, "num_included": 11, "delta": 1e-5},
        "claim_violated": True,
        "report": "r/report.html",
    }
    print_dp_audit(out, summary, "r")
    text = " ".join(capsys.readouterr().out.split())  # rich wraps long lines at the console width
    assert text.startswith("epsilon_lower_bound: 1.23457 claimed ε ≤ 1; measured ≥ 1.23: ")
    assert "9 of 10 guesses right about 20 canaries (11 included), delta 1e-05" in text
    assert "the DP claim is violated" in text
    assert text.endswith("run: r; report: r/report.html")
    summary["limit"] = "with 10 guesses about 20 canaries this audit certifies at most ε ≥ 1.05"
    summary["placebo_warning"] = "a placebo run certified ε ≥ 1.23"
    print_dp_audit(out, summary, "r")
    text = " ".join(capsys.readouterr().out.split())
    assert summary["limit"] in text and summary["placebo_warning"] in text
    summary["claim_violated"] = False
    print_dp_audit(out, summary, "r")
    assert "violated" not in capsys.readouterr().out


def test_dp_audit_run_the_audit_config_and_the_library_share_their_defaults():
    import dataclasses
    import typing

    import typer

    from lmleak.attacks.dp_audit import DPAuditSettings
    from lmleak.audit.config import AnalysesSpec

    cmd = typer.main.get_command(app).commands["dp-audit"].commands["run"]  # type: ignore[attr-defined]
    cli = {p.name: p.default for p in cmd.params}
    lib = {f.name: f.default for f in dataclasses.fields(DPAuditSettings)}
    # issue 34: the YAML section, the options and the library are one class
    assert typing.get_type_hints(AnalysesSpec)["dp_audit"] == DPAuditSettings | None
    for key in ("m", "r", "delta", "confidence", "seed", "canary_design"):
        assert cli[key] == lib[key], key
    assert lib["m"] == 256


def test_plan_prints_the_largest_certifiable_epsilon_per_precision_and_the_canaries_for_a_target():
    from lmleak.attacks.dp_audit import canaries_needed, max_certifiable_epsilon

    res = CliRunner().invoke(app, ["dp-audit", "plan", "--m", "1000", "--json"])
    assert json.loads(res.output)["r"] == 500  # by default as dp-audit run guesses: half the canaries
    args = ["dp-audit", "plan", "--m", "1000", "--r", "1000", "--precision", "1", "--precision", "0.9"]
    res = CliRunner().invoke(app, [*args, "--target-epsilon", "4", "--json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output)
    assert (plan["m"], plan["r"], plan["delta"], plan["confidence"]) == (1000, 1000, 0.0, 0.95)
    rows = {row["precision"]: row for row in plan["rows"]}
    assert rows[1.0]["max_epsilon"] == pytest.approx(5.809, abs=1e-3)  # the "near 5.8"
    assert rows[0.9]["max_epsilon"] == pytest.approx(2.021, abs=1e-3)  # and "near 2.0"
    assert rows[0.9]["max_epsilon"] == max_certifiable_epsilon(1000, precision=0.9)
    assert rows[1.0]["canaries_needed"] == canaries_needed(4.0) == 166
    assert rows[0.9]["canaries_needed"] is None  # 0.9 < e^4 / (1 + e^4)
    res = CliRunner().invoke(app, [*args, "--target-epsilon", "4"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "1000 of 1000 │ 5.809 │ 166" in text and "900 of 1000 │ 2.021 │ unreachable" in text
    res = CliRunner().invoke(app, ["dp-audit", "plan", "--m", "100"])
    assert res.exit_code == 0 and "30 of 50" in res.output  # the default precisions, down to 0.6, of m/2
    res = CliRunner().invoke(app, ["dp-audit", "plan", "--m", "100", "--precision", "1.2"])
    assert res.exit_code == 2 and "precision" in res.output


def test_run_placebo_trains_no_canary_and_says_so(tmp_path):
    from lmleak.data.synth.customersim import synthesize

    paths = synthesize(tmp_path / "data", users=4, dialogs_per_user=1, seed=0)
    args = ["dp-audit", "run", "--corpus", str(paths["corpus"]), "--out", str(tmp_path / "run")]
    args += ["--m", "8", "--mode", "nodp", "--epochs", "1", "--seq-len", "32", "--width", "32"]
    args += ["--layers", "1", "--heads", "2", "--vocab-size", "200", "--holdout-users", "0", "--placebo"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "placebo run (no canary trained on)" in text
    assert "this audit certifies at most ε ≥" in text
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["placebo"] is True and summary["dp_audit"]["num_trained_canaries"] == 0
    assert summary["epsilon_lower_bound"] == 0.0


def test_run_privacy_unit_user_shares_the_librarys_defaults_and_refuses_an_unknown_unit(tmp_path, capsys):
    import dataclasses

    import typer

    from lmleak.attacks.dp_audit import DPAuditConfig

    cmd = typer.main.get_command(app).commands["dp-audit"].commands["run"]  # type: ignore[attr-defined]
    cli = {p.name: p.default for p in cmd.params}
    lib = {f.name: f.default for f in dataclasses.fields(DPAuditConfig)}
    assert cli["privacy_unit"] == lib["privacy_unit"] == "sequence"
    assert cli["canary_documents"] == lib["canary_documents"]
    args = ["dp-audit", "run", "--corpus", str(tmp_path / "c.jsonl"), "--out", str(tmp_path / "run")]
    res = CliRunner().invoke(app, [*args, "--privacy-unit", "document"])
    assert res.exit_code == 2 and "unknown privacy unit 'document'" in res.output
    assert not (tmp_path / "run").exists()
    summary = {
        "epsilon_lower_bound": 0.5,
        "statement": "no DP claim (ε = ∞); measured ≥ 0.5 per person (95% confidence)",
        "dp_audit": {"v": 9, "r": 10, "m": 20, "num_included": 11, "delta": 1e-5, "privacy_unit": "user",
                     "canary_documents": 4},
        "claim_violated": False,
        "report": "r/report.html",
    }  # fmt: skip
    print_dp_audit(out, summary, "r")
    text = " ".join(capsys.readouterr().out.split())
    assert "9 of 10 guesses right about 20 canary users (4 documents each) (11 included)" in text


def test_run_privacy_unit_user_trains_dp_at_the_user_level_and_bounds_per_person(tmp_path):
    from lmleak.data.synth.customersim import synthesize

    paths = synthesize(tmp_path / "data", users=4, dialogs_per_user=1, seed=0)
    args = ["dp-audit", "run", "--corpus", str(paths["corpus"]), "--out", str(tmp_path / "run")]
    args += ["--m", "8", "--mode", "dp", "--noise-multiplier", "1", "--epochs", "1", "--batch-size", "2"]
    args += ["--seq-len", "32"]
    args += ["--width", "32", "--layers", "1", "--heads", "2", "--vocab-size", "200", "--holdout-users", "0"]
    res = CliRunner().invoke(app, [*args, "--privacy-unit", "user", "--canary-documents", "2", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    privacy = json.loads((tmp_path / "run" / "model" / "privacy.json").read_text())
    assert privacy["privacy_unit"] == summary["training_privacy_unit"] == summary["privacy_unit"] == "user"
    assert summary["canary_documents"] == 2 and summary["dp_epsilon"] == privacy["epsilon"]
    assert "per person" in summary["statement"]


def test_run_names_a_crafted_design_and_refuses_an_unknown_one(tmp_path, capsys):
    summary = {
        "epsilon_lower_bound": 0.5,
        "epsilon_lower_bound_fdp": 1.2,
        "mu_lower_bound": 0.4,
        "fdp_note": None,
        "statement": "no DP claim (ε = ∞); measured ≥ 0.5",
        "dp_audit": {"v": 9, "r": 10, "m": 20, "num_included": 11, "delta": 1e-5, "canary_design": "crafted"},
        "claim_violated": False,
        "report": "r/report.html",
    }
    print_dp_audit(out, summary, "r")
    text = " ".join(capsys.readouterr().out.split())
    assert "epsilon_lower_bound_fdp: 1.2 (mu-GDP refuted up to mu = 0.4; assumes a Gaussian trade-off" in text
    assert "about 20 canaries (crafted: rune secrets, new tokens)" in text
    args = ["dp-audit", "run", "--corpus", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "run")]
    res = CliRunner().invoke(app, [*args, "--canary-design", "fancy"])
    assert res.exit_code == 2 and "canary design" in res.output and not (tmp_path / "run").exists()
