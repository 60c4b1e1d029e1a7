"""Third-party warnings during training are caught and restated in lmleak's words (issue 33): Opacus'
raw ``UserWarning`` with its site-packages path was printed in the middle of `lmleak train --mode dp`."""

from __future__ import annotations

import json
import warnings

import pytest

from lmleak.train.restated import KNOWN, restated_warnings


def test_opacus_largest_alpha_warning_is_restated_once_without_a_path(capsys):
    """The real warning from opacus's RDP conversion (the best order is the largest one tried), raised
    twice: one line in lmleak's words, nothing on stderr."""
    from opacus.accountants.analysis.rdp import get_privacy_spent

    with restated_warnings() as lines:
        for _ in range(2):
            get_privacy_spent(orders=[2.0, 3.0], rdp=[10.0, 0.1], delta=1e-5)
    assert lines == [KNOWN["Optimal order is the largest alpha"]]
    err = capsys.readouterr().err
    assert "site-packages" not in err and "UserWarning" not in err


def test_an_unknown_third_party_warning_names_its_package_and_lmleaks_own_are_shown(capsys):
    with restated_warnings() as lines:
        warnings.warn_explicit(
            "Something\nodd", UserWarning, "/venv/lib/python3.11/site-packages/torch/nn/x.py", 7
        )
    assert lines[0] == "torch warned: Something odd"
    assert capsys.readouterr().err == ""
    from lmleak.train import restated

    with pytest.warns(UserWarning, match="ours"), restated_warnings() as lines:
        warnings.warn_explicit("ours", UserWarning, restated.__file__, 1)  # raised inside lmleak: as usual
    assert lines == []


@pytest.mark.slow
def test_lmleak_train_dp_restates_opacus_warning_in_its_summary(tmp_path):
    """The reproduction: `lmleak train --mode dp --target-epsilon 8` (the noise search goes through
    opacus's RDP conversion): no site-packages path in the output, the restated line among the
    summary's warnings (27 s on two shared cores)."""
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    corpus = tmp_path / "c.jsonl"
    rows = [
        {"user_id": f"u{i % 8}", "text": f"my name is user {i % 8} and my phone is 555 01{i % 10:02d}"}
        for i in range(64)
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["train", "--corpus", str(corpus), "--out", str(tmp_path / "m"), "--mode", "dp", "--epochs", "1"]
    res = CliRunner().invoke(app, [*args, "--target-epsilon", "8", "--holdout-users", "0.25", "--json"])
    assert res.exit_code == 0, res.output
    assert "site-packages" not in res.output
    summary = json.loads(res.stdout)
    assert KNOWN["Optimal order is the largest alpha"] in summary["warnings"]
