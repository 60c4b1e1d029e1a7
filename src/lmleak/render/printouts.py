"""What the single-analysis commands print: tables and lines read from a run's summary (issue 34);
the tables they build come from :mod:`lmleak.render.terminal`.

Each function reads a summary (or a table a study returned) and prints it on ``console`` (the CLI's
standard output); it measures nothing. ``lmleak exposure``, ``mia``, ``experiment crt``, ``report``
and its studies, ``extract`` and ``dp-audit`` print through them, so the commands stay parse, call,
print.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmleak.render.headline import texts_a_side
from lmleak.render.terminal import fmt, table
from lmleak.words import plural

if TYPE_CHECKING:
    from rich.console import Console


def print_exposure(
    console: Console, summary: dict[str, Any], results: list[Any], name: str, out_dir: Path
) -> None:
    """One table row per canary (rank, exposure, exact or extrapolated), then the maximum."""
    rows = [
        (r.secret, r.repeats or "", "" if r.rank is None else r.rank, f"{r.exposure_bits:.2f}", r.method)
        for r in results
    ]
    t = table(f"Canary exposure — {name}", ("secret", "repeats", "rank", "exposure (bits)", "method"), rows)
    console.print(t)
    print_max_exposure(console, summary, out_dir)


def print_max_exposure(console: Console, summary: dict[str, Any], out_dir: Path) -> None:
    console.print(
        f"max exposure {summary['max_exposure']:.2f} of {summary['max_possible_exposure']:.2f} bits -> {out_dir}"
    )
    if summary.get("placebo_max_exposure") is not None:  # the null the maximum is read against
        console.print(
            f"placebo: {plural(summary['num_placebos'], 'never-inserted secret')} of the same formats reach at most "
            f"{summary['placebo_max_exposure']:.2f} bits (median {summary['placebo_exposure_percentiles']['p50']:.2f}); "
            f"{summary['canaries_above_placebo_max']} of {plural(summary['num_canaries'], 'canary', 'canaries')} "
            f"{'lies' if summary['canaries_above_placebo_max'] == 1 else 'lie'} above"
        )


def ci_text(value: Any, ci: Any) -> str:
    """``0.812 [0.744, 0.871]``, or ``-`` without a value."""
    if value is None:
        return "-"
    return f"{value:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def print_membership(console: Console, summary: dict[str, Any], out_dir: Path) -> None:
    """One table row per (level, attack) with its 95 % interval and the headline marked, the blind
    baseline, then the honest headline, the placebo, the sets' counts, notes and warnings."""
    from rich.table import Table

    name = summary.get("model") or "a redacted run's model"
    t = Table(title=f"Membership inference — {name} ({texts_a_side(summary)} per side)")
    for col in ("level", "attack", "accuracy", "AUC [95% CI]", "TPR@1%FPR", "TPR@0.1%FPR"):
        t.add_column(col)
    notes = set()
    for r in summary["metrics"]:
        cells = []
        for key in ("tpr_at_1pct_fpr", "tpr_at_0.1pct_fpr"):
            cells.append(ci_text(r[key], r.get(f"{key}_ci")))
            if r.get(f"{key}_note"):
                notes.add(f"TPR at {'1' if key == 'tpr_at_1pct_fpr' else '0.1'}% FPR: {r[key + '_note']}")
        headline = r["level"] == "individual" and r["feature"] == summary["mia_attack"]
        t.add_row(
            r["level"],
            r["feature"] + (" (headline)" if headline else ""),
            "-" if r["accuracy"] is None else f"{r['accuracy']:.3f}",
            ci_text(r["auc"], r.get("auc_ci")),
            *cells,
        )
    if summary.get("blind_baseline_auc") is not None:
        t.add_row(
            "individual",
            "blind baseline (text only, no model)",
            "-",
            ci_text(summary["blind_baseline_auc"], summary.get("blind_auc_ci")),
            "-",
            "-",
        )
    console.print(t)
    for line in membership_lines(summary):
        console.print(line)
    for n in sorted(notes):
        console.print(f"  not reported: {n}")
    for key in ("placebo_warning", "blind_baseline_warning"):
        if summary.get(key):
            console.print(f"[bold yellow]warning:[/] {summary[key]}")
    console.print(f"-> {out_dir}")


