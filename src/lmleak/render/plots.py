"""The report's plots (plotly, inlined): snapshots, exposure, ROC, probing and the KART margins."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from lmleak.render.tables import read_parquet_or_none, stage_tables, summary_of


def _figure_html(fig: Any) -> str:
    fig.update_layout(height=380, margin=dict(l=50, r=20, t=50, b=45), template="plotly_white")
    return str(fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))


def plots_of(stage_dirs: dict[str, dict[str, Path]], run_dir: Path, show_text: bool = False) -> list[str]:
    """Every table and plot of the page's Plots section, in order."""
    plots: list[str] = stage_tables(stage_dirs)
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
        snap = read_parquet_or_none(d / "snapshots.parquet") if d else None
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
        exp = read_parquet_or_none(d / "exposure.parquet") if d else None
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
        roc = read_parquet_or_none(d / "roc.parquet") if d else None
        if roc is not None and {"fpr", "tpr"} <= set(roc.columns):
            col = next((c for c in ("curve", "method") if c in roc.columns), None)
            groups = roc.groupby(col) if col else [("perplexity", roc)]
            headline = summary_of(d).get("mia_attack", "perplexity")
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
    lk = read_parquet_or_none(d / "likelihoods.parquet") if d else None
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
    curve = read_parquet_or_none(d / "gamma_curve.parquet") if d else None
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
