"""The HTML audit report: one self-contained file (plotly.js and every plot inlined, no network).

It reads a run directory — an audit (``summary.json`` with ``models``) or a single stage's output —
and presents what the stages computed. It never computes a metric; the only arithmetic here is
binning values for a histogram. Leaked text is left out unless ``show_text`` is set; then the
page shows it behind a switch and says so in a banner. The file is written owner-only.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak._version import __version__
from lmleak.errors import ConfigError, LmleakError, RunError
from lmleak.render.headline import EXPLANATIONS, PER_K, collect_headlines
from lmleak.render.users import people_at_risk
from lmleak.render.verdict import (
    METRIC_STAGE,
    STATUS_WORDS,
    Limit,
    Verdict,
    format_interval,
    gate_section,
    limits_from_config,
    verdict_of,
    verdict_rows,
)
from lmleak.report.metrics import format_epsilon
from lmleak.runs import atomic_write_text, check_run, read_summary
from lmleak.scenarios.describe import notation
from lmleak.words import plural

LABELS = {
    "pii_unique_sequences": "Leaked PII (user-unique sequences)",
    "unique_sequences": "Unique leaked sequences",
    "curated_unique_sequences": "Curated unique sequences",
    "leakage_epsilon": "Leakage ε",
    "max_exposure": "Highest canary exposure (bits)",
    "mia_auc": "Membership inference AUC",
    "mia_accuracy": "Membership inference accuracy",
    "pii_exact_match": "PII exact-match rate",
    "pii_likelihood_ratio": "PII likelihood ratio (target / null)",
    "pii_likelihood_ratio_geomean": "PII likelihood ratio, typical (geometric mean)",
    "dp_epsilon": "DP ε",
    "confidentiality_epsilon": "Confidentiality ε (Bayesian)",
    # issue 20: one-run DP audit and untargeted extraction
    "epsilon_lower_bound": "Measured ε lower bound (DP audit)",
    "extracted": "Extracted training samples (verified)",
    "users_at_risk": "People at risk (leaked PII or probing hit)",  # issue 27: users.parquet
}


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


@dataclass
class ModelView:
    name: str
    headline: list[dict[str, Any]]
    sequences: str | None
    sequences_note: str
    skipped: tuple[str, ...] = ()  # the stages the audit skipped for this model (reasons: the Skipped table)


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list | tuple) or (hasattr(v, "tolist") and getattr(v, "ndim", 0) == 1):
        return html.escape(", ".join(str(x) for x in list(v))) or "—"
    if isinstance(v, float):
        if v != v:  # NaN
            return "—"
        return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.3e}"
    return html.escape(str(v))


def card_value(key: str, headline: dict[str, Any]) -> str:
    """The card's number; a report metric measured at several k shows every k (the strongest honest
    value must not hide behind the first k listed)."""

    def one(h: dict[str, Any]) -> str:
        if key == "leakage_epsilon" and h.get("leakage_epsilon_infinite"):
            return "∞"
        if key == "leakage_epsilon" and h.get("log_leakage_epsilon") is not None:
            return format_epsilon(h["log_leakage_epsilon"])
        if key == "pii_exact_match" and h.get("pii_exact_match_members") is not None:
            controls = h.get("pii_exact_match_controls")
            tail = "" if controls is None else f" · controls {controls:.1%}"
            return f"members {h['pii_exact_match_members']:.1%}{tail}"
        if key == "dp_epsilon" and h.get("dp_epsilon") is not None and h.get("privacy_unit") in UNIT_WORDS:
            return f"{_fmt(h['dp_epsilon'])} per {UNIT_WORDS[h['privacy_unit']]}"
        return _fmt(h.get(key))

    by_k = headline.get("by_k") or {}
    if key in PER_K and len(by_k) > 1:
        return " · ".join(one(by_k[k]) for k in sorted(by_k, key=int))
    return one(headline)


def _k_note(key: str, headline: dict[str, Any]) -> str:
    by_k = headline.get("by_k") or {}
    if key in PER_K and len(by_k) > 1:
        return f" Values at k = {' · '.join(sorted(by_k, key=int))} (the tab attack's top-k)."
    return ""


def _card_detail(key: str, headline: dict[str, Any]) -> str:
    if key == "epsilon_lower_bound":  # issue 20: the claim beside the measurement, as one sentence
        claimed = headline.get("dp_epsilon")
        measured = headline.get("epsilon_lower_bound")
        claim = f"Claimed ε ≤ {claimed:.3g}" if claimed is not None else "No DP claim (plain training)"
        verdict = " The claim is violated." if claimed is not None and measured > claimed else ""
        return f" {claim}; measured ≥ {measured:.3g}.{verdict}"
    if key == "pii_unique_sequences":
        by_type = headline.get("pii_unique_sequences_by_type") or {}
        listed = ", ".join(f"{t} {n}" for t, n in sorted(by_type.items(), key=lambda kv: -kv[1]))
        return f" By type (first k): {listed}." if listed else ""
    if key == "pii_exact_match" and headline.get("pii_exact_match_members") is not None:
        p = headline.get("pii_exact_match_fisher_p")
        return (
            f" Members are people the model trained on ({plural(headline.get('pii_exact_match_members_n'), 'probe')}), "
            f"controls people it never saw ({headline.get('pii_exact_match_controls_n')}): the controls' rate is "
            f"what guessing gives. Pooled: {_fmt(headline.get('pii_exact_match'))}."
            + (f" Members > controls: Fisher p = {p:.2g}." if p is not None else "")
        )
    if key == "confidentiality_epsilon" and headline.get("confidentiality_gamma") is not None:
        basis = headline.get("confidentiality_gamma_basis") or "the recorded miss rate"
        tail = (
            " Theorem 8.3 adds δ₂, the conservative policy's miss rate, which is not measured: 0 is assumed."
            if headline.get("confidentiality_delta2_assumed")
            else ""
        )
        return f" Computed at γ = {headline['confidentiality_gamma']:.4g} ({basis}).{tail}"
    if key == "dp_epsilon" and headline.get("privacy_unit"):
        unit = {"user": "one person (all of a user's data)", "sequence": "one training sequence"}.get(
            headline["privacy_unit"], headline["privacy_unit"]
        )
        tail = ""
        g, k = headline.get("group_privacy_epsilon_largest_user"), headline.get("largest_user_sequences")
        if headline["privacy_unit"] == "sequence" and g is not None and k:
            tail = (
                f" Per person this is only a group-privacy bound: the largest user, with {plural(k, 'sequence')}, "
                f"is protected at ε = {_fmt(g)} (k·ε, Dwork & Roth Thm 2.2) — train with "
                "--privacy-unit user to protect people."
            )
        return f" The privacy unit is {unit}.{tail}"
    if key == "mia_auc" and headline.get("mia_method"):
        how = f", chosen by {headline['headline_selection']}" if headline.get("headline_selection") else ""
        return f" Headline attack: {headline['mia_method']}{how} (every attack: the table under Plots)."
    return ""


#: ``privacy_unit`` (issue 27) as the DP card says it: "ε 2.9 per person"
UNIT_WORDS = {"user": "person", "sequence": "sequence"}


def _card_null(key: str, headline: dict[str, Any]) -> str | None:
    """The null the card's number is read against (issue 26: every headline beside its placebo), or None."""

    def ci(name: str) -> str:
        pair = headline.get(f"{name}_ci")
        return (
            f" [{format_interval(name, pair)}]" if isinstance(pair, list | tuple) and len(pair) == 2 else ""
        )

    if key == "mia_auc" and headline.get("placebo_auc") is not None:
        parts = [
            f"Placebo (two halves of people it never saw): {_fmt(headline['placebo_auc'])}{ci('placebo_auc')}"
        ]
        if headline.get("blind_auc") is not None:
            parts.append(f"blind text-only baseline: {_fmt(headline['blind_auc'])}{ci('blind_auc')}")
        return "; ".join(parts) + " — both should cover 0.5."
    if key == "max_exposure" and headline.get("placebo_max_exposure") is not None:
        return f"Placebo (as many canaries never inserted): at most {_fmt(headline['placebo_max_exposure'])} bits."
    if (
        key == "pii_exact_match"
        and headline.get("pii_exact_match_members") is None
        and headline.get("pii_exact_match_controls") is not None
    ):
        return (
            "Every probed person was a held-out control (never trained on): this is what guessing gives, "
            "not a measurement of what the model reveals."
        )
    return None