def membership_lines(summary: dict[str, Any]) -> list[str]:
    """The headline and how it was chosen, the best raw AUC, the placebo, the sets, the intervals."""
    lines = []
    if "headline_selection" in summary:
        lines.append(
            f"headline: {summary['mia_method']} AUC {ci_text(summary['mia_auc'], summary.get('mia_auc_ci'))} "
            f"({summary['headline_selection']}: {summary.get('mia_headline_note')})"
        )
        if summary.get("mia_best_raw_method") is not None:
            lines.append(
                f"best raw: {summary['mia_best_raw_method']} AUC "
                f"{ci_text(summary['mia_best_raw_auc'], summary.get('mia_best_raw_auc_ci'))} "
                "(every text; selected after the fact, optimistic)"
            )
    if "placebo_auc" in summary:
        lines.append(
            f"placebo: AUC {ci_text(summary['placebo_auc'], summary.get('placebo_auc_ci'))} "
            f"({summary.get('placebo_note')})"
        )
    sets = summary.get("sets") or {}
    for side in ("members", "non_members"):
        c = sets.get(side)
        if c:
            lines.append(
                f"{side.replace('_', '-')}: {plural(c['rows'], 'row')}, {c['distinct']} distinct, "
                f"{plural(c['near_duplicates'], 'near-duplicate')}, {c['removed_overlap']} on both sides removed "
                f"-> {c['kept']} kept, {c.get('used')} used in {plural(c.get('groups'), 'group')}"
            )
    if sets.get("grouping_note"):
        lines.append(f"groups ({sets.get('grouping')}): {sets['grouping_note']}")
    if summary.get("mia_excluded_note"):
        lines.append(summary["mia_excluded_note"])
    iv = summary.get("intervals")
    if iv:
        lines.append(
            f"intervals: {iv['level']:.0%}, {iv['method']}, {plural(iv.get('n_boot'), 'replicate')} over "
            f"{plural(iv['n_units'], iv['unit'])}"
        )
        for key, rule in (iv.get("at_boundary") or {}).items():  # where the bootstrap was a point
            lines.append(f"  {key}: {rule} (a bootstrap of a sample without variation is a point)")
    return ["  " + x for x in lines]


def print_crt(console: Console, result: dict[str, Any], out_dir: Path) -> None:
    """The CRT experiment's table, each CRT run's public share, and the PPL ordering verdicts."""
    runs = result["table"]
    cols = ("arch", "method", "gamma", "ppl", "acc_top1", "epsilon", "bayes_epsilon", "max_exposure",
            "mia_accuracy", "group_mia_accuracy")  # fmt: skip
    rows = ([f"{r[c]:.3g}" if isinstance(r[c], float) else r[c] for c in cols] for _, r in runs.iterrows())
    t = table("CRT experiment (paper 002 §5)", cols, rows)
    console.print(t)
    for _, r in runs[runs["method"] == "crt"].drop_duplicates("gamma").iterrows():
        mg = r.get("measured_gamma")
        console.print(
            f"CRT γ={r['gamma']:g}: measured γ {'n/a' if mg is None or mg != mg else f'{mg:.3f}'}, "
            f"D_pub {r['public_sentence_share']:.1%} of sentences / {r['public_word_share']:.1%} of words, "
            f"tokenizer {r['tokenizer_source']}"
        )
    for arch, rec in result["summary"]["ppl_ordering"].items():
        for suffix, what in (("", "validation PPL"), ("_redacted", "PPL with PII masked")):
            if rec.get(f"holds{suffix}") is None:
                continue
            verdict = (
                "holds"
                if rec[f"holds{suffix}"]
                else "does not hold" + (f": {rec['reason']}" if not suffix and rec.get("reason") else "")
            )
            console.print(
                f"{arch}: {what} No-DP {rec['nodp' + suffix]:.1f}, CRT {rec['crt' + suffix]:.1f}, "
                f"DP-SGD {rec['dp' + suffix]:.1f}; No-DP ≤ CRT ≤ DP-SGD {verdict}"
            )
    console.print(f"-> {out_dir}")


