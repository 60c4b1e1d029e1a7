"""The terminal's tables (Rich): :func:`table`, the one builder every command's table goes through,
and the tables that only read a result's summary — probing, the ProPILE experiment, KART's risk
margins, the PII pre-processing steps, a training run's epochs. The CLI prints what these return
with its own console; nothing here measures or decides.

Example:
    >>> t = table("counts", ("what", "n"), [("documents", 3)], right=1)
    >>> t.title, [c.header for c in t.columns], [c.justify for c in t.columns]
    ('counts', ['what', 'n'], ['left', 'right'])
"""

from __future__ import annotations

from typing import Any

from lmleak.words import plural


def fmt(x: Any, spec: str = ".3g", none: str = "-") -> str:
    """A table cell: ``x`` formatted by ``spec`` (``none`` for a missing value).

    Example:
        >>> fmt(0.123456), fmt(None), fmt(2, ".1f", none="—")
        ('0.123', '-', '2.0')
    """
    return none if x is None else format(x, spec)


def cell(v: Any) -> str:
    """A value of a summary as a cell: a float to three decimals, None as ``-``, the rest as text.

    Example:
        >>> cell(0.5), cell(None), cell(7)
        ('0.500', '-', '7')
    """
    return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def table(
    title: Any, columns: Any, rows: Any, *, right: int | None = None, fold: bool = False, **options: Any
) -> Any:
    """One Rich table: a column per name in ``columns`` (from index ``right`` on, right-justified;
    ``fold``: long cells wrap), a row per item of ``rows``, each cell ``str``-ed unless it is
    already Rich text (a corpus's value is text, never markup: give it as ``Text``). ``options``:
    Rich's own ``Table`` options (``box``, ``caption``, ...)."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, **options)
    for i, c in enumerate(columns):
        t.add_column(c, justify="right" if right is not None and i >= right else "left",
                     overflow="fold" if fold else "ellipsis")  # fmt: skip
    for r in rows:
        t.add_row(*(c if isinstance(c, Text) else str(c) for c in r))
    return t


# --- probing (paper 003) ------------------------------------------------------------------------


def probe_tables(summary: dict[str, Any]) -> list[Any]:
    """``probe run``'s summary: a row per target type; with controls, members vs controls and the
    two tests between them."""
    title = (
        f"ProPILE probe of {summary.get('model') or 'a redacted run’s model'} "
        f"({summary['level']}, {plural(summary['templates'], 'template')})"
    )
    cols: tuple[str, ...] = (
        "target",
        "subjects",
        "mean lik.",
        "mean null",
        "Wilcoxon p",
        "exact match",
        "γ<100",
    )
    keys = ("mean_likelihood", "mean_null_likelihood", "wilcoxon_p", "exact_match_rate")
    rows = [(name, v.get("subjects", "-"), *(fmt(v.get(k)) for k in keys), fmt((v.get("gamma") or {}).get("<100")))
            for name, v in summary["targets"].items()]  # fmt: skip
    shown = [table(title, cols, rows)]
    groups = summary.get("groups")
    if groups:
        cols = (
            "group",
            "subjects",
            "exact match",
            "mean ln(target/null)",
            "Wilcoxon p (raw)",
            "Wilcoxon p (log)",
        )
        keys = ("exact_match_rate", "mean_log_likelihood_ratio", "wilcoxon_p", "wilcoxon_p_log")
        rows = [(n, groups[n].get("subjects", "-"), *(fmt(groups[n].get(k)) for k in keys))
                for n in ("members", "controls")]  # fmt: skip
        tests = groups.get("tests", {})
        shown += [
            table("Members vs controls (users the model never saw)", cols, rows),
            f"members > controls: exact match Fisher p = {fmt(tests.get('exact_match_fisher_p'))}, "
            f"ln(target/null) Mann-Whitney p = {fmt(tests.get('log_ratio_mann_whitney_p'))}",
        ]
    return shown


def subject_lines(view: Any) -> list[Any]:
    """The person's findings (a :class:`~lmleak.probe.verdict.SubjectView`) as the page has them:
    written out, the chance per try, the rank among the made-up people in words (never a
    likelihood ratio), the verdict; the chance of a false alarm under the table, then the notes."""
    from rich.text import Text

    cols = (
        "item",
        "written out",
        "chance per try",
        "tries to reveal",
        f"vs {view.made_up} made-up people",
        "verdict",
    )
    rows = [(Text(r["field"]), "-" if r["written_out"] is None else f"{r['written_out']} of {r['asked']}",
             fmt(r["likelihood"]), fmt(r["expected_queries"]), Text(r["rank_words"]), Text(r["verdict"]))
            for r in view.items]  # fmt: skip
    shown = [table(Text(f"What {view.model} reveals about {view.subject}"), cols, rows)]  # a name is text
    scored = sum(1 for r in view.items if r["rank_p"] is not None)
    if scored and view.false_alarm is not None and view.any_false_alarm_at_most is not None:
        shown.append(
            Text(
                f"A person the model never saw has each item linked (rank p <= {view.singled_out_at:g}) "
                f"{view.false_alarm:.0%} of the time by chance, and one or more of these {scored} at most "
                f"{view.any_false_alarm_at_most:.0%} of the time (union bound)."
            )
        )
    return shown + [Text(note) for note in view.notes]


def propile_tables(summary: dict[str, Any], seed: int, level: str) -> list[Any]:
    """``experiment propile``'s tables: the black-box rows (model, level, target), then the soft
    prompt vs hard template rows when the run has them."""
    from rich import box

    def em(r: dict[str, Any]) -> str:
        n = r["exact_match_subjects"]
        return fmt(r["exact_match_rate"], ".2g") + ("" if n in (None, r["subjects"]) else f" ({n})")

    cols: tuple[str, ...] = (
        "model",
        "level",
        "target",
        "n",
        "lik.",
        "null lik.",
        "ratio",
        "Wilcoxon p",
        "EM",
        "γ<100",
    )
    keys = ("mean_likelihood", "mean_null_likelihood", "likelihood_ratio", "wilcoxon_p")
    rows = [(r["model"], r["level"], r["target"], r["subjects"], *(fmt(r[k], ".2g") for k in keys), em(r),
             fmt(r["gamma_lt_100"], ".2g")) for r in summary["rows"]]  # fmt: skip
    caption = "n: subjects; EM: exact-match rate (over the subjects in parentheses if fewer)"
    title = f"ProPILE (paper 003) on synthetic CustomerSim, seed {seed}"
    shown = [table(title, cols, rows, fold=True, box=box.SIMPLE, collapse_padding=True, caption=caption)]
    if summary["softprompt_rows"]:
        cols = ("target", "prompt", "train", "unseen", "mean lik.", "mean log lik.", "EM", "best epoch")
        rows = [(r["target"], r["prompt"], r["train_subjects"], r["eval_subjects"], fmt(r["mean_likelihood"], ".2g"),
                 f"{r['mean_log_likelihood']:.1f}", fmt(r["exact_match_rate"], ".2g"),
                 r["best_epoch"] if r["prompt"] == "soft" else "-") for r in summary["softprompt_rows"]]  # fmt: skip
        title = f"Soft prompt vs hard template ({level}, 1-shot, unseen subjects)"
        shown.append(table(title, cols, rows, fold=True, box=box.SIMPLE, collapse_padding=True))
    return shown


# --- KART (paper 004) ---------------------------------------------------------------------------


def percent(v: float | None) -> str:
    """A leakage ratio in percent (``NA`` when it cannot be calculated)."""
    return "NA" if v is None else f"{v:.2f}%"


def margins_lines(res: dict[str, Any], title: str) -> list[Any]:
    """KART's risk margins: a row per (anchor, weakened) pair with both ratios and the margin's 95 %
    interval, then the multiplicity note and the one line on the ordering."""
    intervals = res.get("ratio_intervals") or {}

    def ratio(name: str) -> str:
        ci = intervals.get(name)
        return percent(res["ratios"][name]) + ("" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]")

    rows = []
    for m in res["margins"]:
        mark = (
            "NA" if m["margin"] is None else f"{m['margin']:.2f}%" + (" (<0!)" if m["violation"] else " (≥0)")
        )
        ci = "—" if m.get("ci_low") is None else f"[{m['ci_low']:.2f}, {m['ci_high']:.2f}]"
        ci += "" if m.get("ci_low") is None or m.get("significant") else " n.s."
        rows.append((m["anchor"], ratio(m["anchor"]), m["weakened"], ratio(m["weakened"]), mark, ci))
    caption = "95% intervals: Wilson (ratios), Newcombe method 10 (margins); n.s. = contains 0"
    shown = [
        table(title, ("anchor", "ratio", "weakened", "ratio", "margin", "95% CI"), rows, caption=caption)
    ]
    if res.get("multiplicity_note"):
        shown.append(f"[dim]{res['multiplicity_note']}[/]")
    if res["all_nonnegative"]:
        shown.append("all calculable margins ≥ 0")
    elif res.get("significant_violations", 1):
        shown.append("[bold red]ordering violation: a margin is negative and its 95% interval excludes 0[/]")
    else:
        shown.append(
            "[yellow]a margin is negative, but its 95% interval contains 0: within the noise of these counts[/]"
        )
    return shown


# --- PII pre-processing (paper 002) and training ------------------------------------------------


def shapes_table(by_shape: dict[str, dict[str, dict[str, Any]]]) -> Any:
    """``pii evaluate --by shape``: names and all PII of the people of each name shape."""
    rows = []
    for shape, by_entity in by_shape.items():
        cells = []
        for ent in ("PERSON", "ALL"):
            r = by_entity.get(ent)
            if r is None:
                cells += ["0", "-", "-"]
                continue
            ci = "" if r["gamma_ci"] is None else f" [{r['gamma_ci'][0]:.3f}, {r['gamma_ci'][1]:.3f}]"
            cells += [str(r["support"]), cell(r["recall"]), cell(r["gamma"]) + ci]
        rows.append((shape, *cells))
    cols = ("shape", "names", "name recall", "name γ (95% CI)", "all PII", "recall", "γ (95% CI)")
    return table("by name shape (the people whose PII each span is)", cols, rows, right=1)


def step_table(summary: dict[str, Any], stage: str, written_to: Any) -> Any:
    """The summary of ``lmleak dedup``, ``redact`` or ``split``: counts, the Bloom filter's rates,
    what was removed per entity, and the folder written to."""
    keys = ("documents", "sentences", "masked", "redacted_sentences", "public", "private", "private_fraction")
    rows = [(k, cell(summary[k])) for k in keys if k in summary]
    bloom = summary.get("bloom") or (summary.get("dedup") or {}).get("bloom")
    if bloom:
        rows.append(("bloom configured fp rate", f"{bloom['configured_fp_rate']:.2g}"))
        rows.append(("bloom estimated fp rate", f"{bloom['estimated_fp_rate']:.2g}"))
    rows += [(f"removed: {ent}", n) for ent, n in sorted((summary.get("removed") or {}).items())]
    rows.append(("written to", written_to))
    return table(f"lmleak {stage}: {summary['corpus']}", ("what", "value"), rows, right=1)


def history_table(history: list[dict[str, Any]], title: str) -> Any:
    """A training run's epochs: train loss, validation perplexity, top-1/top-3 accuracy, throughput."""

    def f(v: Any, digits: int = 3) -> str:
        return fmt(v, f".{digits}f", none="—")

    cols = ("epoch", "train loss", "val perplexity", "val top-1", "val top-3", "tokens/s")
    keys = ("train_loss", "val_perplexity", "val_top1_accuracy", "val_top3_accuracy")
    rows = [(h["epoch"], *(f(h.get(k)) for k in keys), f(h.get("tokens_per_s"), 0)) for h in history]
    return table(title, cols, rows, right=0)


