"""The attacks CLI end to end on the shipped fake model."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app

runner = CliRunner()


@pytest.fixture()
def files(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"user_id": "u1", "doc_id": f"d{i}", "text": "My ID is: 123"} for i in range(20)]
    rows += [
        {"user_id": "u2", "doc_id": f"m{i}", "text": f"my address is {100 + i} oak street"} for i in range(30)
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    canaries = tmp_path / "canaries.jsonl"
    canaries.write_text(
        json.dumps(
            {"text": "My ID is: 123", "secret": "123", "prefix": "My ID is: ", "user_id": "u1", "repeats": 20}
        )
        + "\n"
        + json.dumps({"text": "My ID is: 456", "secret": "456", "user_id": "u3", "repeats": 0})
        + "\n"
    )
    members = tmp_path / "members.txt"
    members.write_text("".join(f"my address is {100 + i} oak street\n" for i in range(30)))
    non = tmp_path / "non.jsonl"
    non.write_text(
        "".join(json.dumps({"text": f"my address is {500 + i} elm street"}) + "\n" for i in range(30))
    )
    return tmp_path, corpus, canaries, members, non


def test_exposure_writes_one_row_per_canary_and_the_max_exposure(files):
    tmp, corpus, canaries, _, _ = files
    run = tmp / "run"
    r = runner.invoke(
        app,
        ["exposure", "--model", f"fake:{corpus}", "--canaries", str(canaries), "--out", str(run), "--json"],
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    table = pd.read_parquet(run / "exposure.parquet")
    assert list(table["secret"]) == ["123", "456"]
    assert table.loc[0, "rank"] == 1 and table.loc[0, "exposure_bits"] == pytest.approx(9.965784284662087)
    assert summary["max_exposure"] == pytest.approx(table["exposure_bits"].max())
    assert summary["scenario"]["access"] == "scores"
    assert json.loads((run / "summary.json").read_text())["schema_version"] >= 1


def test_exposure_prints_the_placebos_beside_the_maximum(files):
    tmp, corpus, canaries, _, _ = files
    args = ["exposure", "--model", f"fake:{corpus}", "--canaries", str(canaries), "--out", str(tmp / "p")]
    r = runner.invoke(app, [*args, "--placebos", "5"])
    assert r.exit_code == 0, r.output
    summary = json.loads((tmp / "p" / "summary.json").read_text())
    placebo = pd.read_parquet(tmp / "p" / "placebo_exposure.parquet")
    assert summary["num_placebos"] == len(placebo) == 5
    assert not set(placebo["secret"]) & {"123", "456"}
    text = " ".join(r.output.split())
    assert (
        f"placebo: 5 never-inserted secrets of the same formats reach at most {placebo['exposure_bits'].max():.2f} bits"
        in text
    )
    above = summary["canaries_above_placebo_max"]
    assert f"{above} of 2 canaries {'lies' if above == 1 else 'lie'} above" in text  # "1 of 2 ... lies"


def test_a_canary_file_with_a_bad_line_exits_2_with_its_location(files):
    tmp, corpus, _, _, _ = files
    bad = tmp / "bad.jsonl"
    bad.write_text(json.dumps({"prefix": "My ID is: "}) + "\n")
    r = runner.invoke(
        app, ["exposure", "--model", f"fake:{corpus}", "--canaries", str(bad), "--out", str(tmp / "x")]
    )
    assert r.exit_code == 2
    assert "bad.jsonl:1: field 'secret'" in " ".join(r.output.split())


def test_mia_writes_metrics_curves_and_a_plot(files):
    tmp, corpus, _, members, non = files
    run = tmp / "mia"
    r = runner.invoke(
        app,
        [
            "mia",
            "--model",
            f"fake:{corpus}",
            "--members",
            str(members),
            "--non-members",
            str(non),
            "--group-size",
            "5",
            "--out",
            str(run),
            "--quiet",
        ],
    )
    assert r.exit_code == 0, r.output
    metrics = pd.read_parquet(run / "mia_metrics.parquet")
    assert set(metrics["level"]) == {"individual", "group5"}
    assert (run / "roc.png").stat().st_size > 1000
    summary = json.loads((run / "summary.json").read_text())
    assert summary["mia_accuracy"] > 0.9 and summary["num_per_side"] == 30
    assert summary["mia_attack"] == "perplexity" and set(summary["mia_auc_by_attack"]) == {
        "perplexity",
        "zlib",
        "min_k",
    }
    # 30 non-members cannot support TPR at 1% FPR (needs 1,000): not printed, the reason stated
    assert summary["mia_tpr_at_1pct_fpr"] is None and "1,000" in summary["mia_tpr_at_1pct_fpr_note"]
    assert "Membership inference" in r.stdout


def test_mia_rejects_a_bad_min_k(files):
    tmp, corpus, _, members, non = files
    r = runner.invoke(
        app,
        [
            "mia",
            "--model",
            f"fake:{corpus}",
            "--members",
            str(members),
            "--non-members",
            str(non),
            "--min-k",
            "0",
            "--out",
            str(tmp / "m"),
        ],
    )
    assert r.exit_code == 2 and "--min-k" in " ".join(r.output.split())


def test_experiment_list_options_take_several_values_and_reject_unknown_ones():
    from lmleak.cli.attacks import parse_list_options
    from lmleak.errors import ConfigError

    got = parse_list_options(
        ["--gammas", "0", "0.1", "0.2", "--archs", "lstm", "gpt"], {"--gammas", "--archs"}
    )
    assert got == {"--gammas": ["0", "0.1", "0.2"], "--archs": ["lstm", "gpt"]}
    with pytest.raises(ConfigError, match="Did you mean '--gammas'"):
        parse_list_options(["--gamas", "0"], {"--gammas", "--archs"})
    with pytest.raises(ConfigError, match="needs at least one value"):
        parse_list_options(["--archs"], {"--gammas", "--archs"})


def test_experiment_crt_rejects_an_unknown_architecture_before_any_work(tmp_path):
    r = runner.invoke(app, ["experiment", "crt", "--out", str(tmp_path / "x"), "--archs", "rnn"])
    assert r.exit_code == 2 and "unknown architecture 'rnn'" in " ".join(r.output.split())


def test_the_mia_lines_name_each_interval_a_boundary_rule_made():
    from lmleak.render.printouts import membership_lines

    iv = {"level": 0.95, "method": "bootstrap", "n_boot": 100, "n_units": 12, "unit": "user",
          "at_boundary": {"mia_auc_ci": "clopper-pearson: 6 of 6 group pairs"}}  # fmt: skip
    lines = membership_lines({"intervals": iv})
    assert lines[-2] == "  intervals: 95%, bootstrap, 100 replicates over 12 users"
    assert lines[-1].strip().startswith("mia_auc_ci: clopper-pearson: 6 of 6 group pairs (a bootstrap of")
    assert not any("clopper" in x for x in membership_lines({"intervals": {**iv, "at_boundary": {}}}))


# ---------------------------------------------------------------------- issue 33: no silent ignore
def _people(tmp, rows):
    p = tmp / "people.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_mia_non_members_alone_are_people_the_model_never_saw_as_in_the_audit_config(files):
    """`lmleak mia --corpus C --non-members F` without --members: F is used (it was ignored, the
    non-members taken from holdout.json), meaning what the audit config's non_members alone means:
    a corpus of other people, the members being C's users (here all of them: no holdout.json)."""
    from lmleak.audit.nonmembers import membership_sets
    from lmleak.data.loaders import iter_documents

    tmp, corpus, _, _, _ = files
    rows = [{"user_id": f"p{i % 6}", "text": f"my address is {500 + i} elm street"} for i in range(30)]
    people = _people(tmp, rows)
    run = tmp / "mia-people"
    args = ["mia", "--model", f"fake:{corpus}", "--corpus", str(corpus), "--non-members", str(people)]
    r = runner.invoke(app, [*args, "--group-size", "0", "--out", str(run), "--quiet"])
    assert r.exit_code == 0, r.output
    summary = json.loads((run / "summary.json").read_text())
    want = membership_sets(iter_documents(corpus), (), iter_documents(people), never_seen_name=str(people))
    assert summary["source"] == want.source and str(people) in summary["source"]
    assert summary["sets"]["non_members"]["rows"] == 30 == len(want.non_members)
    assert summary["sets"]["members"]["rows"] == len(want.members) == 50