def _card_interval(key: str, headline: dict[str, Any]) -> str | None:
    """The card's 95 % interval (``<key>_ci`` of the stage), or None."""
    ci = headline.get(f"{key}_ci")
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return None
    try:
        return f"95% interval [{format_interval(key, ci)}]"
    except (TypeError, ValueError):
        return None


def describe_scenario(scenario: dict[str, Any] | None) -> str | None:
    """The scenario in paper 004's notation, or compact JSON for a record that does not parse."""
    if not scenario:
        return None
    try:
        return notation(scenario)
    except (
        LmleakError,
        KeyError,
        TypeError,
        ValueError,
    ):  # an old or hand-edited record: show it as it is rather than fail the page
        return json.dumps(scenario, sort_keys=True)


def _stage_dirs(run_dir: Path, summary: dict[str, Any]) -> dict[str, dict[str, Path]]:
    """Model name -> stage name -> folder of that stage's results."""
    models = summary.get("models")
    if isinstance(models, dict) and models:
        return {
            name: {stage: run_dir / rel for stage, rel in (m.get("stages") or {}).items()}
            for name, m in models.items()
        }
    single: dict[str, Path] = {}
    for stage, marker in (
        ("report", "sequences.parquet"),
        ("exposure", "exposure.parquet"),
        ("mia", "mia.parquet"),
        ("probe", "likelihoods.parquet"),
    ):
        if (run_dir / marker).exists():
            single[stage] = run_dir
    return {"run": single}


