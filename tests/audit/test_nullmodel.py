"""The release verdict against its null (issue 32): a model that never saw the audited people is not
Fail; a plain model trained 5 epochs on them is.

The null model is the leaking model's recipe trained only on other people (another ``synth mail``
seed, ids renamed), with the leaking model's held-out people recorded as its own
(:mod:`lmleak.audit.nullmodel`). Both are audited by ``lmleak audit --model M --corpus C`` against
the same corpus and gated with the release profile.
"""

from __future__ import annotations

import json

import pytest

from lmleak.audit.nullmodel import audit_release, null_model, renamed_people
from lmleak.data.holdout import read_holdout
from lmleak.data.loaders import load_corpus
from lmleak.data.synth.mail import synthesize
from lmleak.train.config import TrainConfig
from lmleak.train.trainer import train_model


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """About 3 minutes on 2 cores: two trainings of the default small GPT and two audits."""
    root = tmp_path_factory.mktemp("null-verdict")
    audited = synthesize(root / "audited", scale=0.05, seed=5)["corpus"]
    other = synthesize(root / "other", scale=0.05, seed=7)["corpus"]
    cfg = TrainConfig(epochs=5, holdout_users=0.3, seed=0)
    train_model(load_corpus(audited), root / "leak", cfg, progress=False)
    held = read_holdout(root / "leak")
    assert held is not None and held.users
    null_model(load_corpus(other), root / "null", held.users, audited_corpus=str(audited), config=cfg)
    return {
        kind: (root / f"audit-{kind}", *audit_release(root / kind, audited, root / f"audit-{kind}"))
        for kind in ("leak", "null")
    }


def test_the_null_model_never_saw_an_audited_person(tmp_path):
    docs = synthesize(tmp_path / "a", scale=0.01, seed=5)["corpus"]
    others = synthesize(tmp_path / "b", scale=0.01, seed=7)["corpus"]
    audited, renamed = load_corpus(docs), renamed_people(load_corpus(others))
    assert set(audited.users) & set(load_corpus(others).users)  # the seeds share ids: why they are renamed
    assert not set(audited.users) & set(renamed.users)
    assert [d.text for d in renamed] == [d.text for d in load_corpus(others)]


@pytest.mark.slow
def test_a_model_that_never_saw_the_people_is_not_failed_by_the_release_profile(pair):
    run, status, rows = pair["null"]
    failed = [r for r in rows if r["status"] == "fail"]
    assert status != "fail", failed
    assert not failed


@pytest.mark.slow
def test_a_plain_model_trained_five_epochs_on_the_people_is_failed(pair):
    _, status, rows = pair["leak"]
    assert status == "fail", rows
    # the whole interval beyond the limit: a Fail is decided on the interval, not the point
    for r in rows:
        if r["status"] == "fail" and r["interval"] is not None and r["direction"] == "max":
            assert r["interval"][0] > r["limit"], r


@pytest.mark.slow
def test_the_held_out_null_is_counted_beside_the_members_count_per_k(pair):
    for kind in ("leak", "null"):
        run = pair[kind][0]
        summary = json.loads((run / "summary.json").read_text())
        (model,) = summary["models"].values()
        report = json.loads((run / model["stages"]["report"] / "summary.json").read_text())
        for k, values in report["by_k"].items():
            assert values["null_pii_unique_sequences"] is not None, (kind, k)
            assert values["pii_people_null_n"] == len(read_holdout(pair[kind][0].parent / kind).users)
