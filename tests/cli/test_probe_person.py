"""Issue 29 items 6 and 7 on the command line: the subject file's fields in `lmleak probe --help`,
`probe build --out` named as the one file it writes, and `lmleak probe --html` (the person's page)."""

from __future__ import annotations

from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.probe import subjects as subjects_module

#: the fields a probe reads (the reader's own list once it has one, issue 26)
FIELDS = getattr(
    subjects_module,
    "PROBED_FIELDS",
    ("name", "phone", "email", "emails", "address", "relations", "university"),
)


def _probe_args(corpus, me, *, templates: int) -> list[str]:
    """`lmleak probe` for the person ``me`` on the fake model of ``corpus``, beam width 1, quiet."""
    return ["probe", "--model", f"fake:{corpus}", "--subject", str(me), "--templates", str(templates),
            "--beams", "1", "-q"]  # fmt: skip


def _help(*args: str) -> str:
    res = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return " ".join(res.output.replace("│", " ").split())


def test_probe_help_names_every_field_of_the_subject_file_with_an_example():
    text = _help("probe")
    assert "Fields: name (required" in text
    for field in FIELDS:
        assert f" {field}" in text, field
    assert 'Example me.json: {"name": "Ann Lee"' in text and "--html me.html" in text


def test_probe_build_out_says_it_writes_one_subjects_file_not_a_run_directory(tmp_path):
    text = _help("probe", "build")
    assert "The subjects file to write: one file (JSONL" in text and "Run directory" not in text
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"user_id": "u1", "text": "Write to Ann Lee <ann.lee@example.org> today."}\n')
    out = tmp_path / "subjects.jsonl"
    res = CliRunner().invoke(app, ["probe", "build", "--corpus", str(corpus), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    assert out.is_file() and '"ann.lee@example.org"' in out.read_text()  # one file, as the help says


def test_probe_html_writes_the_persons_page_beside_the_same_table(tmp_path):
    import json

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps(
            {
                "user_id": "u1",
                "text": "Please contact Ann Lee by (555) 555-0142 or email address ann@example.org",
            }
        )
        + "\n"
    )
    me = tmp_path / "me.json"
    me.write_text(json.dumps({"name": "Ann Lee", "phone": "(555) 555-0142", "email": "ann@example.org"}))
    args = _probe_args(corpus, me, templates=1)
    page = tmp_path / "out" / "me.html"
    with_page = CliRunner().invoke(app, [*args, "--json", "--html", str(page)])
    assert with_page.exit_code == 0, with_page.output
    without = CliRunner().invoke(app, [*args, "--json"])
    assert json.loads(with_page.stdout) == json.loads(without.stdout)  # the same probe, the same table
    text = page.read_text()
    assert (page.stat().st_mode & 0o777) == 0o600 and "Ann Lee" in text and "ann@example.org" in text
    # a folder for --html is refused before the model loads (fake:missing would fail to load)
    res = CliRunner().invoke(
        app, ["probe", "--model", "fake:missing.jsonl", "--subject", str(me), "--html", str(tmp_path)]
    )
    assert res.exit_code == 2 and "is a folder; give the page's file name" in " ".join(res.output.split())


def test_docs_probing_lists_every_field_and_its_worked_me_json_is_a_valid_subject_file(tmp_path):
    import json
    from pathlib import Path

    from lmleak.probe.subjects import read_subjects

    doc = (Path(__file__).parents[2] / "docs" / "probing.md").read_text()
    for field in (*FIELDS, "user_id", "subject_id"):
        assert f"| `{field}` |" in doc, field
    lines = doc.split("$ cat me.json", 1)[1].splitlines()[1:]
    block = "\n".join(lines[: lines.index("}") + 1])
    me = tmp_path / "me.json"
    me.write_text(block)
    (subject,) = read_subjects(me)
    # the block is generated (make docs: docs/probing.md's example); its person is a whole subject
    written = json.loads(block)
    assert subject["name"] == written["name"] and subject["user_id"] == written["user_id"] == "user-0"
    assert written["relations"] and all(written["relations"].values())
    assert "lmleak -q probe person --model mem --subject me.json --html me.html" in doc


def test_the_terminal_table_says_the_rank_test_in_words_and_prints_no_ratio(tmp_path):
    """`lmleak probe --subject` prints the page's comparison with 19 made-up people, not "Nx more
    likely than another person's value" against one decoy."""
    import json

    from lmleak.models.loading import load_model
    from lmleak.probe.person import person_report

    lines = ["Please contact Ann Lee by (555) 555-0142 or email address ann@example.org"] * 3
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"user_id": "u1", "text": t}) + "\n" for t in lines))
    person = {"name": "Ann Lee", "phone": "(555) 555-0142", "email": "ann@example.org"}
    me = tmp_path / "me.json"
    me.write_text(json.dumps(person))
    args = _probe_args(corpus, me, templates=2)
    res = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.replace("│", " ").split())
    assert "vs 19 made-up people" in text and "rank p =" in text
    assert "one or more of these 2 at most 10% of the time (union bound)" in text
    assert "more likely than another person" not in text and not any(
        c + "x more" in text for c in "0123456789"
    )
    # every rank in words is the page's, for the same inputs
    report = person_report(load_model(f"fake:{corpus}"), person, templates=2, beams=1)
    for f in report.findings:
        assert f"p = {f.rank_p:.2g}" in text
    as_json = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert [i["rank_p"] for i in as_json["items"]] == [f.rank_p for f in report.findings]
    assert as_json["made_up"] == 19 and as_json["any_false_alarm_at_most"] == report.any_false_alarm_at_most
