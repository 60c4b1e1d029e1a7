"""lmleak.probe.commands: the probe commands' work from specs and files equals the probing functions
called by hand on the loaded model and subjects."""

from __future__ import annotations

import json

import pytest

from lmleak.data.synth import customersim
from lmleak.errors import InputError
from lmleak.models.loading import load_model
from lmleak.probe import commands
from lmleak.probe.commands import (
    parse_targets,
    probe_files,
    probe_subject_file,
    softprompt_files,
    sweep_files,
)
from lmleak.probe.probing import run_probe
from lmleak.probe.subjects import read_subjects
from lmleak.probe.sweeps import run_sweep
from lmleak.probe.verdict import subject_view


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    paths = customersim.synthesize(tmp_path_factory.mktemp("syn"), users=5, dialogs_per_user=2, seed=0)
    return paths, f"fake:{paths['corpus']}"


def test_parse_targets_keeps_the_order_and_refuses_unknown_or_empty_lists():
    assert parse_targets(" email,phone ,,") == ("email", "phone")
    for bad in ("", " , ", "phone,fax"):
        with pytest.raises(InputError, match="unknown target type"):
            parse_targets(bad)


def test_probe_files_equals_run_probe_on_the_loaded_model_and_reports_progress(synth, tmp_path):
    paths, spec = synth
    said: list[str] = []
    got = probe_files(spec, paths["subjects"], tmp_path / "a", targets="email,phone", limit=3,
                      progress=said.append, k=2, beams=1, seed=4, figures=False)  # fmt: skip
    want = run_probe(load_model(spec), read_subjects(paths["subjects"])[:3], tmp_path / "b",
                     targets=("email", "phone"), k=2, beams=1, seed=4, figures=False)  # fmt: skip
    assert got == want and got["subjects"] == 3
    assert said == [f"probing 3 subjects of {load_model(spec).name}"]  # no holdout.json: no controls
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["targets"].keys() == {"email", "phone"}


def test_probe_files_refuses_bad_targets(synth, tmp_path):
    paths, spec = synth
    with pytest.raises(InputError, match="'fax'"):
        probe_files(spec, paths["subjects"], tmp_path / "a", targets="fax")


def test_sweep_files_equals_run_sweep(synth, tmp_path):
    paths, spec = synth
    got = sweep_files([spec], paths["subjects"], tmp_path / "a", target="phone,email", limit=2)
    want = run_sweep(
        {spec: load_model(spec)}, read_subjects(paths["subjects"])[:2], tmp_path / "b", target="phone"
    )
    assert got == want and {r["model"] for r in got} == {spec}


def test_probe_subject_file_needs_one_subject_and_equals_subject_view(synth, tmp_path):
    paths, spec = synth
    first = paths["subjects"].read_text().splitlines()[0]
    me = tmp_path / "me.json"
    me.write_text(first)
    view = probe_subject_file(spec, me, templates=1, beams=1)
    assert view == subject_view(load_model(spec), json.loads(first), templates=1, beams=1)
    assert view.subject == json.loads(first)["name"]
    with pytest.raises(InputError, match="expected one subject, found 5"):
        probe_subject_file(spec, paths["subjects"])


def test_softprompt_files_loads_both_models_and_passes_the_options(synth, tmp_path, monkeypatch):
    paths, spec = synth
    seen: dict = {}

    def fake(model, subjects, out_dir, **kw):
        seen.update(model=model, subjects=subjects, out_dir=out_dir, **kw)
        return {"soft": {}}

    monkeypatch.setattr(commands, "run_softprompt", fake)
    res = softprompt_files(
        spec, paths["subjects"], tmp_path, target="email", transfer_to=spec, epochs=3, lr=0.1
    )
    assert res == {"soft": {}}
    assert seen["model"].name == load_model(spec).name and seen["transfer"].name == seen["model"].name
    assert seen["subjects"] == read_subjects(paths["subjects"]) and seen["out_dir"] == tmp_path
    assert (seen["target"], seen["epochs"], seen["lr"]) == ("email", 3, 0.1)
    softprompt_files(spec, paths["subjects"], tmp_path)
    assert seen["transfer"] is None and seen["target"] == "phone"
    with pytest.raises(InputError):
        softprompt_files(spec, paths["subjects"], tmp_path, target="fax")
