"""lmleak.render.terminal: the terminal's tables read a summary and show its values."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from lmleak.render.terminal import margins_lines, probe_tables, step_table, table


def _text(*shown) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    for s in shown:
        console.print(s)
    return console.export_text()


def test_a_cell_given_as_text_is_never_read_as_markup():
    t = table("spans", ("value",), [(Text("[proj-dev] ann.lee@example.org"),)])
    assert "[proj-dev] ann.lee@example.org" in _text(t)


def test_the_probe_tables_show_members_against_controls_when_the_summary_has_them():
    target = {"subjects": 4, "mean_likelihood": 0.25, "exact_match_rate": 0.5, "gamma": {"<100": 0.75}}
    group = {"subjects": 2, "exact_match_rate": 0.5}
    summary = {"model": "m", "level": "twin", "templates": 1, "targets": {"email": target}}
    assert len(probe_tables(summary)) == 1
    summary["groups"] = {"members": group, "controls": group, "tests": {"exact_match_fisher_p": 0.04}}
    shown = probe_tables(summary)
    text = _text(*shown)
    assert len(shown) == 3 and "(twin, 1 template)" in text and "0.75" in text
    assert "exact match Fisher p = 0.04" in text and "Mann-Whitney p = -" in text


def test_the_margins_say_whether_a_negative_margin_is_within_the_noise():
    res = {
        "ratios": {"A": 10.0, "B": 12.0},
        "margins": [
            {
                "anchor": "A",
                "weakened": "B",
                "margin": -2.0,
                "violation": True,
                "ci_low": -5.0,
                "ci_high": 1.0,
                "significant": False,
            }
        ],  # fmt: skip
        "all_nonnegative": False,
        "significant_violations": 0,
    }
    text = _text(*margins_lines(res, "margins"))
    assert "-2.00% (<0!)" in text and "[-5.00, 1.00] n.s." in text and "within the noise" in text


def test_the_step_table_lists_the_bloom_rates_and_what_was_removed():
    summary = {"corpus": "c.jsonl", "documents": 3, "removed": {"EMAIL": 2}, "bloom": {
        "configured_fp_rate": 1e-6, "estimated_fp_rate": 2e-7}}  # fmt: skip
    text = _text(step_table(summary, "redact", "runs/r"))
    assert "lmleak redact: c.jsonl" in text and "removed: EMAIL" in text and "2e-07" in text
    assert "runs/r" in text


def test_the_release_summary_names_what_did_not_run_and_that_no_limits_are_set():
    from lmleak.render.terminal import release_lines
    from lmleak.render.verdict import Verdict

    summary = {"release": {"models": {"plain": {"not_run": [
        {"analysis": "mia", "reason": "no [held-out] users", "fix": "lmleak train --holdout-users 0.2"}]}}}}  # fmt: skip
    text = _text(*release_lines(summary, Verdict(checks=())))
    assert "Release summary" in text and "plain: verdict no limits set" in text
    assert "not run: mia: no [held-out] users — to run it: lmleak train --holdout-users 0.2" in text
    assert "no limits set: add a `gate:` section" in text


def test_the_training_lines_name_the_held_out_users_gamma_and_the_dp_statement():
    from pathlib import Path
    from types import SimpleNamespace

    from lmleak.render.terminal import train_lines

    privacy = {"tokenizer_source": "public", "gamma_source": "secrets.jsonl", "gamma": 0.05, "gamma_upper95": 0.1,
               "gamma_support": 20, "accountant": "prv", "steps": 40, "sample_rate": 0.01}  # fmt: skip
    history = [{"epoch": 1, "train_loss": 2.5, "val_perplexity": None, "tokens_per_s": 1000.0}]
    result = SimpleNamespace(history=history, val_users=["u1"], train_users=["u2", "u3"], privacy=privacy)
    run = SimpleNamespace(
        result=result, arch="gpt", mode="dp", summary={"reaudit_command": "lmleak audit r.yaml"}
    )
    text = _text(*train_lines(run, Path("runs/m"), "ε = 3 per user"))
    assert "gpt trained (dp) -> runs/m" in text and "2.500" in text and "—" in text
    assert (
        "held out 1 of 3 users" in text
        and "gamma = 0.0500 (secrets.jsonl, 95% upper bound 0.1000 on 20 secrets)" in text
    )
    assert "DP: ε = 3 per user" in text and "prv accountant, 40 private steps, poisson sampling" in text
    assert "lmleak audit r.yaml" in text
    assert not any("DP:" in str(s) for s in train_lines(run, Path("runs/m"), None))
