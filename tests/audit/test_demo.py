"""The demo's training summary: perplexity, ε, measured γ, D_pub share, tokenizer, PPL ordering."""

from __future__ import annotations

import json

from lmleak.audit.demo import training_lines


def _model(root, name, ppl, privacy=None):
    d = root / name
    d.mkdir()
    (d / "train.json").write_text(json.dumps({"final": {"val_perplexity": ppl}}))
    if privacy is not None:
        (d / "privacy.json").write_text(json.dumps(privacy))


def test_the_demo_prints_measured_gamma_public_share_tokenizer_and_the_ppl_ordering(tmp_path):
    _model(tmp_path, "plain", 12.0, {"tokenizer_source": "public"})
    _model(tmp_path, "dp-sgd", 40.0, {"epsilon": 2.5, "privacy_unit": "user", "tokenizer_source": "public"})
    _model(
        tmp_path,
        "crt",
        55.0,
        {
            "epsilon": 2.5,
            "gamma": 0.014,
            "gamma_source": "measured",
            "gamma_upper95": 0.03,
            "tokenizer_source": "public",
            "split": {"public_sentence_share": 0.023, "public_word_share": 0.041},
        },
    )
    lines = training_lines(tmp_path, ["plain", "dp-sgd", "crt"])
    crt = next(line for line in lines if line.startswith("crt:"))
    assert "γ 0.014 (measured, 95% upper 0.030)" in crt and "D_pub 2.3% of sentences / 4.1% of words" in crt
    assert "tokenizer public" in crt and "ε 2.50" in crt
    assert "ε 2.50 per person" in next(line for line in lines if line.startswith("dp-sgd:"))
    assert lines[-1].startswith("validation PPL No-DP ≤ CRT ≤ DP-SGD does not hold")  # 55 > 40


def test_the_ordering_line_says_it_holds_when_crt_sits_between(tmp_path):
    for name, ppl in (("plain", 12.0), ("crt", 20.0), ("dp-sgd", 40.0)):
        _model(tmp_path, name, ppl, {})
    assert (
        training_lines(tmp_path, ["plain", "dp-sgd", "crt"])[-1]
        == "validation PPL No-DP ≤ CRT ≤ DP-SGD holds"
    )


def test_run_demo_trains_three_models_and_a_public_one_then_audits_them_with_one_config(
    tmp_path, monkeypatch
):
    """The demo's steps without training (train_model and run_audit replaced): the data it writes, the
    models it asks for, and the audit config it writes and runs."""
    import yaml

    from lmleak.audit import demo

    trained: list[tuple[str, str, int]] = []
    units: list[str | None] = []

    def fake_train(corpus, out, cfg, val_corpus=None):
        out.mkdir(parents=True, exist_ok=True)
        (out / "train.json").write_text(json.dumps({"final": {"val_perplexity": 10.0}}))
        trained.append((out.name, cfg.mode, len(list(corpus))))
        units.append(cfg.privacy_unit)

    audited = []

    def fake_audit(cfg, echo=None):
        audited.append(cfg)
        run = tmp_path / "demo" / "audit"
        run.mkdir(parents=True, exist_ok=True)
        (run / "summary.json").write_text("{}")
        return run

    monkeypatch.setattr(demo, "train_model", fake_train)
    monkeypatch.setattr(demo, "run_audit", fake_audit)
    lines: list[str] = []
    run = demo.run_demo(tmp_path / "demo", quick=True, echo=lines.append)
    root = tmp_path / "demo"
    assert run == root / "audit"
    assert [(n, m) for n, m, _ in trained] == [
        ("plain", "nodp"),
        ("dp-sgd", "dp"),
        ("crt", "crt"),
        ("public", "nodp"),
    ]
    assert units == [None, "user", "user", None]  # the DP and CRT models protect each person
    cfg = yaml.safe_load((root / "audit.yaml").read_text())
    assert [m["name"] for m in cfg["models"]] == ["plain", "dp-sgd", "crt"]
    assert cfg["public_model"] == "models/public" and cfg["analyses"]["report"]["k"] == [1, 3]
    assert cfg["analyses"]["probe"]["templates"] == 2 and "max_candidates" not in cfg["analyses"]["exposure"]
    (parsed,) = audited
    assert parsed.public_model == "models/public" and [m.name for m in parsed.models] == [
        "plain",
        "dp-sgd",
        "crt",
    ]
    members = (root / "data" / "members.jsonl").read_text().splitlines()
    non_members = (root / "data" / "non_members.jsonl").read_text().splitlines()
    assert members and non_members and all("@" in json.loads(x)["text"] for x in members + non_members)
    assert not set(members) & set(non_members)
    assert (
        len((root / "data" / "probe_subjects.jsonl").read_text().splitlines())
        == demo.SIZES["quick"].probe_subjects
    )
    assert lines[0].startswith("[bold]1/4[/]") and lines[-1].startswith("[bold]4/4[/] done")
    # a rerun reuses every trained model
    trained.clear()
    demo.run_demo(tmp_path / "demo", quick=True, echo=lines.append)
    assert trained == []


def test_the_cpu_base_audit_config_estimates_exposure_and_probes_lightly():
    from lmleak.audit.demo import _audit_config

    cpu = _audit_config(["plain"], "base", "smollm2-135m", gpu=False)
    assert cpu["analyses"]["report"]["k"] == [1]
    assert cpu["analyses"]["exposure"] == {
        "canaries": "data/canaries.jsonl",
        "max_candidates": 0,
        "sample_size": 200,
    }
    assert cpu["analyses"]["probe"]["templates"] == 1 and cpu["analyses"]["probe"]["beams"] == 1
    gpu = _audit_config(["plain"], "base", "smollm2-135m", gpu=True)
    assert gpu["analyses"]["report"]["k"] == [1, 3] and gpu["analyses"]["probe"]["beams"] == 2


def test_demo_times_run_demo_and_reads_the_headlines_of_its_run(tmp_path, monkeypatch):
    from lmleak.audit import demo
    from lmleak.render.headline import collect_headlines

    run = tmp_path / "demo" / "audit"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"models": {"plain": {"headline": {"mia_auc": 0.7}}}}))
    seen = {}

    def fake_run_demo(out_dir, **kw):
        seen.update(kw, out_dir=out_dir)
        return run

    monkeypatch.setattr(demo, "run_demo", fake_run_demo)
    res = demo.demo(tmp_path / "demo", quick=True, seed=2)
    assert seen == {"out_dir": tmp_path / "demo", "quick": True, "seed": 2}
    assert res.run == run and res.report == run / "report.html" and res.seconds >= 0
    assert res.headlines == collect_headlines(run) and res.headlines["plain"]["mia_auc"] == 0.7
    assert res.to_dict() == {"run": str(run), "report": str(run / "report.html"), "seconds": res.seconds,
                             "headlines": res.headlines}  # fmt: skip
