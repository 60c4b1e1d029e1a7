"""The audit on a CUDA GPU gives the CPU's results (up to floating-point rounding).

Skipped without a GPU (CI has none); run on a GPU machine with ``pytest -m gpu tests/gpu``. One small
GPT is trained on the CPU, then every scoring analysis runs twice through the CLI — ``lmleak --device
cpu`` and ``lmleak --device cuda`` — and the result files are compared.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def _cli(*args: str) -> str:
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, Path]:
    from lmleak.data.synth.customersim import synthesize

    root = tmp_path_factory.mktemp("gpu")
    paths = synthesize(root / "data", users=12, dialogs_per_user=3, seed=0, canaries=2, canary_repeats=10)
    other = synthesize(root / "other", users=12, dialogs_per_user=3, seed=1)
    _cli(
        "--device",
        "cpu",
        "train",
        "--corpus",
        str(paths["corpus"]),
        "--out",
        str(root / "model"),
        "--epochs",
        "6",
        "--seq-len",
        "64",
        "--tokenizer",
        "word",
        "--val-fraction",
        "0",
        "--quiet",
    )
    members = [json.loads(line) for line in paths["corpus"].read_text().splitlines()][:30]
    non = [json.loads(line) for line in other["corpus"].read_text().splitlines()][:30]
    (root / "in.jsonl").write_text("".join(json.dumps({"text": d["text"]}) + "\n" for d in members))
    (root / "out.jsonl").write_text("".join(json.dumps({"text": d["text"]}) + "\n" for d in non))
    return {
        **paths,
        "model": root / "model",
        "root": root,
        "in": root / "in.jsonl",
        "out": root / "out.jsonl",
    }


def test_models_load_onto_the_gpu_by_default(trained):
    from lmleak.models.loading import load_model

    assert load_model(str(trained["model"])).device.type == "cuda"
    assert load_model(str(trained["model"]), device="cpu").device.type == "cpu"


def _both(trained, name: str, *args: str) -> tuple[Path, Path]:
    outs = []
    for dev in ("cpu", "cuda"):
        out = trained["root"] / f"{name}-{dev}"
        _cli("--device", dev, *args, "--out", str(out))
        outs.append(out)
    return outs[0], outs[1]


def test_leakage_report_on_cuda_matches_cpu(trained):
    cpu, gpu = _both(
        trained,
        "report",
        "report",
        "--model",
        str(trained["model"]),
        "--corpus",
        str(trained["corpus"]),
        "--k",
        "1",
        "3",
        "--quiet",
    )
    a = pd.concat([pd.read_parquet(p) for p in sorted((cpu / "ledger").glob("*.parquet"))]).set_index(
        "doc_id"
    )
    b = pd.concat([pd.read_parquet(p) for p in sorted((gpu / "ledger").glob("*.parquet"))]).set_index(
        "doc_id"
    )
    b = b.loc[a.index]
    assert all(np.array_equal(x, y) for x, y in zip(a["token_ids"], b["token_ids"], strict=True))
    lp_a, lp_b = np.concatenate(list(a["logprobs"])), np.concatenate(list(b["logprobs"]))
    assert np.abs(lp_a - lp_b).max() < 1e-3
    ranks_a, ranks_b = np.concatenate(list(a["ranks"])), np.concatenate(list(b["ranks"]))
    assert (ranks_a == ranks_b).mean() > 0.999  # a rank may flip only where two scores tie to the last bits
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (cpu, gpu))
    assert sa["perplexity"] == pytest.approx(sb["perplexity"], rel=1e-4)
    if (ranks_a == ranks_b).all():  # then S, and every count derived from it, is the same
        for key in ("num_sequences", "num_occurrences", "unique_sequences", "by_k"):
            assert sa[key] == sb[key], key


def test_canary_exposure_on_cuda_matches_cpu(trained):
    cpu, gpu = _both(
        trained,
        "exposure",
        "exposure",
        "--model",
        str(trained["model"]),
        "--canaries",
        str(trained["canaries"]),
        "--quiet",
    )
    a, b = pd.read_parquet(cpu / "exposure.parquet"), pd.read_parquet(gpu / "exposure.parquet")
    assert list(a["secret"]) == list(b["secret"])
    assert np.abs(a["exposure_bits"].to_numpy() - b["exposure_bits"].to_numpy()).max() < 0.05
    assert np.allclose(a["logppl_nats"], b["logppl_nats"], atol=1e-3)


def test_membership_inference_on_cuda_matches_cpu(trained):
    cpu, gpu = _both(
        trained,
        "mia",
        "mia",
        "--model",
        str(trained["model"]),
        "--members",
        str(trained["in"]),
        "--non-members",
        str(trained["out"]),
        "--group-size",
        "0",
        "--quiet",
    )
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (cpu, gpu))
    assert sa["auc"] == pytest.approx(sb["auc"], abs=1e-6)
    for ra, rb in zip(sa["metrics"], sb["metrics"], strict=True):  # every feature's AUC
        assert (ra["level"], ra["feature"]) == (rb["level"], rb["feature"])
        assert ra["auc"] == pytest.approx(rb["auc"], abs=0.01), ra["feature"]


def test_pii_probing_on_cuda_matches_cpu(trained):
    cpu, gpu = _both(
        trained,
        "probe",
        "probe",
        "run",
        "--model",
        str(trained["model"]),
        "--subjects",
        str(trained["subjects"]),
        "--targets",
        "phone,email",
        "--templates",
        "2",
        "--beams",
        "3",
        "--quiet",
    )
    a, b = pd.read_parquet(cpu / "likelihoods.parquet"), pd.read_parquet(gpu / "likelihoods.parquet")
    for c in ("likelihood", "null_likelihood"):
        assert np.allclose(np.log(a[c]), np.log(b[c]), atol=1e-3), c
    ga, gb = pd.read_parquet(cpu / "generations.parquet"), pd.read_parquet(gpu / "generations.parquet")
    assert (ga["generated"] == gb["generated"]).mean() > 0.95  # beam search may break a near-tie differently
