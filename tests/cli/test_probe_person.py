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