def _read_parquet(path: Path) -> Any:
    import pandas as pd

    return pd.read_parquet(path) if path.exists() else None


def _report_k(report_dir: Path | None) -> str:
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


def _sequence_table(df: Any, table_id: str, show_text: bool, limit: int) -> tuple[str, str]:
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
                cells.append(f'<td class="num" data-v="{num}">{_fmt(v)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cls = "sortable hidden-text" if show_text else "sortable"
    return (
        f'<table id="{table_id}" class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>',
        note,
    )


def _figure_html(fig: Any) -> str:
    fig.update_layout(height=380, margin=dict(l=50, r=20, t=50, b=45), template="plotly_white")
    return str(fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))


def _plots(stage_dirs: dict[str, dict[str, Path]], run_dir: Path, show_text: bool = False) -> list[str]:
    """Every table and plot of the page's Plots section, in order."""
    plots: list[str] = _stage_tables(stage_dirs)
    plots += _snapshot_plots(stage_dirs)
    plots += _exposure_plot(stage_dirs, show_text)
    plots += _roc_plot(stage_dirs)
    for name, stages in stage_dirs.items():
        plots += _probe_plots(name, stages.get("probe"))
    plots += _margins_plot(run_dir)
    return plots


def _snapshot_plots(stage_dirs: dict[str, dict[str, Path]]) -> list[str]:
    """Per-epoch leakage (paper 001 Fig. 5), one plot per model with a snapshots study."""
    import plotly.graph_objects as go

    plots = []
    for name, stages in stage_dirs.items():
        d = stages.get("report")
        snap = _read_parquet(d / "snapshots.parquet") if d else None
        if snap is not None and "epoch" in snap.columns and "unique_sequences" in snap.columns:
            fig = go.Figure(
                go.Scatter(x=snap["epoch"], y=snap["unique_sequences"], mode="lines+markers", name=name)
            )
            fig.update_layout(
                title=f"Unique leaked sequences per epoch — {name}",
                xaxis_title="epoch",
                yaxis_title="# unique",
            )
            plots.append(_figure_html(fig))
    return plots


