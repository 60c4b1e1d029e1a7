"""The curated public API (issue 17): every name importable, documented, and working end to end."""

from __future__ import annotations

import inspect
import json

import pandas as pd

import lmleak

PUBLIC = {"load_model", "load_corpus", "run_report", "run_exposure", "run_membership", "run_probe", "audit"}


def test_the_public_names_are_exported_and_documented():
    assert PUBLIC <= set(lmleak.__all__)
    assert set(lmleak.__all__) == {*lmleak._EXPORTS, "__version__"}  # every export resolvable, none unlisted
    for name in lmleak.__all__:
        obj = getattr(lmleak, name)
        if callable(obj):
            assert inspect.getdoc(obj), f"{name} has no docstring"


def test_the_public_api_runs_an_audit_of_a_tiny_model_end_to_end(tmp_path):
    from lmleak import audit, load_corpus, load_model, run_exposure, run_membership, run_probe, run_report
    from lmleak.data.synth.customersim import synthesize

    paths = synthesize(tmp_path / "data", users=6, dialogs_per_user=2, seed=1, canaries=1, canary_repeats=3)
    corpus = load_corpus(paths["corpus"])
    model = load_model(f"fake:{paths['corpus']}")
    report = run_report(model, corpus, tmp_path / "report")
    seqs = pd.read_parquet(tmp_path / "report" / "sequences.parquet")
    # the fake model memorises its corpus, so it leaks; the headline counts the parquet's unique rows
    assert report["num_documents"] == len(corpus)
    assert report["unique_sequences"] == int((seqs.loc[seqs["k"] == 1, "users_in_d"] == 1).sum()) > 0
    exposure, rows = run_exposure(model, paths["canaries"], tmp_path / "exposure", max_candidates=10_000)
    assert exposure["num_canaries"] == 1 and len(rows) == 1
    texts = [d.text for d in corpus]
    mia = run_membership(
        model,
        texts[:6],
        ["a text the model never saw number " + str(i) for i in range(6)],
        tmp_path / "mia",
        group_size=0,
    )
    assert 0.0 <= mia["mia_auc"] <= 1.0
    subjects = [json.loads(line) for line in paths["subjects"].read_text().splitlines()][:2]
    probe = run_probe(model, subjects, tmp_path / "probe", targets=("email",), k=1, beams=1, figures=False)
    assert probe["subjects"] == 2
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(
        f"out: {tmp_path / 'audit'}\ncorpus: {{path: {paths['corpus']}}}\n"
        f"models: [{{name: m, path: 'fake:{paths['corpus']}'}}]\nanalyses: {{report: {{k: [1]}}}}\n"
    )
    run = audit(cfg)
    assert (run / "report.html").exists() and json.loads((run / "summary.json").read_text())["models"]["m"]


def test_importing_the_errors_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, lmleak.errors, lmleak.cli.common; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
