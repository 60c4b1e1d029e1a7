"""Probing and membership scoring on Ray give the local engine's rows (issue 19 item 6).

One local Ray on 2 CPUs serves the whole module; the passes are cut into several shards so that
both actors work. The local engine without shards is the oracle.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow  # a local Ray start plus actors that load the model: ~30 s on 2 cores


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from lmleak.data.synth.customersim import synthesize
    from lmleak.ledger.ledger import ModelSpec
    from lmleak.models.loading import load_model
    from lmleak.probe.subjects import read_subjects

    from .conftest import save_model

    root = tmp_path_factory.mktemp("rayprobe")
    paths = synthesize(root / "syn", users=6, dialogs_per_user=2, seed=0)
    texts = [json.loads(line)["text"] for line in paths["corpus"].read_text().splitlines() if line.strip()]
    model_dir = save_model(root / "model", texts)
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield (
        root,
        paths,
        texts,
        load_model(str(model_dir)),
        ModelSpec(str(model_dir)),
        read_subjects(paths["subjects"]),
    )
    if started:
        ray.shutdown()


def _manifest_shards(folder):
    return len(json.loads((folder / "manifest.json").read_text())["shards"])


def test_probe_passes_on_ray_equal_local(setup, tmp_path):
    from lmleak.probe.blackbox import generate_probes
    from lmleak.probe.probing import collect_probes, likelihood_rows
    from lmleak.probe.settings import ProbeSettings
    from lmleak.shards import ShardEngine

    _, _, _, model, spec, subjects = setup
    probes = collect_probes(subjects, "phone", level="twin", k=2) + collect_probes(
        subjects, "email", level="twin", k=2
    )
    assert len({p.subject_id for p in probes}) > 1 and len({p.template_index for p in probes}) > 1
    eng = ShardEngine("ray", num_workers=2)
    want = likelihood_rows(model, probes)  # in memory, no shards: the oracle
    got = likelihood_rows(model, probes, work_dir=tmp_path / "lik", shard_size=5, engine=eng, model_spec=spec)
    assert _manifest_shards(tmp_path / "lik") > 2
    assert got == want
    opts = {"settings": ProbeSettings(beams=2), "budgets": {"phone": 4, "email": 4}}
    want_g = generate_probes(model, probes, **opts)
    got_g = generate_probes(
        model, probes, **opts, work_dir=tmp_path / "gen", shard_size=5, engine=eng, model_spec=spec
    )
    local_g = generate_probes(model, probes, **opts, work_dir=tmp_path / "gen-local", shard_size=5)
    assert _manifest_shards(tmp_path / "gen") > 2
    assert got_g == local_g
    # rows read back from a Parquet shard have the columns of every row of that shard (None where unset)
    assert [{k: r.get(k) for k in w} for r, w in zip(got_g, want_g, strict=True)] == want_g


def test_membership_scores_on_ray_equal_local(setup, tmp_path, monkeypatch):
    import numpy as np

    from lmleak.attacks import membership
    from lmleak.attacks.membership import MembershipSettings, evaluate_membership
    from lmleak.attacks.mia_methods import MethodOptions
    from lmleak.shards import ShardEngine

    _, _, texts, model, spec, _ = setup
    members, non = texts[: len(texts) // 2], texts[len(texts) // 2 :]
    sizes, opts = MembershipSettings(num_per_side=8, group_size=4), MethodOptions(reference=model)
    want = evaluate_membership(model, members, non, sizes, options=opts)
    monkeypatch.setattr(membership, "SHARD_SIZE", 3)
    got = evaluate_membership(
        model,
        members,
        non,
        sizes,
        options=opts,
        work_dir=tmp_path / "mia",
        engine=ShardEngine("ray", num_workers=2),
        model_specs={"model": spec, "reference": spec},
    )
    assert _manifest_shards(tmp_path / "mia") > 2
    pd.testing.assert_frame_equal(got.scores, want.scores)
    pd.testing.assert_frame_equal(got.metrics, want.metrics)
    assert np.isfinite(got.scores["reference"]).all()


def test_cli_probe_run_and_mia_engine_ray(setup, tmp_path):
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    root, paths, texts, _, _, _ = setup
    model = str(root / "model")
    runs = {}
    for engine in ("local", "ray"):
        out = tmp_path / f"probe-{engine}"
        r = CliRunner().invoke(
            app,
            [
                "probe",
                "run",
                "--model",
                model,
                "--subjects",
                str(paths["subjects"]),
                "--targets",
                "phone",
                "--templates",
                "2",
                "--beams",
                "2",
                "--level",
                "twin",
                "--max-new-tokens",
                "phone=4",
                "--out",
                str(out),
                "--quiet",
                "--json",
                "--engine",
                engine,
                "--num-workers",
                "2",
            ],
        )
        assert r.exit_code == 0, r.output
        runs[engine] = out
    for name in ("likelihoods.parquet", "generations.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(runs["ray"] / name), pd.read_parquet(runs["local"] / name)
        )
    (tmp_path / "m.txt").write_text("\n".join(texts[:6]))
    (tmp_path / "n.txt").write_text("\n".join(texts[6:12]))
    summaries = {}
    for engine in ("local", "ray"):
        out = tmp_path / f"mia-{engine}"
        r = CliRunner().invoke(
            app,
            [
                "mia",
                "--model",
                model,
                "--members",
                str(tmp_path / "m.txt"),
                "--non-members",
                str(tmp_path / "n.txt"),
                "--group-size",
                "0",
                "--out",
                str(out),
                "--json",
                "--engine",
                engine,
            ],
        )
        assert r.exit_code == 0, r.output
        summaries[engine] = json.loads((out / "summary.json").read_text())
    assert summaries["ray"]["mia_auc_by_attack"] == summaries["local"]["mia_auc_by_attack"]
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "mia-ray" / "mia_scores.parquet"),
        pd.read_parquet(tmp_path / "mia-local" / "mia_scores.parquet"),
    )
    r = CliRunner().invoke(
        app,
        [
            "mia",
            "--model",
            model,
            "--members",
            str(tmp_path / "m.txt"),
            "--non-members",
            str(tmp_path / "n.txt"),
            "--out",
            str(tmp_path / "bad"),
            "--engine",
            "spark",
        ],
    )
    assert r.exit_code == 2 and "engine" in r.output