def _exposure_plot(stage_dirs: dict[str, dict[str, Path]], show_text: bool) -> list[str]:
    """Canary exposures of every model, grouped bars (none when no model ran the exposure stage)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, stages in stage_dirs.items():
        d = stages.get("exposure")
        exp = _read_parquet(d / "exposure.parquet") if d else None
        col = next((c for c in ("exposure_bits", "exposure") if exp is not None and c in exp.columns), None)
        if col and exp is not None:
            # the secrets are what the audit protects: in hover text only when the report shows text
            label = exp["secret"].astype(str) if show_text and "secret" in exp.columns else None
            fig.add_bar(
                x=[f"canary {i + 1}" for i in range(len(exp))], y=exp[col], name=name, hovertext=label
            )
    if not fig.data:
        return []
    fig.update_layout(
        title="Canary exposure (bits; max ≈ log2 |R|)", yaxis_title="exposure (bits)", barmode="group"
    )
    return [_figure_html(fig)]


def _roc_plot(stage_dirs: dict[str, dict[str, Path]]) -> list[str]:
    """Membership inference ROC curves of every model (the headline attack shown, the others hidden)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, stages in stage_dirs.items():
        d = stages.get("mia")
        roc = _read_parquet(d / "roc.parquet") if d else None
        if roc is not None and {"fpr", "tpr"} <= set(roc.columns):
            col = next((c for c in ("curve", "method") if c in roc.columns), None)
            groups = roc.groupby(col) if col else [("perplexity", roc)]
            headline = _summary_of(d).get("mia_attack", "perplexity")
            for method, part in groups:
                # the headline attack is shown; the other scores are one legend click away
                shown = str(method) == f"individual/{headline}" or col is None
                fig.add_scatter(
                    x=part["fpr"],
                    y=part["tpr"],
                    mode="lines",
                    name=f"{name}: {method}",
                    visible=True if shown else "legendonly",
                )
    if not fig.data:
        return []
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dot", color="gray"), name="chance")
    fig.update_layout(
        title="Membership inference ROC",
        xaxis_title="false positive rate",
        yaxis_title="true positive rate",
    )
    return [_figure_html(fig)]


def _probe_plots(name: str, d: Path | None) -> list[str]:
    """Target vs null likelihood densities and the γ<k curves of one model (paper 003 Fig. 3)."""
    import numpy as np
    import plotly.graph_objects as go

    plots = []
    lk = _read_parquet(d / "likelihoods.parquet") if d else None
    if lk is not None and {"likelihood", "null_likelihood", "target_type"} <= set(lk.columns):
        fig = go.Figure()
        for ttype, part in lk.groupby("target_type"):
            for col, label in (("likelihood", "target"), ("null_likelihood", "null")):
                vals = np.log10(np.clip(part[col].astype(float).to_numpy(), 1e-300, None))
                fig.add_histogram(
                    x=vals, name=f"{ttype} {label}", opacity=0.6, histnorm="probability density"
                )
        fig.update_layout(
            title=f"PII likelihood, target vs null — {name}",
            xaxis_title="log10 likelihood",
            barmode="overlay",
        )
        plots.append(_figure_html(fig))
    curve = _read_parquet(d / "gamma_curve.parquet") if d else None
    if (
        curve is not None
        and {"k", "gamma"} <= set(curve.columns)
        and not (curve["gamma"].fillna(0) > 0).any()
    ):
        plots.append(
            f'<p class="muted empty-plot"><b>γ&lt;k — {html.escape(name)}:</b> no plot: no probed PII was '
            f"revealed within k queries for any k (γ&lt;k = 0 at all {len(curve)} points).</p>"
        )
    elif curve is not None and {"k", "gamma"} <= set(curve.columns):
        fig = go.Figure()
        groups = curve.groupby("target_type") if "target_type" in curve.columns else [("all", curve)]
        for ttype, part in groups:
            fig.add_scatter(x=part["k"], y=part["gamma"], mode="lines", name=str(ttype))
        fig.update_layout(
            title=f"γ<k: share of PII revealed within k queries — {name}",
            xaxis_type="log",
            xaxis_title="k",
            yaxis_title="γ<k",
            yaxis_range=[0, 1],
        )
        plots.append(_figure_html(fig))
    return plots


