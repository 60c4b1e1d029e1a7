"""The HTML report: render_report and render_run write one page from a run (cards, tables and plots have their own tests)."""

from __future__ import annotations

import json


def test_the_stages_an_audit_skipped_are_listed_with_model_and_reason(tmp_path):
    from lmleak.render.html import render_report
    from lmleak.render.tables import skipped_table

    why = "canary exposure needs 'score' access, but model 'api' grants only 'generate'"
    summary = {
        "title": "audit",
        "models": {
            "local": {"headline": {}, "stages": {}, "skipped": {}},
            "api": {"headline": {}, "stages": {}, "skipped": {"exposure": why, "report": "needs <top_k>"}},
        },
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    page = render_report(tmp_path).read_text()
    assert '<h2 id="skipped">Skipped stages</h2>' in page
    rows = [
        "<tr><td>exposure</td><td>api</td><td>canary exposure needs &#x27;score&#x27; access, but model "
        "&#x27;api&#x27; grants only &#x27;generate&#x27;</td></tr>",
        "<tr><td>report</td><td>api</td><td>needs &lt;top_k&gt;</td></tr>",  # reasons are escaped
    ]
    for row in rows:
        assert row in page, row
    # each model's headline says which of its stages were skipped and links to the reasons
    assert 'Skipped for this model: exposure, report (<a href="#skipped">why</a>)' in page
    assert page.count("Skipped for this model:") == 1  # local skipped nothing
    table = page[page.index('id="skipped-table"') :].split("</table>")[0]
    assert table.count("<tr>") == 3 and "<td>local</td>" not in table  # head + 2; local skipped nothing
    # nothing skipped (or a single stage's run, which has no models): no section at all
    summary["models"]["api"]["skipped"] = {}
    assert skipped_table(summary) is None and skipped_table({"stage": "report"}) is None
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    assert 'id="skipped"' not in render_report(tmp_path).read_text()


def test_render_run_refuses_an_incomplete_run_and_else_writes_the_page_of_render_report(tmp_path):
    import pytest

    from lmleak.errors import RunError
    from lmleak.render.html import render_report, render_run
    from lmleak.runs import INCOMPLETE

    (tmp_path / "summary.json").write_text(json.dumps({"title": "audit", "models": {}}))
    path = render_run(tmp_path, tmp_path / "a.html")
    assert path == tmp_path / "a.html"
    assert path.read_text() == render_report(tmp_path, tmp_path / "b.html").read_text()
    (tmp_path / INCOMPLETE).write_text("{}")
    with pytest.raises(RunError):
        render_run(tmp_path, tmp_path / "c.html")
    assert not (tmp_path / "c.html").exists()


def test_the_redaction_banner_names_the_command_and_the_config_key_that_show_the_text(tmp_path):
    """It said 'Render with show_text', which is neither an option (--show-text) nor a config key
    (render: {show_text: true})."""
    import json as _json

    from lmleak.render.html import render_report

    (tmp_path / "summary.json").write_text(
        _json.dumps({"models": {"m": {"headline": {"unique_sequences": 1}}}})
    )
    page = render_report(tmp_path).read_text(encoding="utf-8")
    assert "<code>lmleak render RUN --show-text</code>" in page and "render: {show_text: true}" in page
