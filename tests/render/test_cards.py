"""The report's cards: value, detail, null and interval (lmleak.render.cards)."""

from __future__ import annotations


def test_the_dp_audit_card_states_the_claim_and_the_measurement_as_its_own_sentence():
    from lmleak.render.cards import card_detail

    detail = card_detail("epsilon_lower_bound", {"dp_epsilon": 6.594, "epsilon_lower_bound": 0.0})
    assert detail == " Claimed ε ≤ 6.59; measured ≥ 0."
    violated = card_detail("epsilon_lower_bound", {"dp_epsilon": 0.5, "epsilon_lower_bound": 1.2})
    assert violated.endswith("measured ≥ 1.2. The claim is violated.")


def test_the_cards_show_intervals_members_vs_controls_the_privacy_unit_and_the_gamma_behind_a_bound():
    from lmleak.render.cards import card_detail, card_interval, card_value

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
    assert "Pooled: 0.252" in card_detail("pii_exact_match", h) and "Fisher p = 8e-06" in card_detail(
        "pii_exact_match", h
    )
    assert (
        card_interval("mia_auc", h) == "95% interval [0.641, 0.717]"
        and card_interval("dp_epsilon", h) is None
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
    assert "the largest user, with 17 sequences, is protected at ε = 49.3" in card_detail("dp_epsilon", seq)
    assert "group-privacy" not in card_detail("dp_epsilon", h)  # per person already
    old = {
        "dp_epsilon": 2.9,
        "privacy_unit": "one training sequence (a chunk of one document)",
    }  # before issue 27
    assert card_value("dp_epsilon", old) == "2.9" and "a chunk of one document" in card_detail(
        "dp_epsilon", old
    )
    detail = card_detail("confidentiality_epsilon", h)
    assert (
        "γ = 0.005316 (95% Clopper-Pearson upper bound of gamma (562 secrets))" in detail
        and "0 is assumed" in detail
    )


def test_the_membership_card_names_the_headline_attack_and_how_it_was_chosen():
    from lmleak.render.cards import card_detail

    assert card_detail("mia_auc", {"mia_method": "reference"}) == (
        " Headline attack: reference (every attack: the table under Plots)."
    )
    chosen = card_detail("mia_auc", {"mia_method": "min_k", "headline_selection": "split-half"})
    assert "Headline attack: min_k, chosen by split-half" in chosen


def test_the_cards_show_each_headline_beside_its_null():
    """Issue 26: the placebo beside every attack headline — the quick demo's cards showed AUC 0.6225 and
    19.93 bits with no placebo AUC, blind baseline or never-inserted canaries next to them."""
    from lmleak.render.cards import card_null

    h = {
        "mia_auc": 0.6225,
        "placebo_auc": 0.7724,
        "placebo_auc_ci": [0.6987, 0.8445],
        "blind_auc": 0.6025,
        "blind_auc_ci": [0.4831, 0.7337],
        "max_exposure": 19.93,
        "placebo_max_exposure": 4.351,
    }
    assert card_null("mia_auc", h) == (
        "Placebo (two halves of people it never saw): 0.7724 [0.6987, 0.8445]; "
        "blind text-only baseline: 0.6025 [0.4831, 0.7337] — both should cover 0.5."
    )
    assert card_null("max_exposure", h) == "Placebo (as many canaries never inserted): at most 4.351 bits."
    assert card_null("mia_auc", {"mia_auc": 0.6}) is None and card_null("max_exposure", {}) is None
    controls_only = {"pii_exact_match": 0.0, "pii_exact_match_controls": 0.0}
    assert "held-out control" in (card_null("pii_exact_match", controls_only) or "")
    assert card_null("pii_exact_match", {**controls_only, "pii_exact_match_members": 0.1}) is None


def test_every_report_card_states_its_k_and_people_at_risk_says_it_counts_one_k_only():
    """Issue 32: "People at risk 0" stood beside "Leaked PII 0 · 11" with no note that it counts k = 1."""
    from lmleak.render.cards import LABELS, k_note

    two = {"by_k": {"3": {}, "1": {}}}
    assert k_note("pii_unique_sequences", two) == " Values at k = 1 · 3 (the tab attack's top-k)."
    assert k_note("unique_sequences", {"by_k": {"1": {}}}) == " At k = 1 (the tab attack's top-k)."
    risk = k_note("users_at_risk", two, first_k=1)
    assert risk.startswith(" Leaked PII counted at k = 1 only") and "shows k = 3 too" in risk
    assert k_note("users_at_risk", {"by_k": {"1": {}}}, first_k=None) == (
        " Leaked PII counted at k = 1 only (the leakage report's first k)."
    )
    assert k_note("users_at_risk", {}) == "" and k_note("mia_auc", two) == ""
    assert "first k" in LABELS["users_at_risk"]


def test_the_leaked_pii_card_shows_the_held_out_null_beside_the_count_at_every_k():
    from lmleak.render.cards import card_null

    def k(members, null, ci, excess, excess_ci):
        return {"null_kind": "held_out", "pii_unique_sequences_members": members, "null_pii_unique_sequences": null,
                "null_pii_unique_sequences_ci": ci, "pii_people_excess": excess, "pii_people_excess_ci": excess_ci}  # fmt: skip

    per_k = {"by_k": {"1": k(3, 2, [0, 5], 0.05, [-0.2, 0.3]), "3": k(71, 42, [25, 61], 0.1, [-0.1, 0.35])}}
    assert card_null("pii_unique_sequences", per_k) == (
        "Null: k = 1: trained-on people 3, held-out people 2 [0, 5]; people affected beyond the null +5.0% "
        "[-20.0%, +30.0%]; k = 3: trained-on people 71, held-out people 42 [25, 61]; people affected beyond "
        "the null +10.0% [-10.0%, +35.0%]."
    )
    no_null = {"by_k": {"1": {"null_kind": None, "pii_people_excess_reason": "no held-out people",
                              "pii_people_excess_fix": "lmleak train --holdout-users 0.1"}}}  # fmt: skip
    assert card_null("pii_unique_sequences", no_null) == (
        "Null: k = 1: no null — no held-out people; to get one: lmleak train --holdout-users 0.1."
    )
    assert (
        card_null("pii_unique_sequences", {"pii_unique_sequences": 3}) is None
    )  # a report from before the null


def test_the_html_verdict_card_shows_inconclusive_with_the_power_line(tmp_path):
    import json

    from lmleak.render.html import render_report

    headline = {"mia_auc": 0.55, "mia_auc_ci": [0.4, 0.7], "mia_num_per_side": 40, "mia_method": "perplexity"}
    summary = {
        "models": {"m": {"headline": headline, "stages": {"mia": "x"}}},
        "config": {"gate": {"max_mia_auc": 0.6}},
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    page = render_report(tmp_path).read_text()
    assert '<span class="badge inconclusive" data-status="inconclusive">Inconclusive</span>' in page
    assert '<tr data-status="inconclusive">' in page and "Inconclusive (blocks)" in page
    assert "about 360 texts a side (now 40) would settle it" in page
    assert "--allow-inconclusive" in page
    summary["config"]["gate"]["allow_inconclusive"] = True
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    page = render_report(tmp_path).read_text()
    assert 'data-status="pass">Pass</span>' in page and "Inconclusive (allowed)" in page


def test_a_report_cards_interval_names_its_k_at_every_k():
    from lmleak.render.cards import card_interval

    h = {
        "unique_sequences_ci": [0, 5],  # the first k's, at the top level
        "by_k": {"1": {"unique_sequences_ci": [0, 5]}, "3": {"unique_sequences_ci": [21, 61]}},
    }
    assert card_interval("unique_sequences", h) == "95% intervals: k = 1 [0, 5] · k = 3 [21, 61]"
    one = {"unique_sequences_ci": [0, 5], "by_k": {"1": {"unique_sequences_ci": [0, 5]}}}
    assert card_interval("unique_sequences", one) == "95% interval [0, 5]"  # one k: the card says "At k = 1"
    assert card_interval("unique_sequences", {"by_k": {"1": {}, "3": {}}}) is None