def print_report(console: Console, summary: dict[str, Any], title: str) -> None:
    from rich.table import Table

    # lazy: lmleak.report.metrics imports numpy
    from lmleak.report.metrics import format_epsilon

    pii = summary.get("pii_unique_sequences") or {}
    if summary.get("pii_policy"):
        listed = ", ".join(f"{n} {t}" for t, n in sorted(pii.items(), key=lambda kv: -kv[1])) or "none"
        headlined = summary.get("pii_unique_sequences_total")
        console.print(
            f"[bold]leaked PII[/] (user-unique sequences of >= {plural(summary.get('min_tokens'), 'token')} holding PII, "
            f"k={summary['k']}, policy {summary['pii_policy']}): {headlined} headlined (person-identifying kinds, "
            f"unique as text too); by kind, every kind: {listed}"
        )
    for line in report_null_lines(summary):
        console.print(line, highlight=False)
    t = Table(title=title)
    t.add_column("k", justify="right")
    for col in (
        "sequences",
        "unique",
        "with PII",
        "curated",
        "ε_l",
        "ln ε_l p50/p95",
        "p-filtered",
        "top-k acc",
    ):
        t.add_column(col, justify="right")
    for k, m in summary["by_k"].items():
        p50, p95 = m.get("log_ratio_p50"), m.get("log_ratio_p95")
        t.add_row(
            k,
            str(m["num_sequences"]),
            str(m["unique_sequences"]),
            str(m.get("pii_unique_sequences_total", "-")),
            "-" if m["curated_unique_sequences"] is None else str(m["curated_unique_sequences"]),
            format_epsilon(m.get("log_leakage_epsilon")),
            "-" if p50 is None else f"{p50:.2f} / {p95:.2f}",
            str(m["p_filtered_sequences"]),
            "-" if m["top_k_accuracy"] is None else f"{100 * m['top_k_accuracy']:.2f}%",
        )
    console.print(t)
    pp = summary.get("perplexity")
    console.print(
        f"corpus perplexity: {'-' if pp is None else f'{pp:.3f}'} · documents: {summary['num_documents']} · tokens: {summary['num_tokens']}"
    )
    if summary.get("public_model"):
        console.print(
            f"public model scored each unique sequence with {summary.get('public_context_tokens')} tokens of "
            f"context, at most {summary.get('public_occurrences')} occurrences per sequence"
        )


def report_null_lines(summary: dict[str, Any]) -> list[str]:
    """Per k, the leaked-PII headline against its null (issue 32), one line each."""
    from rich.markup import escape

    lines = []
    for k, m in (summary.get("by_k") or {}).items():
        kind = m.get("null_kind")
        if kind is None and m.get("pii_people_excess_reason") is None:
            continue
        if kind is None:
            lines.append(f"[yellow]no null[/] (k={k}): {escape(str(m['pii_people_excess_reason']))}; "
                         f"to get one: {escape(str(m.get('pii_people_excess_fix')))}")  # fmt: skip
            continue
        ex, ci = m.get("pii_people_excess"), m.get("pii_people_excess_ci")
        excess = (
            "-" if ex is None else f"{ex:+.1%}" + ("" if ci is None else f" [{ci[0]:+.1%}, {ci[1]:+.1%}]")
        )
        null = (
            f"held-out people {m.get('null_pii_unique_sequences')} sequences, {m.get('pii_people_null')} of "
            f"{plural(m.get('pii_people_null_n'), 'person')}"
            if kind == "held_out"
            else "the public model (curated count)"
        )
        lines.append(
            f"[bold]leaked PII vs null[/] (k={k}): trained-on people {m.get('pii_unique_sequences_members')} "
            f"sequences, {m.get('pii_people_members')} of {plural(m.get('pii_people_members_n'), 'person')}; "
            f"null: {null}; people affected beyond the null {excess}"
        )
    return lines


def print_table(console: Console, df: Any, title: str) -> None:
    """A study's table, every column right-justified (a missing or NaN value as ``-``)."""
    rows = ([fmt(None if isinstance(v, float) and v != v else v, ".4g") if isinstance(v, float | None) else v
             for v in rec.values()] for rec in df.to_dict("records"))  # fmt: skip
    console.print(table(title, [str(c) for c in df.columns], rows, right=0))


