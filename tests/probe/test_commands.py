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
from lmleak.probe.settings import ProbeSettings, SoftPromptSettings
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
    got = probe_files(
        spec,
        paths["subjects"],
        tmp_path / "a",
        ProbeSettings(targets=("email,phone",), limit=3, templates=2, beams=1, seed=4, figures=False),
        progress=said.append,
    )
    want = run_probe(
        load_model(spec),
        read_subjects(paths["subjects"])[:3],
        tmp_path / "b",
        ProbeSettings(targets=("email", "phone"), templates=2, beams=1, seed=4, figures=False),
    )
    assert got == want and got["subjects"] == 3
    assert said == [  # no holdout.json: no controls, and nobody is called a member (issue 32)
        f"probing 3 subjects of {load_model(spec).name}",
        "no held-out people (holdout.json): the membership of all 3 people is unknown; made-up people "
        "are probed the same way as the null",
    ]
    assert got["people"]["membership_unknown"] == 3 and got["made_up_controls"]["people"] == 3
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["targets"].keys() == {"email", "phone"}


def test_probe_files_refuses_bad_targets(synth, tmp_path):
    paths, spec = synth
    with pytest.raises(InputError, match="'fax'"):
        probe_files(spec, paths["subjects"], tmp_path / "a", ProbeSettings(targets=("fax",)))


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

    def fake(model, subjects, out_dir, settings, **kw):
        seen.update(model=model, subjects=subjects, out_dir=out_dir, **vars(settings), **kw)
        return {"soft": {}}

    monkeypatch.setattr(commands, "run_softprompt", fake)
    res = softprompt_files(
        spec,
        paths["subjects"],
        tmp_path,
        SoftPromptSettings(target="email", epochs=3, lr=0.1),
        transfer_to=spec,
    )
    assert res == {"soft": {}}
    assert seen["model"].name == load_model(spec).name and seen["transfer"].name == seen["model"].name
    assert seen["subjects"] == read_subjects(paths["subjects"]) and seen["out_dir"] == tmp_path
    assert (seen["target"], seen["epochs"], seen["lr"]) == ("email", 3, 0.1)
    softprompt_files(spec, paths["subjects"], tmp_path)
    assert seen["transfer"] is None and seen["target"] == "phone"
    with pytest.raises(InputError):
        softprompt_files(spec, paths["subjects"], tmp_path, SoftPromptSettings(target="fax"))


PAIRS = [
    {"name": "Ann Lee", "email": "ann@example.org"},
    {"name": "Bob Ray", "email": "bob@example.org"},
    {"name": "Cy Dee", "phone": "201-555-0100"},
]
FULL = {"name": "Dee Fox", "email": "dee@example.org", "phone": "201-555-0199", "address": "1 Main St"}


def test_each_level_counts_the_subjects_with_the_items_it_needs_by_hand():
    from lmleak.probe.commands import eligible_by_level

    # twin: a name and one item (all 4); triplet: two items (Dee only); quadruplet: three (Dee only)
    assert eligible_by_level([*PAIRS, FULL]) == {"triplet": 1, "twin": 4, "quadruplet": 1}
    assert eligible_by_level(PAIRS) == {"triplet": 0, "twin": 3, "quadruplet": 0}


def test_a_level_left_unset_is_picked_and_a_level_with_no_eligible_subject_warns_naming_the_one_that_has_them():
    """Regression: the example config's `level: triplet` on name + e-mail pairs probed nothing, and the
    audit said only `done in 0.0 s`."""
    from lmleak.probe.commands import choose_level

    assert choose_level([*PAIRS, FULL], None) == ("triplet", None)  # the paper's level when someone has it
    level, warning = choose_level(PAIRS, None)
    assert level == "twin" and "probing at twin, where 3 of 3 subjects are eligible" in warning
    level, warning = choose_level(PAIRS, "triplet")  # the user's choice is kept, and told
    assert level == "triplet"
    assert warning == (
        "probe level triplet: no subject has the items it needs, so nothing will be probed; "
        "twin has 3 eligible subjects: set the level to twin"
    )
    assert choose_level(PAIRS, "twin") == ("twin", None)
    _, none = choose_level([{"name": "Eve"}], None)
    assert "no subject has the items any level needs" in none


def test_probe_files_warns_when_its_level_probes_nothing(synth, tmp_path):
    paths, spec = synth
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(s) + "\n" for s in PAIRS))
    said: list[str] = []
    warned: list[str] = []
    got = probe_files(
        spec,
        pairs,
        tmp_path / "a",
        ProbeSettings(level="triplet", templates=1, beams=1, figures=False),
        progress=said.append,
        warn=warned.append,
    )
    assert len(warned) == 1 and "twin has 3 eligible subjects" in warned[0]
    assert got["level"] == "triplet" and all(not t.get("prompts") for t in got["targets"].values())
    auto = probe_files(
        spec, pairs, tmp_path / "b", ProbeSettings(templates=1, beams=1, figures=False), warn=warned.append
    )
    assert auto["level"] == "twin" and any(t.get("prompts") for t in auto["targets"].values())


def test_probe_files_made_up_false_leaves_the_null_out_and_says_why(synth, tmp_path):
    """``probe run --no-made-up`` on a model with no held-out people: no null, so no excess."""
    paths, spec = synth
    got = probe_files(
        spec,
        paths["subjects"],
        tmp_path / "a",
        ProbeSettings(targets=("phone",), limit=2, templates=1, beams=1, figures=False, made_up=False),
    )
    assert "made_up_controls" not in got and got["pii_exact_match_excess"] is None
    assert "no made-up people were probed" in got["pii_exact_match_excess_reason"]
