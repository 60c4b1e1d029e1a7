"""Figures of paper 003: likelihood densities target vs null (Fig. 3a-b; Fig. 6 for Eq. 4) and the
γ<k curve (Fig. 3c). Max over templates per subject, as in A.3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from lmleak.figures import pyplot, save_figure
from lmleak.probe.metrics import gamma_curve


def write_figures(lik_df: Any, out_dir: str | Path) -> list[Path]:
    """Write ``density_likelihood.png``, ``density_normalized.png`` and ``gamma_curve.png``."""
    from scipy.stats import gaussian_kde  # lazy: scipy.stats is a slow import

    plt = pyplot()

    out = Path(out_dir)
    g = (
        lik_df.groupby(["target_type", "subject_id"])
        .agg(
            lp=("log_likelihood", "max"),
            nlp=("null_log_likelihood", "max"),
            norm=("normalized_likelihood", "max"),
            nnorm=("null_normalized_likelihood", "max"),
        )
        .reset_index()
    )
    types = sorted(g["target_type"].unique())
    paths = []
    for fname, (a, b), label in (
        ("density_likelihood.png", ("lp", "nlp"), "log-likelihood (Eq. 2)"),
        ("density_normalized.png", ("norm", "nnorm"), "log normalized likelihood (Eq. 4)"),
    ):
        fig, axes = plt.subplots(1, len(types), figsize=(4 * len(types), 3), squeeze=False)
        for ax, t in zip(axes[0], types, strict=True):
            sub = g[g["target_type"] == t]
            for col, name, color in ((a, "target", "tab:blue"), (b, "null", "tab:orange")):
                x = sub[col].to_numpy(dtype=float)
                if col in ("norm", "nnorm"):
                    x = np.log(np.maximum(x, 1e-300))
                if len(x) > 1 and np.ptp(x) > 0:
                    grid = np.linspace(x.min() - 1, x.max() + 1, 200)
                    ax.plot(grid, gaussian_kde(x)(grid), color=color, label=name)
                ax.axvline(x.mean(), color=color, linestyle="--")
            ax.set_title(t)
            ax.set_xlabel(label)
        axes[0][0].legend()
        fig.tight_layout()
        paths.append(save_figure(fig, out / fname, dpi=100))
    fig, ax = plt.subplots(figsize=(5, 3))
    for t in types:
        curve = gamma_curve(np.exp(g[g["target_type"] == t]["lp"].to_numpy()))
        ax.plot([k for k, _ in curve], [v for _, v in curve], label=t)
    ax.set_xscale("log")
    ax.set_xlabel("k (queries)")
    ax.set_ylabel("γ<k")
    ax.legend()
    fig.tight_layout()
    paths.append(save_figure(fig, out / "gamma_curve.png", dpi=100))
    return paths