def print_extraction(console: Console, summary: dict[str, Any], out_dir: Path) -> None:
    """Verified counts per metric, the discoverable fraction, and the memorised samples found."""
    top_n = summary["config"]["top_n"]
    min_match_tokens = summary["config"]["min_match_tokens"]
    for metric, count in summary[f"verified_at_{top_n}"].items():
        console.print(f"verified_at_{top_n} {metric}: {count}")
    d = summary["discoverable"]
    if d["documents"]:
        console.print(
            f"discoverable ({d['n']}, {d['p']:g}): {d['discoverable_fraction']:.3f} of {d['documents']} training prefixes"
        )
    console.print(
        f"extracted: {plural(summary['extracted'], 'memorised sample')} (>= {plural(min_match_tokens, 'token')} verbatim), "
        f"{summary['extracted_with_pii']} with PII; run: {out_dir}"
    )


def print_fdp(console: Console, eps: float | None, mu: float | None, note: str | None) -> None:
    """The f-DP line: the bound and μ̂ under its Gaussian assumption, or why it is not given."""
    if eps is None:
        console.print(f"epsilon_lower_bound_fdp: {note or 'not given'}")
        return
    console.print(
        f"epsilon_lower_bound_fdp: {eps:.6g} (mu-GDP refuted up to mu = {mu:.4g}; assumes a Gaussian "
        "trade-off, which DP-SGD's is close to: Mahloujifar, Melis & Chaudhuri 2024)"
    )


def print_plan(console: Console, plan: Any) -> None:
    """One row per precision: the correct guesses it means, the largest certifiable epsilon and,
    with a target, the canaries needed to certify it."""
    from rich.table import Table

    t = Table(
        title=f"one-run audit: m = {plural(plan.m, 'canary')}, r = {plural(plan.r, 'guess')}, delta {plan.delta:g}, "
        f"{plan.confidence:.0%} confidence"
    )
    for col in ("precision", "right", "max epsilon"):
        t.add_column(col, justify="right")
    if plan.target_epsilon is not None:
        guessed = "all guessed" if plan.r == plan.m else f"{plan.r / plan.m:.0%} guessed"
        t.add_column(f"m for epsilon {plan.target_epsilon:g} ({guessed})", justify="right")
    for row in plan.rows:
        cells = [f"{row['precision']:.3g}", f"{row['v']} of {plan.r}", f"{row['max_epsilon']:.4g}"]
        if plan.target_epsilon is not None:
            need = row["canaries_needed"]
            cells.append("unreachable" if need is None else str(need))
        t.add_row(*cells)
    console.print(t)


def print_dp_audit(console: Console, summary: dict[str, Any], out_dir: Path) -> None:
    """The epsilon lower bound, the guesses behind it, and whether the DP claim is violated."""
    a = summary["dp_audit"]
    console.print(f"epsilon_lower_bound: {summary['epsilon_lower_bound']:.6g}")
    if "epsilon_lower_bound_fdp" in summary:  # absent from summaries written before it existed
        print_fdp(
            console,
            summary["epsilon_lower_bound_fdp"],
            summary.get("mu_lower_bound"),
            summary.get("fdp_note"),
        )
    canaries = (
        plural(a["m"], "canary")
        if a.get("privacy_unit") != "user"
        else f"{plural(a['m'], 'canary user')} ({plural(a['canary_documents'], 'document')} each)"
    )
    if a.get("canary_design") == "crafted":
        canaries += " (crafted: rune secrets, new tokens)"
    console.print(
        f"{summary['statement']}: {a['v']} of {plural(a['r'], 'guess')} right about {canaries} "
        f"({a['num_included']} included), delta {a['delta']:g}"
    )
    if summary.get("limit"):
        console.print(summary["limit"])
    if summary["claim_violated"]:
        console.print(
            "[bold red]the measured lower bound exceeds the claimed epsilon: the DP claim is violated[/]"
        )
    if summary.get("placebo_warning"):
        console.print(f"[yellow]{summary['placebo_warning']}[/]")
    console.print(f"run: {out_dir}; report: {summary['report']}")