# --- the verdict and the release summary (audit, gate, demo) ------------------------------------

#: a limit's result in the verdict table: its style
RESULT_STYLE = {"pass": "green", "fail": "bold red", "inconclusive": "bold yellow", "not_evaluable": "yellow"}

#: each model's verdict in the release summary: its style and its words
RELEASE_WORDS = {
    "pass": ("bold green", "PASS"),
    "fail": ("bold red", "FAIL"),
    "inconclusive": ("bold yellow", "INCONCLUSIVE"),
    "not_evaluable": ("bold yellow", "NOT EVALUABLE"),
    "no_limits": ("bold", "no limits set"),
}


def _plain(markup: str) -> Any:
    """A line of markup shown as it is written (Rich's highlighter does not colour its numbers)."""
    from rich.text import Text

    return Text.from_markup(markup)


def verdict_lines(verdict: Any, title: str = "Verdict") -> list[Any]:
    """The verdict table of :func:`lmleak.render.verdict.verdict_rows` (the HTML card's cells), then
    each limit's reason on a line of its own (a narrow terminal keeps them whole)."""
    from rich.markup import escape

    # lazy: the CLI imports this module at start-up (its table builder); the verdict only when printed
    from lmleak.render.verdict import verdict_rows

    rows = [{k: escape(v) for k, v in r.items()} for r in verdict_rows(verdict)]  # "[perplexity]" is text
    if not rows:
        return [
            f"[bold]{title}[/]: no limits set (add a `gate:` section to the audit config, or use --profile release)"
        ]
    cells = [(r["model"], r["limit"], r["value"], r["interval"], f"[{RESULT_STYLE.get(r['status'], '')}]{r['result']}[/]")
             for r in rows]  # fmt: skip
    title += f" (profile {verdict.profile})" if verdict.profile else ""
    shown = [table(title, ("model", "limit", "value", "95% interval", "result"), cells)]
    return shown + [_plain(f"  {r['model']} · {r['limit']}: {r['why']}") for r in rows if r["why"]]


