"""The report's plots (lmleak.render.plots)."""

from __future__ import annotations


def test_a_flat_gamma_curve_is_one_sentence_not_a_plot(tmp_path):
    import pandas as pd

    from lmleak.render.plots import _probe_plots

    write = tmp_path / "gamma_curve.parquet"
    pd.DataFrame({"target_type": ["email"] * 3, "k": [1, 10, 100], "gamma": [0.0, 0.0, 0.0]}).to_parquet(
        write
    )
    (flat,) = _probe_plots("m", tmp_path)
    assert flat.startswith('<p class="muted empty-plot">') and "γ&lt;k = 0 at all 3 points" in flat
    pd.DataFrame({"target_type": ["email"] * 3, "k": [1, 10, 100], "gamma": [0.0, 0.1, 0.3]}).to_parquet(
        write
    )
    (curve,) = _probe_plots("m", tmp_path)
    assert "plotly" in curve and "empty-plot" not in curve
