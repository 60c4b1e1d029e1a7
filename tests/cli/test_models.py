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
    # issue 27: the privacy unit and everything a release decision reads
    "dp_epsilon",
    "dp_delta",
    "privacy_unit",
    "max_sequences_per_user",
    "sampler",
    "sampler_warning",
    "epsilon_poisson_accountant",
    "users",
    "largest_user_sequences",
    "group_privacy_epsilon_largest_user",
    "group_privacy_delta_largest_user",
    "guarantee",
    "epsilon_statement",
    "warnings",
    "confidentiality",
    "reaudit_config",
    "reaudit_command",
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


def test_dp_training_without_flags_states_epsilon_per_person_and_how_to_reaudit(corpus_file, tmp_path):
    from lmleak.audit.config import load_config

    small = [*SMALL[:4], "--vocab-size", "300", *SMALL[6:]]
    plain = tmp_path / "plain"
    r = CliRunner().invoke(app, ["train", "--corpus", str(corpus_file), "--out", str(plain), *small])
    assert r.exit_code == 0, r.output
    dp = ["train", "--corpus", str(corpus_file), "--mode", "dp", "--noise-multiplier", "1.0", *small]
    r = CliRunner().invoke(app, [*dp, "--out", str(tmp_path / "dp"), "--replaces", str(plain)])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    priv = json.loads((tmp_path / "dp" / "privacy.json").read_text())
    assert priv["tokenizer_source"] == "public:smollm2-bpe-300" and priv["privacy_unit"] == "user"
    assert f"DP: epsilon = {priv['epsilon']:.3g} per person (user-level DP, delta = 1e-05" in text
    assert "lmleak audit" in text and "reaudit.yaml" in text
    # plain learnt its own vocabulary: perplexities are not comparable, and the run says so
    assert "not compared with" in text and "another tokenizer" in text
    cfg = load_config(tmp_path / "dp" / "reaudit.yaml")  # the printed command's config is valid
    assert [m.path for m in cfg.models] == [str((tmp_path / "dp").resolve()), str(plain.resolve())]
    r = CliRunner().invoke(app, [*dp, "--out", str(tmp_path / "seq"), "--privacy-unit", "sequence", "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["privacy_unit"] == "sequence" and summary["dp_epsilon"] == summary["epsilon"]
    assert summary["largest_user_sequences"] >= 2
    assert summary["group_privacy_epsilon_largest_user"] == pytest.approx(
        summary["largest_user_sequences"] * summary["dp_epsilon"]
    )
    assert "group privacy gives only" in summary["epsilon_statement"]


def test_a_shuffled_opacus_run_prints_both_epsilons_with_a_warning(corpus_file, tmp_path, monkeypatch):
    """An Opacus-style run with poisson_sampling=False: the Poisson accountant's ε does not hold."""
    from opacus import PrivacyEngine

    from lmleak.train.accounting import gaussian_epsilon

    seen = {}
    real = PrivacyEngine.make_private

    def spy(self, **kw):
        seen["poisson_sampling"] = kw["poisson_sampling"]
        return real(self, **kw)

    monkeypatch.setattr(PrivacyEngine, "make_private", spy)
    args = ["--arch", "lstm", "--mode", "dp", "--noise-multiplier", "2.0", "--privacy-unit", "sequence"]
    args += ["--tokenizer-from-private", "--batch-size", "2"]
    out = tmp_path / "shuffled"
    r = CliRunner().invoke(
        app,
        ["train", "--corpus", str(corpus_file), "--out", str(out), *SMALL, *args, "--sampler", "shuffle"],
    )
    assert r.exit_code == 0, r.output
    assert seen == {"poisson_sampling": False}
    priv = json.loads((out / "privacy.json").read_text())
    assert priv["sampler"] == "shuffle" and "not Poisson-sampled" in priv["sampler_warning"]
    assert priv["epsilon"] == pytest.approx(gaussian_epsilon(2.0, 1, 1e-5))  # one pass, no amplification
    assert priv["epsilon_poisson_accountant"] < priv["epsilon"]
    text = " ".join(r.output.split())
    assert "warning: the batches were shuffled, not Poisson-sampled" in text
    assert f"{priv['epsilon_poisson_accountant']:.3g}" in text


def test_crt_with_an_unknown_gamma_says_its_confidentiality_is_unknown(corpus_file, tmp_path):
    r = CliRunner().invoke(
        app,
        ["train", "--corpus", str(corpus_file), "--out", str(tmp_path / "crt"), *SMALL, "--mode", "crt"]
        + ["--noise-multiplier", "1.0", "--json"],
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["gamma"] is None and summary["confidentiality"].startswith("confidentiality: unknown")
    assert summary["privacy_unit"] == "user"