def release_lines(summary: dict[str, Any], verdict: Any) -> list[Any]:
    """The release summary the terminal opens with: per model its verdict, the people affected and
    what did not run; then the verdict table (or that no limits are set)."""
    from rich.markup import escape
    from rich.rule import Rule

    # lazy: the CLI imports this module at start-up; the HTML report's module only for a release summary
    from lmleak.render.html import people_lines

    shown: list[Any] = [Rule("[bold]Release summary[/]")]
    for name, rel in ((summary.get("release") or {}).get("models") or {}).items():
        style, words = RELEASE_WORDS[verdict.model_status(name)]
        shown.append(f"[bold]{name}[/]: verdict [{style}]{words}[/]")
        shown += [
            _plain(f"  people affected: {escape(line)}") for line in people_lines(rel.get("people_affected"))
        ]
        for e in rel.get("not_run") or ():
            fix = f" — to run it: {e['fix']}" if e.get("fix") else ""
            shown.append(_plain(f"  [yellow]not run[/]: {escape(e['analysis'] + ': ' + e['reason'] + fix)}"))
    if verdict.checks:
        return shown + verdict_lines(verdict)
    return shown + [
        "[dim]no limits set: add a `gate:` section to the audit config (e.g. `gate: {profile: release}`)[/]"
    ]


