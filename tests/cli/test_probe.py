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