def _margins_plot(run_dir: Path) -> list[str]:
    """The KART risk margins of an audit's ``kart/margins.json`` as bars with 95 % intervals."""
    import plotly.graph_objects as go

    margins_path = run_dir / "kart" / "margins.json"
    if not margins_path.exists():
        return []
    margins = json.loads(margins_path.read_text())
    pairs = margins.get("margins", [])
    if not pairs:
        return []
    fig = go.Figure(
        go.Bar(
            x=[f"{p['anchor']} vs {p['weakened']}" for p in pairs],
            y=[p["margin"] for p in pairs],
            marker_color=[_margin_colour(p) for p in pairs],
            error_y=_margin_error_bars(pairs),
        )
    )
    fig.update_layout(
        title="KART risk margins, pp (grey: 95% interval contains 0)", yaxis_title="margin (pp)"
    )
    note = margins.get("multiplicity_note")
    return [_figure_html(fig) + (f'<p class="muted">{html.escape(note)}</p>' if note else "")]


def _margin_colour(pair: dict[str, Any]) -> str:
    """Grey for a margin whose 95 % interval contains 0 (noise), red for a significant inversion."""
    if pair.get("significant") is False or pair["margin"] is None:
        return "#b8bcc6"
    return "#b42318" if pair["margin"] < 0 else "#2e5aac"


def _margin_error_bars(pairs: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not all(p.get("ci_low") is not None and p["margin"] is not None for p in pairs):
        return None
    return {
        "type": "data",
        "symmetric": False,
        "array": [p["ci_high"] - p["margin"] for p in pairs],
        "arrayminus": [p["margin"] - p["ci_low"] for p in pairs],
    }


def _summary_of(stage_dir: Path | None) -> dict[str, Any]:
    p = None if stage_dir is None else stage_dir / "summary.json"
    if p is None or not p.exists():
        return {}
    return dict(json.loads(p.read_text(encoding="utf-8")))


def _html_table(title: str, head: list[str], rows: list[list[Any]], note: str = "") -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f'<td class="num">{_fmt(v)}</td>' for v in r) + "</tr>" for r in rows)
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
        f"{_fmt(ext.get('num_samples'))} samples generated with no prompt about the training data "
        f"(Carlini et al. 2021); a sample counts when at least {_fmt(min_tokens)} of its tokens occur "
        "verbatim in the training corpus."
    )
    return [_html_table(f"Untargeted extraction — {name}", ["measure", "value"], rows, note)]


def _stage_tables(stage_dirs: dict[str, dict[str, Path]]) -> list[str]:
    """Every membership attack's numbers, probing's members vs controls, and extraction, as tables."""
    out = []
    for name, stages in stage_dirs.items():
        mia = _summary_of(stages.get("mia"))
        if mia.get("metrics"):
            out.append(_mia_table(name, mia))
            out.extend(_blind_baseline_block(name, mia))
        groups = _summary_of(stages.get("probe")).get("groups")
        if groups:
            out.append(_probe_groups_table(name, groups))
        out.extend(_extraction_block(name, _summary_of(stages.get("extract"))))
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
        f"Members > controls: exact match Fisher p = {_fmt(t.get('exact_match_fisher_p'))}, "
        f"ln(target/null) Mann-Whitney p = {_fmt(t.get('log_ratio_mann_whitney_p'))}. Controls are "
        "people whose own documents were held out of training (their PII can still appear in others' "
        "quoted replies)."
    )
    head = [
        "group",
        "subjects",
        "exact match",
        "mean ln(target/null)",
        "Wilcoxon p (raw)",
        "Wilcoxon p (log)",
    ]
    return _html_table(f"PII probing, members vs controls — {name}", head, rows, note)