def corpus_check_lines(path: Any, check: Any) -> list[str]:
    """``lmleak corpus check`` (a :class:`~lmleak.data.stats.CorpusCheck`) as a few lines: size,
    repeated lines, the top 1 % of users, the PII density, then each skipped row and each warning."""
    summary, stats = check.to_dict(), check.stats
    entities = ", ".join(f"{k} {v}" for k, v in stats.pii_per_entity.items()) or "none"
    return [
        f"[bold]{path}[/]: {plural(summary['documents'], 'document')} from {plural(summary['users'], 'user')} "
        f"({summary['docs_per_user_min']}-{summary['docs_per_user_max']} per user), {stats.words:,} words",
        f"  repeated lines: {stats.duplicate_line_share:.1%} of non-empty lines occur more than once",
        f"  top 1% of users ({stats.top1pct_users}): {stats.top1pct_user_share:.1%} of the words, "
        f"{stats.top1pct_document_share:.1%} of the documents",
        f"  PII density (regex detectors): {stats.pii_per_1k_words} spans per 1,000 words ({entities})",
        *(f"  [yellow]skipped[/] line {line}: {reason}" for line, reason in check.skipped),
        *(f"  [yellow]warning:[/] {w}" for w in stats.warnings),
    ]


def train_lines(run: Any, out_dir: Any, dp_statement: str | None) -> list[Any]:
    """``lmleak train``'s result (``run``: :func:`lmleak.train.run.train_and_summarise`'s): the epochs,
    who was held out, the tokenizer's source, the CRT split, the policy miss rate γ and the DP ε
    (``dp_statement``, :func:`lmleak.train.release.epsilon_statement`'s words), the warnings and the
    command that re-audits the model beside the one it replaces."""
    from rich.markup import escape

    res, summary, privacy = run.result, run.summary, run.result.privacy
    held, split, g = res.val_users, privacy.get("split") or {}, privacy.get("gamma")
    shown = [
        history_table(res.history, f"{run.arch} trained ({run.mode}) -> {out_dir}"),
        f"held out {len(held)} of {plural(len(held) + len(res.train_users), 'user')} (never trained on; the "
        f"non-members and controls of `lmleak mia` / `lmleak probe run`): {out_dir / 'holdout.json'}",
        f"tokenizer learnt from: {privacy.get('tokenizer_source')}",
    ]
    if split:
        shown.append(
            f"CRT split: D_pub holds {split.get('public_sentence_share', 0):.1%} of the sentences and "
            f"{split.get('public_word_share', 0):.1%} of the words; private because of: {split.get('private_reasons')}"
        )
    if privacy.get("gamma_source"):
        bound = privacy.get("gamma_upper95")
        upper = (
            ""
            if bound is None
            else f", 95% upper bound {bound:.4f} on {plural(privacy['gamma_support'], 'secret')}"
        )
        shown.append(
            f"policy miss rate gamma = {fmt(g, '.4f', none='unknown')} ({privacy['gamma_source']}{upper})"
        )
    if dp_statement is not None:
        shown.append(f"DP: {dp_statement}")
        shown.append(
            f"    {privacy['accountant']} accountant, {privacy['steps']} private steps, "
            f"{privacy.get('sampler', 'poisson')} sampling of {privacy.get('sampled', 'sequences')} "
            f"(rate {privacy['sample_rate']:.3g})"
        )
    if summary.get("confidentiality"):
        shown.append(f"[yellow]{escape(summary['confidentiality'])}[/]")
    shown += [f"[bold yellow]warning:[/] {escape(w)}" for w in summary.get("warnings") or []]
    return shown + [f"re-audit it beside the model it replaces: {escape(summary['reaudit_command'])}"]


