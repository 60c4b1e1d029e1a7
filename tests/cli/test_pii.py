"""CLI: lmleak pii evaluate|detect, lmleak dedup|redact|split (CliRunner on the root app)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from lmleak.cli.main import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_evaluate_json_and_degraded(synth_corpus):
    p = synth_corpus["paths"]
    r = run(
        "pii", "evaluate", "--corpus", p["corpus"], "--secrets", p["secrets"], "--policy", "regex", "--json"
    )
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["entities"]["PHONE"]["recall"] == 1.0 and res["entities"]["PHONE"]["gamma"] == 0.0
    r = run(
        "pii",
        "evaluate",
        "--corpus",
        p["corpus"],
        "--secrets",
        p["secrets"],
        "--policy",
        "regex",
        "--recall",
        "0.5",
        "--seed",
        "2",
        "--json",
    )
    assert r.exit_code == 0, r.output
    assert 0.35 < json.loads(r.stdout)["entities"]["ALL"]["recall"] < 0.65
    r = run("pii", "evaluate", "--corpus", p["corpus"], "--secrets", p["secrets"], "--policy", "regex")
    assert r.exit_code == 0 and "PHONE" in r.stdout and "ALL" in r.stdout


def test_evaluate_bad_policy_exits_2(synth_corpus):
    p = synth_corpus["paths"]
    r = run("pii", "evaluate", "--corpus", p["corpus"], "--secrets", p["secrets"], "--policy", "regx")
    assert r.exit_code == 2
    assert "Did you mean 'regex'" in r.output


def test_detect_text():
    r = run("pii", "detect", "--text", "mail a.b@example.org", "--policy", "regex", "--json")
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["counts"] == {"EMAIL": 1} and res["spans"][0]["value"] == "a.b@example.org"


def test_dedup_redact_split_write_corpora_and_removed_counts(synth_corpus, tmp_path):
    from lmleak.data.loaders import load_corpus

    p = synth_corpus["paths"]
    r = run("dedup", "--corpus", p["corpus"], "--out", tmp_path / "dd", "--mode", "bloom", "--json")
    assert r.exit_code == 0, r.output
    dd = json.loads((tmp_path / "dd" / "dedup.json").read_text())
    assert dd["removed"]["DUPLICATE"] == dd["masked"] > 0 and dd["bloom"]["configured_fp_rate"] == 1e-6
    r = run(
        "redact",
        "--corpus",
        tmp_path / "dd" / "deduped.jsonl",
        "--out",
        tmp_path / "rd",
        "--policy",
        "regex",
        "-q",
    )
    assert r.exit_code == 0, r.output
    rd = json.loads((tmp_path / "rd" / "redaction.json").read_text())
    assert rd["removed"]["PHONE"] > 0 and "schema_version" in rd
    redacted = load_corpus(tmp_path / "rd" / "redacted.jsonl")
    assert len(redacted) == dd["sentences"]  # chained: sentence ids pass through, no re-split
    r = run(
        "split",
        "--corpus",
        p["corpus"],
        "--out",
        tmp_path / "sp",
        "--policy",
        "regex",
        "--conservative",
        "conservative",
        "--json",
    )
    assert r.exit_code == 0, r.output
    sp = json.loads(r.stdout)
    pub = load_corpus(tmp_path / "sp" / "public.jsonl")
    pri = load_corpus(tmp_path / "sp" / "private.jsonl")
    assert len(pub) == sp["public"] and len(pri) == sp["private"]
    assert sp["removed"]["DUPLICATE"] == sp["dedup"]["masked"]
    assert all("<MASK>" not in d.text for d in pub)


def test_evaluate_by_shape_counts_the_planted_names_of_each_shape(synth_corpus):
    from collections import Counter

    p = synth_corpus["paths"]
    args = ("pii", "evaluate", "--corpus", p["corpus"], "--secrets", p["secrets"], "--policy", "regex")
    r = run(*args, "--by", "shape", "--json")
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    planted = Counter(
        row["name_shape"]
        for row in map(json.loads, p["secrets"].read_text().splitlines())
        if row["entity"] == "PERSON"
    )  # the oracle: the names of each shape the generator wrote
    assert {s: t["PERSON"]["support"] for s, t in res["by_shape"].items()} == dict(planted)
    assert all(
        0.0 <= t["ALL"]["gamma_ci"][0] <= t["ALL"]["gamma"] <= t["ALL"]["gamma_ci"][1]
        for t in res["by_shape"].values()
    )
    assert res["warnings"] == []  # the regex reads names in every shape
    r = run(*args, "--by", "shape")
    assert r.exit_code == 0 and "by name shape" in r.stdout and "non_latin" in r.stdout
    r = run(*args, "--by", "colour")
    assert r.exit_code == 2 and "--by shape" in r.output


def test_detect_prints_a_span_as_text_not_markup():
    """A URL holding '[/b]' crashed the table (Rich read it as a closing tag); the value must print."""
    r = run("pii", "detect", "--text", "see http://x.example.org/a[/b]c today", "--policy", "regex")
    assert r.exit_code == 0, r.output
    assert "http://x.example.org/a[/b]c" in r.output.replace("\n", "")