def _comparison(headlines: dict[str, dict[str, Any]]) -> str | None:
    if len(headlines) < 2:
        return None
    metrics = [k for k in LABELS if any(k in h for h in headlines.values())]
    head = "<th>Model</th>" + "".join(f"<th>{html.escape(LABELS[k])}</th>" for k in metrics)
    rows = "".join(
        "<tr><td>"
        + html.escape(name)
        + "</td>"
        + "".join(
            f'<td class="num" data-v="{h.get(k, "")}">{card_value(k, h) if k in h or k == "leakage_epsilon" and "log_leakage_epsilon" in h else _fmt(None)}</td>'
            for k in metrics
        )
        + "</tr>"
        for name, h in headlines.items()
    )
    return f'<table id="comparison-table" class="sortable"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _scenarios_table(summary: dict[str, Any]) -> str | None:
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


def _skipped_table(summary: dict[str, Any]) -> str | None:
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


def _release_views(
    summary: dict[str, Any], verdict: Verdict, headlines: dict[str, Any]
) -> list[dict[str, Any]]:
    """One release card per model: its verdict, the people affected, and the analyses that did not run."""
    releases = (summary.get("release") or {}).get("models") or {}
    rows = verdict_rows(verdict)
    seen: set[str] = set()
    for r in rows:  # a limit's rationale once per page, under its first row
        if r["rationale"] in seen:
            r["rationale"] = ""
        seen.add(r["rationale"])
    views = []
    for name in headlines:
        rel = releases.get(name) or {}
        status = verdict.model_status(name)
        views.append(
            {
                "name": name,
                "status": status,
                "status_word": STATUS_WORDS[status],
                "rows": [r for r in rows if r["model"] == name],
                "people": people_lines(rel.get("people_affected")),
                "not_run": rel.get("not_run") or [],
            }
        )
    return views


def code_spans(text: str) -> Any:
    """``text`` escaped, with each `backticked` part as ``<code>`` (the fixes name config keys and commands).

    Example:
        >>> str(code_spans("set `level: twin` <now>"))
        'set <code>level: twin</code> &lt;now&gt;'
    """
    from markupsafe import Markup

    parts = html.escape(str(text), quote=False).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick stays a backtick
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return Markup("".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)))


def _of(n: int, total: int | None) -> str:
    return f"{n}" if total is None else f"{n} of {total}"


def _probe_split(probing: dict[str, Any]) -> str:
    """ ": 3 of 37 trained on, 0 of 8 held-out controls (what guessing gives)" — or that no control was
    probed, rather than "0 held-out controls" that reads like a measurement."""
    if "members" not in probing:
        return ""
    members = f"{_of(probing['members'], probing.get('members_probed'))} trained on"
    if probing.get("controls_probed") == 0:
        return f": {members}; no held-out control was probed, so nothing shows what guessing gives"
    controls = _of(probing["controls"], probing.get("controls_probed"))
    return f": {members}, {controls} held-out controls (what guessing gives)"


def people_lines(people: dict[str, Any] | None) -> list[str]:
    """The release summary's "people affected", one sentence per source."""
    if people is None:
        return []
    lines = []
    leaked = people.get("leaked_pii")
    if leaked is not None:
        by_type = ", ".join(f"{t} {n}" for t, n in sorted(leaked["by_type"].items(), key=lambda kv: -kv[1]))
        lines.append(
            f"{plural(leaked['people'], 'person')} whose PII the model reproduces verbatim in text only they wrote"
            + (f" ({by_type})" if by_type else "")
            + f" — leakage report at k = {leaked.get('k')}, sequences of at least {plural(leaked.get('min_tokens'), 'token')}."
        )
    probing = people.get("probing")
    if probing is not None:
        by_type = ", ".join(f"{t} {n}" for t, n in probing["by_type"].items())
        lines.append(
            (
                f"{probing['people']} of {plural(probing['probed'], 'probed person')}"
                if probing.get("probed") is not None
                else plural(probing["people"], "probed person")
            )
            + " whose PII the model generated verbatim"
            + (f" ({by_type})" if by_type else "")
            + _probe_split(probing)
            + "."
        )
    if not lines:
        lines.append("Not measured: no leakage report with a PII policy and no PII probing ran.")
    return lines


