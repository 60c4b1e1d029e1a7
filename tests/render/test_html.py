"""The HTML report's stage tables (read from each stage's summary.json)."""

from __future__ import annotations

import json

from lmleak.render.html import _stage_tables


def _stage(tmp_path, name, summary):
    d = tmp_path / name
    d.mkdir()
    (d / "summary.json").write_text(json.dumps(summary))
    return d


def test_the_extraction_stage_gets_a_table_with_every_metric_and_the_discoverable_fraction(tmp_path):
    # regression: an audit's extract stage showed only the headline count; its per-metric verified
    # samples and the (n, p)-discoverable fraction were in no table of the report
    ext = {
        "num_samples": 50,
        "verified_at_100": {"perplexity": 3, "zlib": 1},
        "extracted": 4,
        "extracted_with_pii": 2,
        "extracted_unique_user": 1,
        "longest_match_tokens": 41,
        "discoverable": {"documents": 30, "n": 100, "p": 0.5, "discoverable_fraction": 0.25},
        "config": {"top_n": 100, "min_match_tokens": 32},
    }
    page = "".join(_stage_tables({"m": {"extract": _stage(tmp_path, "extract", ext)}}))
    assert "Untargeted extraction — m" in page
    for text in (
        'verified in the top 100 by perplexity</td><td class="num">3',
        'verified in the top 100 by zlib</td><td class="num">1',
        'holding PII</td><td class="num">2',
        'n = 100, p = 0.5, 30 documents)</td><td class="num">0.25',
        "at least 32 of its tokens",
    ):
        assert text in page, text
    assert _stage_tables({"m": {}}) == []


def test_the_membership_notes_end_their_sentence_before_the_source(tmp_path):
    mia = {
        "metrics": [
            {
                "level": "individual",
                "feature": "perplexity",
                "num_members": 3,
                "num_non_members": 3,
                "auc": 1.0,
                "accuracy": 1.0,
                "tpr_note": "needs >= 1,000 non-members, have 3",
            }
        ],
        "mia_attack": "perplexity",
        "source": "non-members: 3 documents",
    }
    page = "".join(_stage_tables({"m": {"mia": _stage(tmp_path, "mia", mia)}}))
    assert "have 3. Source: non-members: 3 documents" in page


def test_the_dp_audit_card_states_the_claim_and_the_measurement_as_its_own_sentence():
    from lmleak.render.html import _card_detail

    detail = _card_detail("epsilon_lower_bound", {"dp_epsilon": 6.594, "epsilon_lower_bound": 0.0})
    assert detail == " Claimed ε ≤ 6.59; measured ≥ 0."
    violated = _card_detail("epsilon_lower_bound", {"dp_epsilon": 0.5, "epsilon_lower_bound": 1.2})
    assert violated.endswith("measured ≥ 1.2. The claim is violated.")


def test_the_stages_an_audit_skipped_are_listed_with_model_and_reason(tmp_path):
    from lmleak.render.html import _skipped_table, render_report

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
    assert _skipped_table(summary) is None and _skipped_table({"stage": "report"}) is None
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