def audit_summary_table(run: Any, heads: dict[str, dict[str, Any]]) -> Any:
    """The audit's headlines: one row per metric, one column per model (fits a terminal for any
    number of metrics); each value as the HTML card shows it (every k, DP ε with its unit,
    probing's members and controls)."""
    # lazy: the CLI imports this module at start-up; the HTML report's labels only for an audit
    from lmleak.render.headline import PER_K

    # lazy: as above
    from lmleak.render.html import LABELS, card_value

    def shown(k: str, h: dict[str, Any]) -> bool:
        return k in h or (k == "leakage_epsilon" and "log_leakage_epsilon" in h)

    ks = sorted({k for h in heads.values() for k in (h.get("by_k") or {})}, key=int)
    rows = []
    for k in (k for k in LABELS if any(shown(k, h) for h in heads.values())):
        label = LABELS[k] + (f" (k = {' · '.join(ks)})" if k in PER_K and len(ks) > 1 else "")
        rows.append((label, *[card_value(k, h) if shown(k, h) else "—" for h in heads.values()]))
    return table(f"Audit summary — {run}", ("metric", *heads), rows, right=1)


def policy_lines(result: Any, corpus: Any) -> list[Any]:
    """``pii evaluate`` (a policy's evaluation): per entity its support, recall, γ and precision;
    with ``--by shape`` the name shapes' table and the shapes the policy misses."""
    cols = ("support", "recall", "recall_full", "gamma", "sentence_recall", "predicted", "precision")
    rows = [(ent, *(cell(row[col]) for col in cols)) for ent, row in result.entities.items()]
    title = f"policy {result.policy} on {corpus} ({plural(result.documents, 'document')})"
    shown = [table(title, ("entity", *cols), rows, right=1)]
    if result.by_shape is not None:
        shown += [shapes_table(result.by_shape), *(f"[yellow]warning:[/] {w}" for w in result.warnings)]
    return shown
