"""``lmleak confidentiality`` prints the paper's guarantees; --json keys are named after them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app


def test_json_output_pins_figure_6(tmp_path):
    r = CliRunner().invoke(
        app,
        [
            "confidentiality",
            "--epsilon",
            "1.0",
            "--delta",
            "1e-5",
            "--gamma",
            "0.1",
            "--json",
            "--plot",
            str(tmp_path / "fig6.png"),
        ],
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["bayesian_epsilon"] == pytest.approx(0.1586, abs=1e-4)
    assert data["bayesian_delta"] == pytest.approx(1e-6)
    assert (tmp_path / "fig6.png").stat().st_size > 1000


def test_a_gamma_outside_0_1_is_a_clear_error():
    r = CliRunner().invoke(app, ["confidentiality", "--epsilon", "1.0", "--gamma", "1.5"])
    assert r.exit_code == 2 and "gamma" in r.output


def test_the_json_and_the_table_show_the_same_rounded_numbers():
    import json
    import re

    from typer.testing import CliRunner

    from lmleak.cli.main import app

    args = ["confidentiality", "--epsilon", "1.7", "--delta", "3e-5", "--gamma", "0.13"]
    js = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    table = CliRunner().invoke(app, args).stdout
    row = next(line for line in table.splitlines() if "Prop. 6" in line)
    eps, delta = re.findall(r"│\s+([0-9.e+-]+)\s+", row)[:2]
    assert float(eps) == js["bayesian_epsilon"] and float(delta) == js["bayesian_delta"]
    assert len(str(js["bayesian_epsilon"]).replace("0.", "").lstrip("0")) <= 4  # 4 significant digits
