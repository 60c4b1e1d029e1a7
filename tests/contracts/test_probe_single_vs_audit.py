"""Contract (issue 34): `lmleak probe run` and `lmleak audit` with only the probe stage are one probe.

Both commands read the same settings (:class:`lmleak.probe.settings.ProbeSettings`) and must reach
the same library function with the same inputs, so on the same small synthetic corpus and subjects
they write the same probe summary and the same stage files (the tables equal row for row). Only
the keys in :data:`MAY_DIFFER` and the files in :data:`AUDIT_ONLY_FILES` may differ, each for a
stated reason.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.holdout import Holdout
from lmleak.data.synth import customersim
from lmleak.probe import subjects as subjects_module

#: summary keys that legitimately differ between the two runs (everything else must be equal): a
#: stage's summary.json holds no run folder, time or command (the audit keeps those in its own
#: summary.json above the stage); only ``users``, users.parquet's record, which the audit keeps in
#: the model's entry (checked against it below).
MAY_DIFFER: frozenset[str] = frozenset({"users"})

#: files only the single run writes in its folder: risk per person (the audit's is in the model's folder)
SINGLE_ONLY_FILES = {"users.parquet"}

#: stage files only the audit writes
AUDIT_ONLY_FILES = {
    ".complete.json",  # the audit's record that the stage finished (a rerun reuses it)
}

#: the probe's settings, given once as options and once as the audit's `analyses.probe` section
SETTINGS = {"templates": 2, "beams": 1, "limit": 4, "seed": 3}


def _options(settings: dict) -> list[str]:
    return [a for k, v in settings.items() for a in (f"--{k.replace('_', '-')}", str(v))]


def _run_both(tmp_path, monkeypatch, case: str, *, corpus: bool = False, limit: int = SETTINGS["limit"]):
    paths = customersim.synthesize(tmp_path / "syn", users=4, dialogs_per_user=2, seed=0)
    model = f"fake:{paths['corpus']}"
    settings, held_out = {**SETTINGS, "limit": limit}, case == "held-out-controls"
    if case == "limit-decides-the-level":  # the first two people have a name and an e-mail only
        people = [json.loads(line) for line in paths["subjects"].read_text().splitlines()]
        people[:2] = [{k: p[k] for k in ("subject_id", "user_id", "name", "email")} for p in people[:2]]
        paths["subjects"].write_text("".join(json.dumps(p) + "\n" for p in people))
        settings["limit"] = 2  # those two only: twin, though the others would allow triplet
    if held_out:
        # a fake model has no folder, so no holdout.json: both commands' one reader of it
        # (probe.subjects.control_users) answers for the folder instead
        users = [json.loads(line)["user_id"] for line in paths["subjects"].read_text().splitlines()]
        holdout = Holdout(tuple(users[:2]), 0.5, None)
        monkeypatch.setattr(subjects_module, "read_holdout", lambda m: holdout if str(m) == model else None)
    runner = CliRunner()
    single = tmp_path / "single"
    r = runner.invoke(
        app,
        ["probe", "run", "--model", model, "--subjects", str(paths["subjects"]), "--out", str(single)]
        + _options(settings)
        + (["--corpus", str(paths["corpus"])] if corpus else [])
        + ["--quiet", "--json"],
    )
    assert r.exit_code == 0, r.output
    config = {
        "out": str(tmp_path / "audit"),
        "corpus": {"path": str(paths["corpus"])},
        "models": [{"name": "m", "path": model}],
        "analyses": {"probe": {**settings, "subjects": str(paths["subjects"])}, "kart": False},
    }
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(config))
    r = runner.invoke(app, ["audit", str(tmp_path / "audit.yaml"), "--quiet", "--json"])
    assert r.exit_code == 0, r.output
    return single, tmp_path / "audit" / "models" / "m" / "probe"


def _files(run) -> set[str]:
    return {str(p.relative_to(run)) for p in run.rglob("*") if p.is_file()}


@pytest.mark.parametrize("case", ["made-up-null", "held-out-controls", "limit-decides-the-level"])
def test_probe_run_and_the_audits_probe_stage_write_the_same_summary_and_files(tmp_path, monkeypatch, case):
    single, staged = _run_both(tmp_path, monkeypatch, case)
    a = json.loads((single / "summary.json").read_text())
    b = json.loads((staged / "summary.json").read_text())
    # the settings reached the probe (not its defaults), the controls too, and the level is that of
    # the people probed
    assert a["subjects"] == (2 if case == "limit-decides-the-level" else SETTINGS["limit"])
    assert ("groups" in a) == (case == "held-out-controls")
    assert a["level"] == ("twin" if case == "limit-decides-the-level" else "triplet")
    assert {k: v for k, v in a.items() if k not in MAY_DIFFER} == {
        k: v for k, v in b.items() if k not in MAY_DIFFER
    }
    assert _files(single) - SINGLE_ONLY_FILES == _files(staged) - AUDIT_ONLY_FILES
    # users.parquet: the single run's rows (the subjects' users) are the audit's rows of those users
    # (the audit has every corpus user a row); its record is the audit's, counts of those users aside
    mine, audited = (
        pd.read_parquet(single / "users.parquet"),
        pd.read_parquet(staged.parent / "users.parquet"),
    )
    assert len(mine) and set(mine["user_id"]) <= set(audited["user_id"])
    theirs = audited.set_index("user_id").loc[mine["user_id"]].reset_index()
    same = ["user_id", "probe_targets", "probe_hits", "pii_types", "held_out"]
    pd.testing.assert_frame_equal(mine[same].reset_index(drop=True), theirs[same], check_dtype=False)
    assert (mine["probe_targets"] > 0).all()
    for name in sorted(_files(single) - SINGLE_ONLY_FILES):
        if name.endswith(".parquet"):
            pd.testing.assert_frame_equal(pd.read_parquet(single / name), pd.read_parquet(staged / name))


@pytest.mark.parametrize("case", ["made-up-null", "held-out-controls"])
def test_probe_run_with_the_corpus_writes_the_audits_users_parquet_row_for_row(tmp_path, monkeypatch, case):
    """With ``--corpus`` every corpus user gets a row, as in the audit: the two tables are one table
    (all columns), and their records in the summaries agree."""
    single, staged = _run_both(tmp_path, monkeypatch, case, corpus=True, limit=2)
    mine = pd.read_parquet(single / "users.parquet")
    audited = pd.read_parquet(staged.parent / "users.parquet")
    # a row for every corpus user (4), not only the 2 probed: users nobody probed are there too
    assert len(mine) == 4 and (mine["probe_targets"] > 0).sum() == 2
    record = json.loads((single / "summary.json").read_text())["users"]
    audit_record = json.loads((staged.parents[2] / "summary.json").read_text())["models"]["m"]["users"]
    assert {k: v for k, v in record.items() if k != "path"} == {
        k: v for k, v in audit_record.items() if k != "path"
    }
    order = sorted(mine.columns)
    pd.testing.assert_frame_equal(
        mine[order].sort_values("user_id").reset_index(drop=True),
        audited[order].sort_values("user_id").reset_index(drop=True),
    )
