"""lmleak.train.guarantees: the confidentiality report of ``lmleak confidentiality``, rounded, and Fig. 6."""

from __future__ import annotations

import math

import pytest

from lmleak.errors import ConfigError
from lmleak.train.confidentiality import confidentiality_report
from lmleak.train.guarantees import (
    ConfidentialitySettings,
    confidentiality_guarantees,
    plot_amplification,
    significant,
)


def test_significant_rounds_floats_only_and_keeps_zero_inf_and_nan():
    assert significant(0.123456) == 0.1235 and significant(123456.7) == 123500.0
    assert significant(1.0000000000000002e-06) == 1e-06 and significant(3, 2) == 3
    assert significant(0.0) == 0.0 and significant(math.inf) == math.inf and math.isnan(significant(math.nan))


@pytest.mark.parametrize("occurrences", [None, 9])
def test_guarantees_are_the_report_rounded_to_four_significant_digits(occurrences):
    raw = confidentiality_report(1.7, 3e-5, 0.13, unique_secrets=5, occurrences=occurrences, delta2=0.01)
    got = confidentiality_guarantees(
        ConfidentialitySettings(1.7, 3e-5, 0.13, unique_secrets=5, occurrences=occurrences, delta2=0.01)
    )
    assert got.keys() - {"notes"} == raw.keys()
    assert got["notes"][0].startswith(f"group bounds charge {raw['group_missed']} missed secrets of 5")
    for k, v in raw.items():  # the oracle: each value to 4 significant digits, by formatting
        assert got[k] == (float(f"{v:.4g}") if isinstance(v, float) and math.isfinite(v) and v else v), k
    assert len(got["notes"]) == 1  # delta2 was given: no assumption to state
    assert got["bayesian_epsilon"] == pytest.approx(raw["bayesian_epsilon"], rel=1e-3)


def test_a_plot_is_written_and_named_and_bad_values_are_config_errors(tmp_path):
    got = confidentiality_guarantees(ConfidentialitySettings(1.0, 1e-5, 0.1, plot=tmp_path / "fig6.png"))
    assert got["plot"] == str(tmp_path / "fig6.png") and (tmp_path / "fig6.png").stat().st_size > 1000
    assert plot_amplification(2.0, tmp_path / "b.png") == tmp_path / "b.png"
    with pytest.raises(ConfigError, match="gamma"):
        confidentiality_guarantees(ConfidentialitySettings(1.0, 1e-5, 1.5, plot=tmp_path / "never.png"))
    assert not (tmp_path / "never.png").exists()
