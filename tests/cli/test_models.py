"""``lmleak train`` and ``lmleak eval``: the commands print what the library functions return."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.corpus import Corpus, Document
from lmleak.data.loaders import load_corpus
from lmleak.models.evaluation import evaluate_model
from lmleak.models.loading import load_model
from lmleak.train.config import TrainConfig
from lmleak.train.run import run_training

SMALL = [
    "--epochs",
    "1",
    "--seq-len",
    "16",
    "--vocab-size",
    "60",
    "--width",
    "16",
    "--heads",
    "2",
    "--layers",
    "1",
]
SUMMARY_KEYS = {
    "model_dir",
    "mode",
    "arch",
    "val_perplexity",
    "val_top1_accuracy",
    "val_top3_accuracy",
    "tokens_per_s",
    "epsilon",
    "delta",
    "held_out_users",
    "tokenizer_source",
    "gamma",
    "gamma_source",
    "public_sentence_share",
}


@pytest.fixture
def corpus_file(tmp_path):
    words = "the order arrived late please refund my card number is".split()
    docs = [
        Document(f"u{u}", f"u{u}-{d}", " ".join(words[(u + d + i) % len(words)] for i in range(12)))
        for u in range(8)
        for d in range(2)
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(d.to_dict()) + "\n" for d in Corpus(docs)))
    return path


def test_train_json_is_the_summary_of_the_library_run(corpus_file, tmp_path):
    r = CliRunner().invoke(
        app, ["train", "--corpus", str(corpus_file), "--out", str(tmp_path / "cli"), *SMALL, "--json"]
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert set(summary) == SUMMARY_KEYS
    cfg = TrainConfig(epochs=1, seq_len=16, vocab_size=60, n_embd=16, n_head=2, n_layer=1)
    lib = run_training(corpus_file, tmp_path / "lib", cfg)
    assert summary["model_dir"] == str(tmp_path / "cli")
    assert (summary["mode"], summary["arch"]) == ("nodp", "gpt")
    assert summary["held_out_users"] == list(lib.val_users)
    assert summary["val_perplexity"] == pytest.approx(lib.final["val_perplexity"], rel=1e-4)
    assert summary["epsilon"] is None and summary["tokenizer_source"] == lib.privacy["tokenizer_source"]
    assert json.loads((tmp_path / "cli" / "train.json").read_text())["val_users"] == summary["held_out_users"]


def test_train_prints_the_epoch_table_and_where_the_held_out_users_are(corpus_file, tmp_path):
    r = CliRunner().invoke(app, ["train", "--corpus", str(corpus_file), "--out", str(tmp_path / "m"), *SMALL])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "gpt trained (nodp)" in text and "val perplexity" in text
    assert "held out 1 of 8 users" in text and "holdout.json" in text
    assert "tokenizer learnt from:" in text and "DP: epsilon" not in text


def test_train_needs_both_public_and_private(corpus_file, tmp_path):
    r = CliRunner().invoke(
        app,
        ["train", "--corpus", str(corpus_file), "--out", str(tmp_path / "m"), "--public", str(corpus_file)],
    )
    assert r.exit_code == 2 and "--private" in r.output
    assert not (tmp_path / "m").exists()


def test_eval_json_is_evaluate_model_on_the_loaded_model(corpus_file, tmp_path):
    spec = f"fake:{corpus_file}"
    r = CliRunner().invoke(
        app,
        [
            "eval",
            "--model",
            spec,
            "--corpus",
            str(corpus_file),
            "--k",
            "1",
            "--k",
            "2",
            "--out",
            str(tmp_path / "e.json"),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    record = json.loads(r.stdout)
    lm = load_model(spec)
    expected = evaluate_model(lm, load_corpus(corpus_file), ks=(1, 2))
    start = {
        "bos_token_id": lm.bos_token_id,
        "scoring_convention": "every token after the start token is scored",
    }
    assert record == {"model": spec, "corpus": str(corpus_file), **start, **expected}
    assert json.loads((tmp_path / "e.json").read_text()) == record
