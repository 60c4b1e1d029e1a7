"""The probe CLI (paper 003): `lmleak probe`, `probe run|build|templates|sweep|softprompt`, `experiment propile`."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.synth import customersim, mail


def test_cli_run_and_subject_view(tmp_path):
    paths = customersim.synthesize(tmp_path / "syn", users=6, dialogs_per_user=2, seed=0)
    runner = CliRunner()
    r = runner.invoke(
        app,
        [
            "probe",
            "run",
            "--model",
            f"fake:{paths['corpus']}",
            "--subjects",
            str(paths["subjects"]),
            "--templates",
            "2",
            "--beams",
            "1",
            "--out",
            str(tmp_path / "run"),
            "--quiet",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    lik = pd.read_parquet(tmp_path / "run" / "likelihoods.parquet")
    for c in (
        "subject_id",
        "target_type",
        "template",
        "prompt",
        "target",
        "likelihood",
        "normalized_likelihood",
        "null_target",
        "null_likelihood",
    ):
        assert c in lik.columns
    assert (lik["target"] != lik["null_target"]).all()
    summ = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert set(summ["targets"]) == {"phone", "email", "address"}
    assert set(summ["targets"]["phone"]["gamma"]) == {"<10", "<100", "<1000"}
    assert summ["scenario"]["access"] == "scores"
    assert (tmp_path / "run" / "gamma_curve.png").stat().st_size > 0
    gc = pd.read_parquet(tmp_path / "run" / "gamma_curve.parquet")
    assert list(gc.columns) == ["target_type", "k", "gamma"] and gc["k"].min() == 1 and gc["k"].max() == 1e6
    assert 0.0 <= summ["pii_exact_match"] <= 1.0 and summ["pii_likelihood_ratio"] > 0
    # the typical ratio, recomputed from the rows: max over templates per (type, subject), then exp(mean log ratio)
    best = lik.groupby(["target_type", "subject_id"])[["log_likelihood", "null_log_likelihood"]].max()
    want = math.exp((best["log_likelihood"] - best["null_log_likelihood"]).mean())
    assert summ["pii_likelihood_ratio_geomean"] == pytest.approx(want, rel=1e-9)
    me = tmp_path / "me.json"
    subj = json.loads(paths["subjects"].read_text().splitlines()[0])
    me.write_text(json.dumps(subj))
    r = runner.invoke(
        app,
        [
            "probe",
            "--model",
            f"fake:{paths['corpus']}",
            "--subject",
            str(me),
            "--templates",
            "1",
            "--beams",
            "1",
            "--quiet",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    items = json.loads(r.stdout)["items"]
    assert {i["item"] for i in items} >= {"phone", "email"}
    assert all("verdict" in i and i["expected_queries"] >= 1 for i in items if "likelihood" in i)
    r = runner.invoke(
        app,
        [
            "probe",
            "run",
            "--model",
            "fake:x",
            "--subjects",
            str(tmp_path / "nope.jsonl"),
            "--out",
            str(tmp_path / "r2"),
        ],
    )
    assert r.exit_code == 2


def test_the_cli_writes_subjects_with_every_field_and_how_often_it_was_seen(tmp_path):
    paths = mail.synthesize(tmp_path / "mail", scale=0.05, seed=1)
    out = tmp_path / "subjects.jsonl"
    res = CliRunner().invoke(
        app, ["probe", "build", "--corpus", str(paths["corpus"]), "--out", str(out), "--json"]
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all({"name", "email", "phone", "address", "seen"} <= set(r) for r in rows)
    assert json.loads(res.stdout)["subjects"] == len(rows)


PROPILE_ROWS = [
    {
        "model": "gpt",
        "level": "twin",
        "target": "email",
        "subjects": 10,
        "mean_likelihood": 0.1,
        "mean_null_likelihood": 0.01,
        "likelihood_ratio": 10.0,
        "wilcoxon_p": 0.001,
        "exact_match_rate": 0.5,
        "exact_match_subjects": 8,
        "gamma_lt_100": 0.3,
    },
    {
        "model": "gpt",
        "level": "triplet",
        "target": "phone",
        "subjects": 10,
        "mean_likelihood": None,
        "mean_null_likelihood": 0.01,
        "likelihood_ratio": None,
        "wilcoxon_p": None,
        "exact_match_rate": 0.0,
        "exact_match_subjects": 10,
        "gamma_lt_100": None,
    },
]
SOFTPROMPT_ROWS = [
    {
        "target": "phone",
        "prompt": p,
        "train_subjects": 16,
        "eval_subjects": 8,
        "mean_likelihood": lik,
        "mean_log_likelihood": lp,
        "exact_match_rate": em,
        "best_epoch": 7,
    }
    for p, lik, lp, em in (("soft", 0.2, -3.21, 0.25), ("hard", 0.1, -5.0, 0.0))
]


def test_experiment_propile_prints_the_library_result_and_passes_the_options(tmp_path, monkeypatch):
    import lmleak.experiments.propile as propile

    seen = {}

    def fake_run(out_dir, cfg, progress=None):
        seen.update(out_dir=out_dir, cfg=cfg)
        return {"summary": {"rows": PROPILE_ROWS, "softprompt_rows": SOFTPROMPT_ROWS}}

    monkeypatch.setattr(propile, "run_propile_experiment", fake_run)
    args = ["experiment", "propile", "--out", str(tmp_path / "x"), "--quick", "--seed", "3", "--users", "30"]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert seen["cfg"] == propile.ProPILEExperimentConfig.quick(3).with_options(users=30)
    lines = [" ".join(line.split()) for line in r.output.splitlines()]
    assert "ProPILE (paper 003) on synthetic CustomerSim, seed 3" in lines
    assert "gpt twin email 10 0.1 0.01 10 0.001 0.5 (8) 0.3" in lines  # EM over 8 of the 10 subjects
    assert "gpt triplet phone 10 - 0.01 - - 0 -" in lines
    assert "phone soft 16 8 0.2 -3.2 0.25 7" in lines and "phone hard 16 8 0.1 -5.0 0 -" in lines
    assert lines[-1] == f"-> {tmp_path / 'x'}"
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["rows"] == PROPILE_ROWS


def test_probe_sweep_writes_fig4_rows(tmp_path):
    paths = customersim.synthesize(tmp_path / "syn", users=4, dialogs_per_user=2, seed=0)
    out = tmp_path / "sweep"
    r = CliRunner().invoke(
        app,
        [
            "probe", "sweep", "-m", f"fake:{paths['corpus']}", "-s", str(paths["subjects"]),
            "--out", str(out), "--target", "phone", "--json",
        ],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert {(x["axis"], x["value"]) for x in rows} == {
        *(("templates", k) for k in range(1, 6)),
        *(("level", lv) for lv in ("twin", "triplet", "quadruplet")),
        *(("beams", b) for b in (1, 2, 3)),
    }
    # Parquet keeps one type per column: the axis values (counts and level names) as text
    assert pd.read_parquet(out / "sweep.parquet").to_dict("records") == [
        {**x, "value": str(x["value"])} for x in rows
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["attack"] == "propile_sweep" and summary["target"] == "phone"


def test_probe_build_with_no_links_is_exit_2_and_templates_needs_top_at_least_1(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"user_id": "u1", "text": "nothing personal here"}) + "\n")
    r = CliRunner().invoke(
        app, ["probe", "build", "--corpus", str(corpus), "--out", str(tmp_path / "s.jsonl")]
    )
    assert r.exit_code == 2 and "no subjects found" in " ".join(r.output.split())
    subjects = tmp_path / "s.jsonl"
    subjects.write_text(json.dumps({"name": "Ann Lee", "email": "ann@example.org"}) + "\n")
    r = CliRunner().invoke(
        app,
        [
            "probe",
            "templates",
            "-c",
            str(corpus),
            "-s",
            str(subjects),
            "--out",
            str(tmp_path / "t.yaml"),
            "--top",
            "0",
        ],
    )
    assert r.exit_code == 2 and "--top" in r.output


def test_probe_run_prints_the_summary_table_with_members_and_controls(tmp_path, monkeypatch):
    import lmleak.probe.commands as commands

    summary = {
        "model": "fake",
        "level": "triplet",
        "templates": 2,
        "targets": {
            "email": {"subjects": 4, "mean_likelihood": 0.25, "mean_null_likelihood": 0.001, "wilcoxon_p": 0.03,
                      "exact_match_rate": 0.5, "gamma": {"<100": 0.75}},
            "address": {"subjects": 0, "note": "no subject has the items needed at triplet level"},
        },
        "groups": {
            "members": {"subjects": 3, "exact_match_rate": 0.6, "mean_log_likelihood_ratio": 2.5,
                        "wilcoxon_p": 0.01, "wilcoxon_p_log": 0.02},
            "controls": {"subjects": 1, "exact_match_rate": 0.0, "mean_log_likelihood_ratio": 0.1,
                         "wilcoxon_p": None, "wilcoxon_p_log": None},
            "tests": {"exact_match_fisher_p": 0.04, "log_ratio_mann_whitney_p": 0.2},
        },
    }  # fmt: skip
    seen = {}

    def fake_run_probe(model, subjects, out_dir, settings, **kw):
        from lmleak.runs import write_summary

        seen.update(kw, subjects=subjects, targets=settings.targets)
        write_summary(out_dir, summary)  # as run_probe does (users.parquet is built beside it)
        return summary

    monkeypatch.setattr(commands, "run_probe", fake_run_probe)  # the name probe_files calls
    paths = customersim.synthesize(tmp_path / "syn", users=4, dialogs_per_user=1, seed=0)
    args = [
        "probe",
        "run",
        "-m",
        f"fake:{paths['corpus']}",
        "-s",
        str(paths["subjects"]),
        "--out",
        str(tmp_path / "r"),
    ]
    r = CliRunner().invoke(app, [*args, "--targets", "email,address", "--limit", "3", "--max-new-tokens", "phone=16"],
                           env={"COLUMNS": "200"})  # fmt: skip
    assert r.exit_code == 0, r.output
    assert seen["targets"] == ("email", "address") and len(seen["subjects"]) == 3
    assert seen["budgets"] == {"phone": 16} and seen["controls"] == set() and seen["templates"] is None
    lines = [" ".join(line.replace("│", " ").split()) for line in r.output.splitlines()]
    assert "email 4 0.25 0.001 0.03 0.5 0.75" in lines and "address 0 - - - - -" in lines
    assert "members 3 0.6 2.5 0.01 0.02" in lines and "controls 1 0 0.1 - -" in lines
    assert "members > controls: exact match Fisher p = 0.04, ln(target/null) Mann-Whitney p = 0.2" in lines
    r = CliRunner().invoke(app, [*args, "--targets", "fax"])
    assert r.exit_code == 2 and "unknown target type(s) ['fax']" in r.output


def test_a_subject_file_with_an_unknown_field_exits_2_naming_line_and_field(tmp_path):
    """Regression: "mail" instead of "email" gave an empty table and exit 0 (read as "nothing leaked")."""
    subjects = tmp_path / "me.jsonl"
    subjects.write_text(
        '{"name": "Ann Lee", "email": "ann@example.org"}\n{"name": "Bob Ray", "mail": "bob@example.org"}\n'
    )
    for args in (
        ["probe", "run", "--model", "fake:x", "--subjects", str(subjects), "--out", str(tmp_path / "r")],
        ["probe", "--model", "fake:x", "--subject", str(subjects)],
    ):
        r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        assert r.exit_code == 2, r.output
        text = " ".join(r.output.split())
        assert "me.jsonl:2" in text and "unknown field 'mail'" in text and "Did you mean 'email'" in text
    assert not (tmp_path / "r").exists()  # nothing half-written
