"""The demo's training summary: perplexity, ε, measured γ, D_pub share, tokenizer, PPL ordering."""

from __future__ import annotations

import json

from lmleak.audit.demo import training_lines


def _model(root, name, ppl, privacy=None):
    d = root / name
    d.mkdir()
    (d / "train.json").write_text(json.dumps({"final": {"val_perplexity": ppl}}))
    if privacy is not None:
        (d / "privacy.json").write_text(json.dumps(privacy))


def test_the_demo_prints_measured_gamma_public_share_tokenizer_and_the_ppl_ordering(tmp_path):
    _model(tmp_path, "plain", 12.0, {"tokenizer_source": "public"})
    _model(tmp_path, "dp-sgd", 40.0, {"epsilon": 2.5, "tokenizer_source": "public"})
    _model(
        tmp_path,
        "crt",
        55.0,
        {
            "epsilon": 2.5,
            "gamma": 0.014,
            "gamma_source": "measured",
            "gamma_upper95": 0.03,
            "tokenizer_source": "public",
            "split": {"public_sentence_share": 0.023, "public_word_share": 0.041},
        },
    )
    lines = training_lines(tmp_path, ["plain", "dp-sgd", "crt"])
    crt = next(line for line in lines if line.startswith("crt:"))
    assert "γ 0.014 (measured, 95% upper 0.030)" in crt and "D_pub 2.3% of sentences / 4.1% of words" in crt
    assert "tokenizer public" in crt and "ε 2.50" in crt
    assert lines[-1].startswith("validation PPL No-DP ≤ CRT ≤ DP-SGD does not hold")  # 55 > 40


def test_the_ordering_line_says_it_holds_when_crt_sits_between(tmp_path):
    for name, ppl in (("plain", 12.0), ("crt", 20.0), ("dp-sgd", 40.0)):
        _model(tmp_path, name, ppl, {})
    assert (
        training_lines(tmp_path, ["plain", "dp-sgd", "crt"])[-1]
        == "validation PPL No-DP ≤ CRT ≤ DP-SGD holds"
    )
