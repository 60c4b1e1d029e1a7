"""CLI: lmleak synth customersim|mail and lmleak corpus check (CliRunner on the root app)."""

from __future__ import annotations

import json
from collections import Counter

from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.synth.mail import synthesize
from lmleak.jsonl import read_jsonl


def test_synth_customersim_writes_the_corpus_and_prints_a_summary(tmp_path):
    r = CliRunner().invoke(
        app,
        [
            "synth",
            "customersim",
            "--users",
            "4",
            "--dialogs-per-user",
            "2",
            "--out",
            str(tmp_path),
            "--canaries",
            "1",
            "--canary-repeats",
            "3",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    # 4 users x 2 dialogues, plus each canary copy as a document of its own
    assert summary["documents"] == 8 + 3 and summary["secrets_per_entity"]["CANARY"] == 3
    r = CliRunner().invoke(app, ["corpus", "check", str(tmp_path / "corpus.jsonl"), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["users"] == 4


def test_synth_customersim_bad_options_exit_2(tmp_path):
    r = CliRunner().invoke(
        app, ["synth", "customersim", "--users", "2", "--canaries", "5", "--out", str(tmp_path)]
    )
    assert r.exit_code == 2 and "canaries" in r.output


def test_synth_mail_writes_the_corpus_and_prints_a_summary(tmp_path):
    res = CliRunner().invoke(app, ["synth", "mail", "--out", str(tmp_path), "--scale", "0.05", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["documents"] == len(read_jsonl(tmp_path / "corpus.jsonl"))
    assert summary["secrets_per_entity"]["EMAIL"] > 0


def test_synth_mail_bad_options_exit_2(tmp_path):
    res = CliRunner().invoke(
        app, ["synth", "mail", "--out", str(tmp_path), "--scale", "0.05", "--canaries", "999"]
    )
    assert res.exit_code == 2 and "canaries" in res.output


def test_synth_mail_summary_counts_what_the_files_hold(tmp_path):
    res = CliRunner().invoke(
        app,
        [
            "synth",
            "mail",
            "--out",
            str(tmp_path),
            "--scale",
            "0.02",
            "--seed",
            "4",
            "--canaries",
            "1",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    docs = read_jsonl(tmp_path / "corpus.jsonl")  # the oracle: recount from the written files
    lines = Counter(ln for d in docs for ln in d["text"].split("\n") if ln.strip())
    assert s["documents"] == len(docs) and s["authors"] == len({d["user_id"] for d in docs})
    assert s["words"] == sum(len(d["text"].split()) for d in docs)
    assert s["duplicate_line_share"] == round(
        sum(c for c in lines.values() if c > 1) / sum(lines.values()), 4
    )
    assert s["secrets_per_entity"] == dict(
        sorted(Counter(r["entity"] for r in read_jsonl(tmp_path / "secrets.jsonl")).items())
    )
    assert s["canaries"] == 1 and s["secrets_per_entity"]["CANARY"] == 1
    table = CliRunner().invoke(
        app, ["synth", "mail", "--out", str(tmp_path / "t"), "--scale", "0.02", "--seed", "4"]
    )
    assert (
        table.exit_code == 0 and "duplicate line share" in table.stdout and "PII spans: EMAIL" in table.stdout
    )


def test_corpus_check_on_synth_mail_reports_and_warns(tmp_path):
    paths = synthesize(tmp_path, scale=0.1)
    res = CliRunner().invoke(app, ["corpus", "check", str(paths["corpus"]), "--json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    for key in ("duplicate_line_share", "top1pct_user_share", "pii_per_1k_words", "warnings"):
        assert key in s
    assert s["duplicate_line_share"] > 0.4 and s["pii_per_1k_words"] > 10
    assert any("repeated" in w for w in s["warnings"])


def test_corpus_check_lists_skipped_rows_in_json_and_text(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [{"user_id": "u1", "text": "hello there"}, {"user_id": "u1"}, {"user_id": "u2", "text": "a b c"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(app, ["corpus", "check", str(path), "--skip-bad-rows", "--json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["documents"] == 2 and s["users"] == 2 and s["docs_per_user_min"] == s["docs_per_user_max"] == 1
    assert s["skipped_rows"] == [{"line": 2, "reason": "text: missing"}]
    text = CliRunner().invoke(app, ["corpus", "check", str(path), "--skip-bad-rows"])
    printed = " ".join(text.stdout.split())  # rich wraps at the terminal width
    assert text.exit_code == 0 and "2 documents from 2 users" in printed
    assert "skipped line 2: text: missing" in printed
    assert CliRunner().invoke(app, ["corpus", "check", str(path)]).exit_code == 2  # without the flag


def test_synth_locales_option_picks_the_names_and_a_bad_locale_exits_2(tmp_path):
    res = CliRunner().invoke(
        app,
        ["synth", "mail", "--out", str(tmp_path / "m"), "--scale", "0.02", "--locales", "en_US", "--json"],
    )
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    subjects = read_jsonl(tmp_path / "m" / "subjects.jsonl")  # the oracle: recount from the written file
    assert s["locales"] == ["en_US"] and {r["locale"] for r in subjects} == {"en_US"}
    assert s["subjects_per_shape"] == {
        k: sum(r["name_shape"] == k for r in subjects) for k in s["subjects_per_shape"]
    }
    res = CliRunner().invoke(
        app,
        ["synth", "customersim", "--out", str(tmp_path / "c"), "--users", "40", "--locales", "ru_RU, ja_JP"],
    )
    assert res.exit_code == 0 and "people: non_latin" in res.stdout, res.output
    assert {r["locale"] for r in read_jsonl(tmp_path / "c" / "subjects.jsonl")} == {"ru_RU", "ja_JP"}
    res = CliRunner().invoke(app, ["synth", "mail", "--out", str(tmp_path / "x"), "--locales", "xx_XX"])
    assert res.exit_code == 2 and "xx_XX" in res.output
