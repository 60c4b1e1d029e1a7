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


def test_the_cards_show_intervals_members_vs_controls_the_privacy_unit_and_the_gamma_behind_a_bound():
    from lmleak.render.html import _card_detail, _card_interval, card_value

    h = {
        "pii_exact_match": 0.252,
        "pii_exact_match_members": 0.281,
        "pii_exact_match_members_n": 320,
        "pii_exact_match_controls": 0.0,
        "pii_exact_match_controls_n": 44,
        "pii_exact_match_fisher_p": 8e-6,
        "mia_auc": 0.679,
        "mia_auc_ci": [0.641, 0.717],
        "dp_epsilon": 2.9,
        "privacy_unit": "user",
        "confidentiality_epsilon": 0.81,
        "confidentiality_gamma": 0.005316,
        "confidentiality_gamma_basis": "95% Clopper-Pearson upper bound of gamma (562 secrets)",
        "confidentiality_delta2_assumed": True,
    }
    assert card_value("pii_exact_match", h) == "members 28.1% · controls 0.0%"  # not the pooled 25.2 %
    assert "Pooled: 0.252" in _card_detail("pii_exact_match", h) and "Fisher p = 8e-06" in _card_detail(
        "pii_exact_match", h
    )
    assert (
        _card_interval("mia_auc", h) == "95% interval [0.641, 0.717]"
        and _card_interval("dp_epsilon", h) is None
    )
    assert card_value("dp_epsilon", h) == "2.9 per person"
    assert card_value("dp_epsilon", {**h, "privacy_unit": "sequence"}) == "2.9 per sequence"
    assert card_value("dp_epsilon", {"dp_epsilon": 2.9}) == "2.9"  # no unit recorded: the number alone
    # a sequence-level model: the card says what it gives its largest user, by group privacy (k·ε)
    seq = {
        **h,
        "privacy_unit": "sequence",
        "largest_user_sequences": 17,
        "group_privacy_epsilon_largest_user": 17 * 2.9,
    }
    assert "the largest user, with 17 sequences, is protected at ε = 49.3" in _card_detail("dp_epsilon", seq)
    assert "group-privacy" not in _card_detail("dp_epsilon", h)  # per person already
    old = {
        "dp_epsilon": 2.9,
        "privacy_unit": "one training sequence (a chunk of one document)",
    }  # before issue 27
    assert card_value("dp_epsilon", old) == "2.9" and "a chunk of one document" in _card_detail(
        "dp_epsilon", old
    )
    detail = _card_detail("confidentiality_epsilon", h)
    assert (
        "γ = 0.005316 (95% Clopper-Pearson upper bound of gamma (562 secrets))" in detail
        and "0 is assumed" in detail
    )


def test_a_flat_gamma_curve_is_one_sentence_not_a_plot(tmp_path):
    import pandas as pd

    from lmleak.render.html import _probe_plots

    write = tmp_path / "gamma_curve.parquet"
    pd.DataFrame({"target_type": ["email"] * 3, "k": [1, 10, 100], "gamma": [0.0, 0.0, 0.0]}).to_parquet(
        write
    )
    (flat,) = _probe_plots("m", tmp_path)
    assert flat.startswith('<p class="muted empty-plot">') and "γ&lt;k = 0 at all 3 points" in flat
    pd.DataFrame({"target_type": ["email"] * 3, "k": [1, 10, 100], "gamma": [0.0, 0.1, 0.3]}).to_parquet(
        write
    )
    (curve,) = _probe_plots("m", tmp_path)
    assert "plotly" in curve and "empty-plot" not in curve


def test_the_membership_card_names_the_headline_attack_and_how_it_was_chosen():
    from lmleak.render.html import _card_detail

    assert _card_detail("mia_auc", {"mia_method": "reference"}) == (
        " Headline attack: reference (every attack: the table under Plots)."
    )
    chosen = _card_detail("mia_auc", {"mia_method": "min_k", "headline_selection": "split-half"})
    assert "Headline attack: min_k, chosen by split-half" in chosen


def test_the_cards_show_each_headline_beside_its_null():
    """Issue 26: the placebo beside every attack headline — the quick demo's cards showed AUC 0.6225 and
    19.93 bits with no placebo AUC, blind baseline or never-inserted canaries next to them."""
    from lmleak.render.html import _card_null

    h = {
        "mia_auc": 0.6225,
        "placebo_auc": 0.7724,
        "placebo_auc_ci": [0.6987, 0.8445],
        "blind_auc": 0.6025,
        "blind_auc_ci": [0.4831, 0.7337],
        "max_exposure": 19.93,
        "placebo_max_exposure": 4.351,
    }
    assert _card_null("mia_auc", h) == (
        "Placebo (two halves of people it never saw): 0.7724 [0.6987, 0.8445]; "
        "blind text-only baseline: 0.6025 [0.4831, 0.7337] — both should cover 0.5."
    )
    assert _card_null("max_exposure", h) == "Placebo (as many canaries never inserted): at most 4.351 bits."
    assert _card_null("mia_auc", {"mia_auc": 0.6}) is None and _card_null("max_exposure", {}) is None
    controls_only = {"pii_exact_match": 0.0, "pii_exact_match_controls": 0.0}
    assert "held-out control" in (_card_null("pii_exact_match", controls_only) or "")
    assert _card_null("pii_exact_match", {**controls_only, "pii_exact_match_members": 0.1}) is None


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
