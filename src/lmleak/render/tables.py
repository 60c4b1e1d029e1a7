"""The report's tables: leaked sequences, membership, extraction, probing groups, the comparison
between models, scenarios and skipped stages."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from lmleak.errors import RunError
from lmleak.render.cards import LABELS, card_value, describe_scenario, format_value
from lmleak.runs import read_summary
from lmleak.words import plural

SEQUENCE_COLUMNS = [
    # (column, header, is_text)
    ("text", "Text", True),
    ("k", "k", False),
    ("length_tokens", "Tokens", False),
    ("length_words", "Words", False),
    ("count_in_s", "Count in S", False),
    ("users_in_s", "Users in S", False),
    ("count_in_d", "Count in D", False),
    ("users_in_d", "Users in D", False),
    ("mean_context_length", "Context length", False),
    ("perplexity", "PP (model)", False),
    ("public_perplexity", "PP (public)", False),
    ("perplexity_ratio", "PP public / PP model", False),
    ("log_perplexity_ratio", "ln(PP public / PP model)", False),
    ("pii_types", "PII", False),
]


def read_parquet_or_none(path: Path) -> Any:
    import pandas as pd

    return pd.read_parquet(path) if path.exists() else None


def report_k(report_dir: Path | None) -> str:
    """The sentence naming the k a leakage report's headline counts are at (its summary's first k)."""
    if report_dir is None:
        return ""
    try:
        summary = read_summary(report_dir)
    except RunError:  # a missing or unreadable summary leaves the card as it was
        return ""
    k, ks = summary.get("k"), summary.get("ks") or []
    if k is None:
        return ""
    others = [x for x in ks if x != k]
    tail = f"; the table below lists k = {', '.join(map(str, others))} too" if others else ""
    return f" Counted at k = {k}{tail}."


def sequence_table(df: Any, table_id: str, show_text: bool, limit: int) -> tuple[str, str]:
    df = df.copy()
    if "perplexity" not in df.columns and "mean_perplexity" in df.columns:
        df["perplexity"] = df["mean_perplexity"]
    if "mean_context_length" not in df.columns and "context_lengths" in df.columns:
        df["mean_context_length"] = [float(sum(x) / max(len(x), 1)) for x in df["context_lengths"]]
    sort_key = "users_in_d" if "users_in_d" in df.columns else df.columns[0]
    df = df.sort_values(sort_key, kind="stable")
    if "pii_types" in df.columns:  # leaked PII leads: the rows a reader must see first
        has_pii = [v is not None and len(v) > 0 for v in df["pii_types"]]
        df = df.assign(_pii=has_pii).sort_values("_pii", ascending=False, kind="stable").drop(columns="_pii")
    note = plural(len(df), "sequence")
    if "k" in df.columns and df["k"].nunique() > 1:
        note += " (" + ", ".join(f"k = {k}: {n}" for k, n in sorted(df["k"].value_counts().items())) + ")"
    if len(df) > limit:
        note += f"; the {limit} with leaked PII first, then the fewest users in D, shown"
    df = df.head(limit)
    cols = [(c, h, t) for c, h, t in SEQUENCE_COLUMNS if c in df.columns and (show_text or not t)]
    head = "".join(f'<th class="{"leaktext-col" if t else ""}">{html.escape(h)}</th>' for _, h, t in cols)
    rows = []
    for rec in df.to_dict("records"):
        cells = []
        for c, _, t in cols:
            v = rec[c]
            if t:
                cells.append(f'<td class="leaktext leaktext-col">{html.escape(str(v))}</td>')
            else:
                num = v if isinstance(v, int | float) else ""
                cells.append(f'<td class="num" data-v="{num}">{format_value(v)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cls = "sortable hidden-text" if show_text else "sortable"
    return (
        f'<table id="{table_id}" class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>',
        note,
    )


def summary_of(stage_dir: Path | None) -> dict[str, Any]:
    p = None if stage_dir is None else stage_dir / "summary.json"
    if p is None or not p.exists():
        return {}
    return dict(json.loads(p.read_text(encoding="utf-8")))


def _html_table(title: str, head: list[str], rows: list[list[Any]], note: str = "") -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{format_value(v)}</td>' for v in r) + "</tr>" for r in rows
    )
    foot = f'<p class="muted">{html.escape(note)}</p>' if note else ""
    return (
        f'<div class="plot"><h3>{html.escape(title)}</h3><div class="scroll"><table><thead><tr>{th}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>{foot}</div>"
    )


def _blind_baseline_block(name: str, mia: dict[str, Any]) -> list[str]:
    """Each method's AUC and the access it needs (KART), beside the blind baseline's AUC, and the
    warning when the baseline comes close (values from the mia stage's summary.json)."""
    if mia.get("blind_baseline_auc") is None:
        return []
    tags = mia.get("mia_method_scenarios") or {}
    rows = [
        [m, auc, (tags.get(m) or {}).get("access", "scores"), (tags.get(m) or {}).get("needs", "")]
        for m, auc in (mia.get("mia_auc_by_attack") or {}).items()
    ]
    rows.append(
        [
            "blind baseline (text only)",
            mia["blind_baseline_auc"],
            "none",
            "nothing from the model: n-gram logistic regression, cross-validated",
        ]
    )
    warning = mia.get("blind_baseline_warning")
    banner = f'<p class="banner"><strong>Warning:</strong> {html.escape(warning)}</p>' if warning else ""
    table = _html_table(
        f"Membership attacks beside the blind baseline — {name}",
        ["method", "AUC", "access", "needs"],
        rows,
        "The blind baseline never queries the model (Das et al. 2024): an attack that it matches "
        "measures a difference between the member and non-member texts, not memorisation.",
    )
    return [banner + table if banner else table]


def _extraction_block(name: str, ext: dict[str, Any]) -> list[str]:
    """Untargeted extraction (issue 20): verified memorised samples among each metric's top-n, the
    totals, and (n, p)-discoverable extraction (values from the extract stage's summary.json)."""
    per_metric = ext.get("verified_at_100")
    if not per_metric:
        return []
    cfg = ext.get("config") or {}
    top_n, min_tokens = cfg.get("top_n", 100), cfg.get("min_match_tokens")
    rows: list[list[Any]] = [[f"verified in the top {top_n} by {m}", v] for m, v in per_metric.items()]
    rows += [
        ["extracted (any metric, verified)", ext.get("extracted")],
        ["... holding PII", ext.get("extracted_with_pii")],
        ["... written by one user only", ext.get("extracted_unique_user")],
        ["longest verbatim match (tokens)", ext.get("longest_match_tokens")],
    ]
    disc = ext.get("discoverable") or {}
    if disc.get("discoverable_fraction") is not None:
        rows.append(
            [
                f"(n, p)-discoverable training suffixes (n = {disc.get('n')}, p = {disc.get('p')}, "
                f"{disc.get('documents')} documents)",
                disc["discoverable_fraction"],
            ]
        )
    note = (
        f"{format_value(ext.get('num_samples'))} samples generated with no prompt about the training data "
        f"(Carlini et al. 2021); a sample counts when at least {format_value(min_tokens)} of its tokens occur "
        "verbatim in the training corpus."
    )
    return [_html_table(f"Untargeted extraction — {name}", ["measure", "value"], rows, note)]


def stage_tables(stage_dirs: dict[str, dict[str, Path]]) -> list[str]:
    """Every membership attack's numbers, probing's members vs controls, and extraction, as tables."""
    out = []
    for name, stages in stage_dirs.items():
        mia = summary_of(stages.get("mia"))
        if mia.get("metrics"):
            out.append(_mia_table(name, mia))
            out.extend(_blind_baseline_block(name, mia))
        groups = summary_of(stages.get("probe")).get("groups")
        if groups:
            out.append(_probe_groups_table(name, groups))
        out.extend(_extraction_block(name, summary_of(stages.get("extract"))))
    return out


def _mia_table(name: str, mia: dict[str, Any]) -> str:
    """Every membership attack's AUC, accuracy and low-FPR TPRs (the mia stage's ``metrics`` rows)."""
    rows: list[list[Any]] = []
    notes: set[str] = set()
    for r in mia["metrics"]:
        star = " (headline)" if r["level"] == "individual" and r["feature"] == mia.get("mia_attack") else ""
        rows.append(
            [
                r["level"],
                r["feature"] + star,
                f"{r.get('num_members')} / {r.get('num_non_members')}",
                r["auc"],
                r["accuracy"],
                r.get("tpr_at_1pct_fpr"),
                r.get("tpr_at_0.1pct_fpr"),
            ]
        )
        notes.update(v for k, v in r.items() if k.endswith("_note") and v)
    note = (
        "TPR at a low FPR is left out where too few non-members support it: " + "; ".join(sorted(notes)) + "."
        if notes
        else ""
    ) + (f" Source: {mia['source']}" if mia.get("source") else "")
    head = [
        "level",
        "attack",
        "n (members / non-members)",
        "AUC",
        "accuracy",
        "TPR @ 1% FPR",
        "TPR @ 0.1% FPR",
    ]
    return _html_table(f"Membership inference, every attack — {name}", head, rows, note)


def _probe_groups_table(name: str, groups: dict[str, Any]) -> str:
    """PII probing's members vs controls (the probe stage's ``groups``) and the tests between them."""
    rows = [
        [
            g,
            groups[g].get("subjects_probed"),
            groups[g].get("subjects"),
            groups[g].get("exact_match_rate"),
            groups[g].get("mean_log_likelihood_ratio"),
            groups[g].get("wilcoxon_p"),
            groups[g].get("wilcoxon_p_log"),
        ]
        for g in ("members", "controls")
    ]
    t = groups.get("tests", {})
    note = (
        f"Members > controls: exact match Fisher p = {format_value(t.get('exact_match_fisher_p'))}, "
        f"ln(target/null) Mann-Whitney p = {format_value(t.get('log_ratio_mann_whitney_p'))}. Controls are "
        "people whose own documents were held out of training (their PII can still appear in others' "
        "quoted replies)."
    )
    head = [
        "group",
        "subjects probed",
        "in the subjects file",
        "exact match",
        "mean ln(target/null)",
        "Wilcoxon p (raw)",
        "Wilcoxon p (log)",
    ]
    return _html_table(f"PII probing, members vs controls — {name}", head, rows, note)


def comparison_table(headlines: dict[str, dict[str, Any]]) -> str | None:
    if len(headlines) < 2:
        return None
    metrics = [k for k in LABELS if any(k in h for h in headlines.values())]
    head = "<th>Model</th>" + "".join(f"<th>{html.escape(LABELS[k])}</th>" for k in metrics)
    rows = "".join(
        "<tr><td>"
        + html.escape(name)
        + "</td>"
        + "".join(
            f'<td class="num" data-v="{h.get(k, "")}">{card_value(k, h) if k in h or k == "leakage_epsilon" and "log_leakage_epsilon" in h else format_value(None)}</td>'
            for k in metrics
        )
        + "</tr>"
        for name, h in headlines.items()
    )
    return f'<table id="comparison-table" class="sortable"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def scenarios_table(summary: dict[str, Any]) -> str | None:
    rows = []
    for name, m in (summary.get("models") or {}).items():
        for stage, sc in (m.get("scenarios") or {}).items():
            rows.append(
                f"<tr><td>{html.escape(name)}</td><td>{html.escape(stage)}</td><td><code>{html.escape(describe_scenario(sc) or '')}</code></td></tr>"
            )
    if not rows and "scenario" in summary:
        rows.append(
            f"<tr><td>run</td><td>—</td><td><code>{html.escape(describe_scenario(summary['scenario']) or '')}</code></td></tr>"
        )
    if not rows:
        return None
    return (
        '<table class="sortable"><thead><tr><th>Model</th><th>Analysis</th><th>Scenario</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table>"
    )


def skipped_table(summary: dict[str, Any]) -> str | None:
    """The stages an audit skipped and why (each model's ``skipped`` in ``summary.json``), or None."""
    rows = [
        f"<tr><td>{html.escape(stage)}</td><td>{html.escape(name)}</td><td>{html.escape(str(reason))}</td></tr>"
        for name, m in (summary.get("models") or {}).items()
        for stage, reason in ((m or {}).get("skipped") or {}).items()
    ]
    if not rows:
        return None
    return (
        '<table id="skipped-table" class="sortable"><thead><tr><th>Stage</th><th>Model</th><th>Reason</th></tr>'
        "</thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
