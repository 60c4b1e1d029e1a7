"""Issue 20 in the audit: the ``dp_audit`` and ``extract`` config keys and stages, their KART
records and HTML cards, and the gate's ``--min-epsilon-lower-bound`` / ``--max-extracted``."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.synth.customersim import synthesize


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