def render_report(
    run_dir: str | Path,
    out_path: str | Path | None = None,
    *,
    show_text: bool = False,
    max_rows: int = 2000,
    limits: tuple[Limit, ...] | None = None,
    allow_not_evaluable: bool = False,
) -> Path:
    """Write ``report.html`` for a run directory and return its path (owner-only permissions).

    The page opens with the release summary: per model the verdict under ``limits`` (default: the
    ``gate:`` section of the audit config that wrote the run; :mod:`lmleak.render.verdict`, the table
    ``lmleak gate`` prints), the people affected, and every analysis that did not run."""
    import plotly.offline  # lazy: optional [report] extra, and a 0.3 s import
    from jinja2 import Environment, PackageLoader, select_autoescape

    run = Path(run_dir)
    summary = read_summary(run)
    headlines = collect_headlines(run)
    stage_dirs = _stage_dirs(run, summary)
    _refuse_text_of_redacted(run, summary, stage_dirs, show_text)
    views = _model_views(summary, headlines, stage_dirs, show_text, max_rows)
    cfg_limits, cfg_allow, profile = limits_from_config(gate_section(summary))
    verdict = verdict_of(
        summary,
        headlines,
        cfg_limits if limits is None else limits,
        allow_not_evaluable=cfg_allow if limits is None else allow_not_evaluable,
        profile=profile if limits is None else None,
    )
    env = Environment(
        loader=PackageLoader("lmleak.render", "templates"), autoescape=select_autoescape(["html", "j2"])
    )
    env.filters["code"] = code_spans
    page = env.get_template("report.html.j2").render(
        title=summary.get("title") or run.name,
        subtitle=summary.get("subtitle") or f"{len(views)} model(s) audited",
        show_text=show_text,
        models=views,
        release=_release_views(summary, verdict, headlines),
        verdict_passed=verdict.passed if verdict.checks else None,
        verdict_profile=verdict.profile,
        verdict_allow=verdict.allow_not_evaluable,
        comparison=_comparison(headlines),
        plots=_plots(stage_dirs, run, show_text),
        scenarios=_scenarios_table(summary),
        skipped=_skipped_table(summary),
        people=people_at_risk(run, summary),  # issue 27: templates/people_at_risk.html.j2
        plotly_js=plotly.offline.get_plotlyjs(),
        version=__version__,
        run_dir=str(run),
        provenance=provenance_lines(summary),
    )
    return atomic_write_text(Path(out_path) if out_path else run / "report.html", page)


def _model_line(name: str, rec: dict[str, Any], cache: dict[str, Any] | None) -> str:
    parts = [f"model {name}"]
    if rec.get("backend") == "http":
        parts.append(f"server {rec.get('server')}, model id {rec.get('model_id')}, tier {rec.get('tier')}")
    else:
        parts.append(
            f"{rec.get('backend') or 'backend not recorded'} on {rec.get('device') or '?'}, {rec.get('dtype') or '?'}"
        )
    fp = rec.get("fingerprint")
    parts.append(
        f"fingerprint {str(fp)[:16]} ({rec.get('hash')})" if fp else "no fingerprint (no local files)"
    )
    if cache:
        parts.append(f"cache: {plural(cache.get('hits'), 'hit')}, {plural(cache.get('misses'), 'miss')}")
    return " · ".join(parts)


