"""Figures of paper 003 (Fig. 3a-c, Fig. 6): the PNGs are written, and each plots the expected series."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import lmleak.probe.figures as figures_module
from lmleak.figures import save_figure
from lmleak.probe.figures import write_figures
from lmleak.probe.metrics import gamma_curve


def _likelihoods() -> pd.DataFrame:
    """Three templates per (target type, subject); the null is always less likely than the target."""
    rng = np.random.default_rng(0)
    rows = []
    for t in ("email", "phone"):
        for s in range(6):
            for template in range(3):
                lp = float(rng.uniform(-30, -2))
                rows.append(
                    {
                        "target_type": t,
                        "subject_id": f"s{s}",
                        "template": template,
                        "log_likelihood": lp,
                        "null_log_likelihood": lp - float(rng.uniform(1, 5)),
                        "normalized_likelihood": math.exp(lp / 4),
                        "null_normalized_likelihood": math.exp((lp - 3) / 4),
                    }
                )
    return pd.DataFrame(rows)


@pytest.fixture()
def drawn(monkeypatch):
    """Record each figure's axes (titles and line data) as it is saved, then save it for real."""
    seen: dict[str, list[dict]] = {}

    def spy(fig, path, **kw):
        seen[path.name] = [
            {
                "title": ax.get_title(),
                "lines": {ln.get_label(): (ln.get_xdata(), ln.get_ydata()) for ln in ax.get_lines()},
            }
            for ax in fig.axes
        ]
        return save_figure(fig, path, **kw)

    monkeypatch.setattr(figures_module, "save_figure", spy)
    return seen


def test_three_valid_pngs_are_written(tmp_path, drawn):
    paths = write_figures(_likelihoods(), tmp_path)
    assert [p.name for p in paths] == ["density_likelihood.png", "density_normalized.png", "gamma_curve.png"]
    for p in paths:
        with Image.open(p) as im:
            im.verify()  # raises on a truncated or corrupt file
            assert im.format == "PNG"
        with Image.open(p) as im:
            assert im.size[0] > 100 and im.size[1] > 100
        assert oct(p.stat().st_mode & 0o777) == "0o600"


def test_gamma_curve_plots_each_type_from_the_best_template_per_subject(tmp_path, drawn):
    df = _likelihoods()
    write_figures(df, tmp_path)
    (ax,) = drawn["gamma_curve.png"]
    assert set(ax["lines"]) == {"email", "phone"}
    for t in ("email", "phone"):
        best = {}  # max over templates per subject, by hand (A.3)
        for r in df[df["target_type"] == t].itertuples():
            best[r.subject_id] = max(best.get(r.subject_id, -math.inf), r.log_likelihood)
        want = gamma_curve([math.exp(v) for v in best.values()])
        x, y = ax["lines"][t]
        assert list(x) == [k for k, _ in want]
        assert list(y) == pytest.approx([g for _, g in want])


def test_density_figures_have_one_panel_per_type_with_target_and_null(tmp_path, drawn):
    df = _likelihoods()
    write_figures(df, tmp_path)
    for name in ("density_likelihood.png", "density_normalized.png"):
        axes = drawn[name]
        assert [a["title"] for a in axes] == ["email", "phone"]
        for a in axes:
            assert {"target", "null"} <= set(a["lines"])  # the KDE curves (the means are dashed lines)
    # the dashed mean line of the target sits at the mean of the per-subject maxima
    email = df[df["target_type"] == "email"].groupby("subject_id")["log_likelihood"].max()
    xs = [x for lab, (x, _) in drawn["density_likelihood.png"][0]["lines"].items() if lab.startswith("_")]
    assert any(x[0] == pytest.approx(email.mean()) for x in xs)
