"""The report's tables (lmleak.render.tables)."""

from __future__ import annotations

import json

from lmleak.render.tables import stage_tables


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
    page = "".join(stage_tables({"m": {"extract": _stage(tmp_path, "extract", ext)}}))
    assert "Untargeted extraction — m" in page
    for text in (
        'verified in the top 100 by perplexity</td><td class="num">3',
        'verified in the top 100 by zlib</td><td class="num">1',
        'holding PII</td><td class="num">2',
        'n = 100, p = 0.5, 30 documents)</td><td class="num">0.25',
        "at least 32 of its tokens",
    ):
        assert text in page, text
    assert stage_tables({"m": {}}) == []


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
    page = "".join(stage_tables({"m": {"mia": _stage(tmp_path, "mia", mia)}}))
    assert "have 3. Source: non-members: 3 documents" in page