def test_mia_non_members_naming_a_training_user_or_without_a_corpus_or_members_alone_exit_2(files):
    tmp, corpus, _, members, non = files
    base = ["mia", "--model", f"fake:{corpus}"]
    trained = _people(tmp, [{"user_id": "u2", "text": "my address is 9 elm street"}])
    cases = [
        (["--corpus", str(corpus), "--non-members", str(trained)], "is a user the model was trained on (u2)"),
        (["--non-members", str(non)], "--non-members alone names people the model never saw"),
        (["--corpus", str(corpus), "--members", str(members)], "'--members': members alone would be ignored"),
    ]
    for extra, message in cases:
        run = tmp / "never"
        r = runner.invoke(app, [*base, *extra, "--out", str(run)])
        assert r.exit_code == 2, r.output
        assert message in " ".join(r.output.split()) and not run.exists()


def test_mia_samia_runs_against_lmleak_serve_text_tier_with_its_interval_and_cost(tmp_path):
    """`lmleak mia --methods samia` on a text-only API: an AUC with its interval, the placebo and the
    blind baseline, and its cost: ceil(texts / batch) requests of `batch` prompts x `n` samples."""
    from faker import Faker

    from lmleak.models.fake import FakeLM
    from lmleak.serve import serving

    fake = Faker()
    Faker.seed(7)
    texts = [fake.sentence(nb_words=12) for _ in range(24)]
    members, non = tmp_path / "members.txt", tmp_path / "non.txt"
    members.write_text("".join(t + "\n" for t in texts[:12]))
    non.write_text("".join(t + "\n" for t in texts[12:]))
    model = FakeLM.from_texts(texts[:12], alpha=1e-4, name="memorised")
    with serving(model, tier="text", name="memorised") as server:
        spec = f"{server.url}?tier=text&cache=off&batch=5#memorised"
        args = ["mia", "--model", spec, "--members", str(members), "--non-members", str(non)]
        opts = [
            "--methods",
            "samia",
            "--samia-samples",
            "2",
            "--samia-max-new-tokens",
            "4",
            "--group-size",
            "0",
        ]
        r = runner.invoke(app, [*args, *opts, "--out", str(tmp_path / "run"), "--json"])
        refused = runner.invoke(app, [*args, "--out", str(tmp_path / "refused")])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["mia_method"] == "samia" and s["mia_auc"] > 0.8 and s["mia_auc_ci"][0] > 0.5
    assert s["placebo_auc_ci"] is not None and s["blind_auc"] is not None
    assert s["samia_requests"] == -(-24 // 5) and s["samia_cached"] == 0  # 24 texts, 5 prompts a request
    assert s["samia_samples"] == 24 * 2 and s["samia_generated_tokens"] is None  # the server's tokenizer
    assert 0 < s["samia_generated_words"] <= s["samia_max_generated_tokens"] == 24 * 2 * 4
    assert s["scenario"]["access"] == "generation" and s["mia_options"]["samia"]["samples"] == 2
    # the likelihood methods still refuse the text tier, naming what it grants
    said = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "grants only 'generate'" in said and "--methods samia" in said


def test_mia_refuses_a_bad_samia_option_in_one_line(files):
    tmp, corpus, _, members, non = files
    args = ["mia", "--model", f"fake:{corpus}", "--members", str(members), "--non-members", str(non)]
    r = runner.invoke(app, [*args, "--methods", "samia", "--samia-ngram", "3", "--out", str(tmp / "x")])
    assert r.exit_code == 2 and "--samia-ngram" in r.output
