"""`lmleak report --engine ray` gives the same ledger and report as the local engine (issue 9)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner


def _report(root, corpus, model, name, *extra):
    from lmleak.cli.main import app

    out = root / name
    res = CliRunner().invoke(
        app,
        [
            "report",
            "--model",
            str(model),
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            "--k",
            "1",
            "3",
            "--json",
            *extra,
        ],
    )
    assert res.exit_code == 0, res.output
    return out


def test_ray_engine_report_equals_local(small_setup):
    pytest.importorskip("ray")
    from lmleak.ledger.ledger import read_ledger

    root, corpus, model = small_setup
    local = _report(root, corpus, model, "local")
    ray_run = _report(root, corpus, model, "ray", "--engine", "ray", "--num-workers", "2")
    a, b = read_ledger(local), read_ledger(ray_run)
    assert a.doc_ids == b.doc_ids and a.user_ids == b.user_ids
    for field in ("offsets", "token_ids", "ranks", "logprobs", "top1_logprobs"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert a.meta == b.meta
    sa = json.loads((local / "summary.json").read_text())
    sb = json.loads((ray_run / "summary.json").read_text())
    assert sa["by_k"] == sb["by_k"] and sa["num_tokens"] == sb["num_tokens"] > 0
    # several shards were really spread over the actors: the pass used the Ray manifest
    manifest = json.loads((ray_run / "ledger" / "manifest.json").read_text())
    assert manifest["complete"] and sum(s["items"] for s in manifest["shards"].values()) == a.num_docs
