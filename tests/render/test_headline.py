"""render.headline: the headline numbers come from any stage's summary or an audit's, by one name each."""

from __future__ import annotations

from lmleak.render.headline import EXPLANATIONS, HEADLINE_KEYS, collect_headlines, headline_from_summary
from lmleak.runs import write_summary


def test_the_current_key_wins_over_the_old_aliases_and_missing_metrics_are_left_out():
    h = headline_from_summary({"mia_auc": 0.7, "auc": 0.6, "best_accuracy": 0.65, "max_exposure": None})
    assert h == {"mia_auc": 0.7, "mia_accuracy": 0.65}
    # an old summary that only has the alias still gives the headline name
    assert headline_from_summary({"roc_auc": 0.55}) == {"mia_auc": 0.55}


def test_per_k_values_are_kept_for_every_k():
    summary = {
        "unique_sequences": 2,
        "by_k": {"1": {"unique_sequences": 2, "pii_unique_sequences_total": 1}, "3": {"unique_sequences": 9}},
    }
    h = headline_from_summary(summary)
    assert h["by_k"] == {
        "1": {"unique_sequences": 2, "pii_unique_sequences": 1},
        "3": {"unique_sequences": 9},
    }


def test_collect_reads_a_single_stage_or_every_model_of_an_audit(tmp_path):
    write_summary(tmp_path / "stage", {"attack": "membership_inference", "mia_auc": 0.8})
    assert collect_headlines(tmp_path / "stage") == {"run": {"mia_auc": 0.8}}
    write_summary(
        tmp_path / "audit", {"models": {"a": {"headline": {"max_exposure": 3.5}}, "b": {"headline": {}}}}
    )
    assert collect_headlines(tmp_path / "audit") == {"a": {"max_exposure": 3.5}, "b": {}}


def test_every_headline_a_card_can_show_has_an_explanation():
    shown = set(HEADLINE_KEYS) - {"pii_unique_sequences_by_type"}
    assert shown <= set(EXPLANATIONS), sorted(shown - set(EXPLANATIONS))


def test_the_leaked_pii_null_comes_along_per_k_with_its_interval_and_what_it_is_read_against():
    by_k = {
        "1": {"pii_unique_sequences_total": 5, "pii_unique_sequences_members": 4, "null_pii_unique_sequences": 1,
              "null_pii_unique_sequences_ci": [0, 3], "pii_people_members": 2, "pii_people_members_n": 8,
              "pii_people_null": 1, "pii_people_null_n": 4, "pii_people_excess": 0.0,
              "pii_people_excess_ci": [-0.4, 0.3], "null_kind": "held_out"},
        "3": {"pii_unique_sequences_total": 7, "pii_people_excess": None, "null_kind": None,
              "pii_people_excess_reason": "no null", "pii_people_excess_fix": "lmleak train --holdout-users 0.1"},
    }  # fmt: skip
    h = headline_from_summary({"by_k": by_k, **by_k["1"]})
    one, three = h["by_k"]["1"], h["by_k"]["3"]
    assert one["null_pii_unique_sequences"] == 1 and one["null_pii_unique_sequences_ci"] == [0, 3]
    assert one["pii_people_excess_ci"] == [-0.4, 0.3] and one["pii_people_null_n"] == 4
    assert one["null_kind"] == "held_out" and one["pii_unique_sequences_members"] == 4
    assert "pii_people_excess" not in three and three["pii_people_excess_fix"].startswith("lmleak train")
    assert (
        h["pii_people_excess"] == 0.0 and h["null_pii_unique_sequences"] == 1 and h["null_kind"] == "held_out"
    )

    from lmleak.render.cards import card_null

    line = card_null("pii_unique_sequences", h)
    assert "k = 1: trained-on people 4, held-out people 1 [0, 3]" in line
    assert "k = 3: no null" in line and "lmleak train --holdout-users 0.1" in line
