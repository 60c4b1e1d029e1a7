"""Probing, exposure and membership scoring run in resumable shards (issue 9): an interrupted pass
resumes without redoing complete shards and ends with the results of an uninterrupted run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from lmleak.shards import run_rows


class Boom(RuntimeError):
    pass


def test_run_rows_resumes_after_an_interruption_and_redoes_nothing_complete(tmp_path):
    items = list(range(10))
    calls: list[int] = []

    def work(chunk, fail_at=None):
        calls.append(chunk[0])
        if chunk[0] == fail_at:
            raise Boom
        return [{"x": i, "sq": i * i, "maybe": None if i < 5 else float(i)} for i in chunk]

    with pytest.raises(Boom):
        run_rows(items, lambda c: work(c, fail_at=6), tmp_path / "p", fingerprint="f", shard_size=3)
    assert calls == [0, 3, 6]
    calls.clear()
    rows = run_rows(items, work, tmp_path / "p", fingerprint="f", shard_size=3)
    assert calls == [6, 9]  # shards 0 and 3 were complete
    assert rows == [{"x": i, "sq": i * i, "maybe": None if i < 5 else float(i)} for i in items]
    calls.clear()
    assert run_rows(items, work, tmp_path / "p", fingerprint="f", shard_size=3) == rows and calls == []
    # other settings: the stale pass is replaced, not mixed in
    assert [
        r["x"] for r in run_rows(items[:4], work, tmp_path / "p", fingerprint="g", shard_size=3)
    ] == items[:4]


def _fail_on_call(monkeypatch, module, name, n):
    """Make ``module.name`` raise on its n-th call (1-based) and work otherwise."""
    original = getattr(module, name)
    count = {"n": 0}

    def wrapper(*a, **k):
        count["n"] += 1
        if count["n"] == n:
            raise Boom
        return original(*a, **k)

    monkeypatch.setattr(module, name, wrapper)
    return count


def test_membership_scoring_resumes(tmp_path, monkeypatch):
    from lmleak.attacks import membership
    from lmleak.models.fake import FakeLM

    lm = FakeLM.from_texts([f"member text number {i} about cats" for i in range(30)], order=3)
    mem = [f"member text number {i} about cats" for i in range(30)]
    non = [f"other words {i} on dogs and birds" for i in range(30)]
    sizes = membership.MembershipSettings(num_per_side=30, group_size=5)
    want = membership.evaluate_membership(lm, mem, non, sizes)
    count = _fail_on_call(monkeypatch, membership, "text_scores", 3)
    monkeypatch.setattr(membership, "SHARD_SIZE", 8)
    with pytest.raises(Boom):
        membership.evaluate_membership(lm, mem, non, sizes, work_dir=tmp_path / "w")
    monkeypatch.undo()
    monkeypatch.setattr(membership, "SHARD_SIZE", 8)
    got = membership.evaluate_membership(lm, mem, non, sizes, work_dir=tmp_path / "w")
    assert count["n"] == 3
    pd.testing.assert_frame_equal(got.scores, want.scores, check_exact=False, rtol=1e-9)
    pd.testing.assert_frame_equal(got.metrics, want.metrics, check_exact=False, rtol=1e-9)


def test_probing_resumes(tmp_path, monkeypatch):
    from lmleak.data.synth.customersim import synthesize
    from lmleak.models.fake import FakeLM
    from lmleak.probe import blackbox, probing
    from lmleak.probe.settings import ProbeSettings
    from lmleak.probe.subjects import read_subjects

    paths = synthesize(tmp_path / "syn", users=6, dialogs_per_user=2, seed=0)
    lm = FakeLM.from_texts([json.loads(x)["text"] for x in paths["corpus"].read_text().splitlines()], order=3)
    subjects = read_subjects(paths["subjects"])
    opts = ProbeSettings(targets=("phone", "email"), templates=2, beams=1, figures=False)
    whole = probing.run_probe(lm, subjects, tmp_path / "whole", opts)
    # interrupt at the e-mail generation pass (each shard of generate_probes is one call of itself; 12
    # probes per type make one shard each), after the phone passes and the e-mail likelihoods finished
    original = blackbox.generate_probes
    calls = {"n": 0}

    def flaky(model, probes, *a, **k):
        if k.get("work_dir") is None:
            calls["n"] += 1
            if calls["n"] == 2:
                raise Boom
        return original(model, probes, *a, **k)

    monkeypatch.setattr(blackbox, "generate_probes", flaky)
    monkeypatch.setattr(probing, "generate_probes", flaky)
    with pytest.raises(Boom):
        probing.run_probe(lm, subjects, tmp_path / "resumed", opts)
    monkeypatch.undo()
    passes = tmp_path / "resumed" / "passes"
    assert json.loads((passes / "generate-phone" / "manifest.json").read_text())["complete"]
    assert json.loads((passes / "likelihood-email" / "manifest.json").read_text())["complete"]
    unfinished = passes / "generate-email" / "manifest.json"
    assert not unfinished.exists() or not json.loads(unfinished.read_text())["complete"]
    resumed = probing.run_probe(lm, subjects, tmp_path / "resumed", opts)
    assert resumed["targets"] == whole["targets"]
    for name in ("likelihoods.parquet", "generations.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "resumed" / name), pd.read_parquet(tmp_path / "whole" / name)
        )


def test_exposure_ranks_resume(tmp_path, monkeypatch):
    import importlib

    from lmleak.models.fake import FakeLM

    exposure = importlib.import_module(
        "lmleak.attacks.exposure"
    )  # the package also exports a function of that name

    lm = FakeLM.from_texts(
        ["My ID is: 123456"] * 20 + ["My ID is: 777777"] * 3 + ["My ID is: 120000"], order=4
    )
    canaries = [
        {"prefix": "My ID is: ", "secret": s, "repeats": 1, "user_id": f"u{i}"}
        for i, s in enumerate(["123456", "777777", "000001", "120000", "555555"])
    ]
    want = exposure.measure_exposure(lm, canaries)
    count = _fail_on_call(monkeypatch, exposure, "exact_ranks", 2)
    with pytest.raises(Boom):
        exposure.measure_exposure(lm, canaries, work_dir=tmp_path / "w", shard_size=2)
    monkeypatch.undo()
    got = exposure.measure_exposure(lm, canaries, work_dir=tmp_path / "w", shard_size=2)
    assert count["n"] == 2
    assert [g.rank for g in got] == [w.rank for w in want] and want[0].rank == 1
    assert np.allclose([g.logppl for g in got], [w.logppl for w in want])


def test_exposure_shards_fill_by_decreasing_cost_and_rank_as_one_search(tmp_path, monkeypatch):
    import importlib

    from lmleak.models.fake import FakeLM

    exposure = importlib.import_module("lmleak.attacks.exposure")
    lm = FakeLM.from_texts(
        ["My ID is: 123456"] * 20 + ["My ID is: 777777"] * 3 + ["My ID is: 120000"], order=4
    )
    # memorised and unmemorised canaries interleaved: shards in input order would each hold a costly one
    secrets = ["123456", "000001", "777777", "555555", "120000", "909090"]
    canaries = [{"prefix": "My ID is: ", "secret": s} for s in secrets]
    want = exposure.measure_exposure(lm, canaries)
    chunks: list[list[str]] = []
    real = exposure.exact_ranks
    monkeypatch.setattr(
        exposure,
        "exact_ranks",
        lambda m, sp, chunk, **kw: (chunks.append(list(chunk)), real(m, sp, chunk, **kw))[1],
    )
    got = exposure.measure_exposure(lm, canaries, work_dir=tmp_path / "w", shard_size=2)
    fmt = exposure.CanaryFormat.infer("My ID is: ", "123456", None)
    cost = dict(zip(secrets, exposure.string_costs(lm, fmt, secrets), strict=True))
    walked = [cost[s] for chunk in chunks for s in chunk]
    assert len(chunks) == 3 and walked == sorted(walked, reverse=True)
    assert [g.rank for g in got] == [w.rank for w in want]