def provenance_lines(summary: dict[str, Any]) -> list[str]:
    """The report footer's provenance: each model's backend, device, dtype and fingerprint (an API's
    server, model id and cache use), and the corpus file's size and SHA-256 (``provenance`` in
    ``summary.json``; nothing is computed here).

    Example:
        >>> provenance_lines({"provenance": {"corpus": {"path": "/d/c.jsonl", "size": 1200, "sha256": "ab" * 32}}})
        ['corpus /d/c.jsonl: 1,200 bytes, sha256 abababababababab…']
    """
    prov = summary.get("provenance") or {}
    models = dict(prov.get("models") or {})
    if isinstance(prov.get("model"), dict):
        models[str(summary.get("model") or "model")] = prov["model"]
    caches = {name: (m or {}).get("cache") for name, m in (summary.get("models") or {}).items()}
    lines = [_model_line(name, rec, caches.get(name) or summary.get("cache")) for name, rec in models.items()]
    corpus = prov.get("corpus")
    if isinstance(corpus, dict):
        size = corpus.get("size")
        sha = corpus.get("sha256")
        lines.append(
            f"corpus {corpus.get('path')}: "
            + (f"{size:,} bytes, sha256 {str(sha)[:16]}…" if size is not None and sha else "not hashed")
        )
    return lines


def _refuse_text_of_redacted(
    run: Path, summary: dict[str, Any], stage_dirs: dict[str, dict[str, Path]], show_text: bool
) -> None:
    """Raise ConfigError when ``show_text`` is asked of a run (or a model's stage) that is redacted."""
    redacted = [
        name
        for name, stages in stage_dirs.items()
        if summary.get("redacted") is True or any(_summary_of(d).get("redacted") for d in stages.values())
    ]
    if summary.get("redacted") is True and not redacted:
        redacted = [str(summary.get("title") or run.name)]
    if show_text and redacted:
        raise ConfigError(
            f"the report of {', '.join(redacted)} is redacted; a redacted run is rendered without text",
            field="--show-text",
            hint="render without --show-text, or render an unredacted run",
        )


def _model_views(
    summary: dict[str, Any],
    headlines: dict[str, dict[str, Any]],
    stage_dirs: dict[str, dict[str, Path]],
    show_text: bool,
    max_rows: int,
) -> list[ModelView]:
    """One view per audited model: its headline cards and its leaked-sequences table."""
    models_meta = summary.get("models") or {}
    views = []
    for i, (name, headline) in enumerate(headlines.items(), start=1):
        scen = (models_meta.get(name) or {}).get("scenarios") or {}
        report_k = _report_k(stage_dirs.get(name, {}).get("report"))
        cards = [
            {
                "label": LABELS[k],
                "value": card_value(k, headline),
                "explanation": EXPLANATIONS[k]
                + _card_detail(k, headline)
                + (_k_note(k, headline) or (report_k if METRIC_STAGE.get(k) == "report" else "")),
                "scenario": describe_scenario(
                    scen.get(METRIC_STAGE.get(k, ""), summary.get("scenario") if name == "run" else None)
                ),
                "interval": _card_interval(k, headline),
                "null": _card_null(k, headline),
            }
            for k in LABELS
            if k in headline or (k == "leakage_epsilon" and "log_leakage_epsilon" in headline)
        ]
        seq_html, note = None, ""
        report_dir = stage_dirs.get(name, {}).get("report")
        seqs = _read_parquet(report_dir / "sequences.parquet") if report_dir else None
        if seqs is not None and len(seqs):
            seq_html, note = _sequence_table(seqs, f"seq-{i}", show_text, max_rows)
        skipped = tuple((models_meta.get(name) or {}).get("skipped") or {})
        views.append(ModelView(name, cards, seq_html, note, skipped))
    return views


def render_run(run_dir: str | Path, out_path: str | Path | None = None, *, show_text: bool = False) -> Path:
    """``lmleak render``: refuse an interrupted or inconsistent run (:func:`~lmleak.runs.check_run`),
    then :func:`render_report`; returns the HTML's path."""
    check_run(run_dir)  # never render an interrupted or inconsistent run as if it were complete
    return render_report(run_dir, out_path, show_text=show_text)
