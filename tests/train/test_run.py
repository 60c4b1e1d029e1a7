"""run_training: the config picks the trainer, and every corpus path is loaded once, in order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.errors import ConfigError
from lmleak.train import run as run_module
from lmleak.train.config import TrainConfig
from lmleak.train.finetune import FinetuneConfig


@pytest.fixture
def paths(tmp_path):
    out = {}
    for name in ("train", "pub", "priv"):
        docs = [Document(f"{name}{u}", f"{name}{u}-0", f"{name} text of user {u}") for u in range(3)]
        out[name] = tmp_path / f"{name}.jsonl"
        out[name].write_text("".join(json.dumps(d.to_dict()) + "\n" for d in Corpus(docs)))
    return out


@pytest.fixture
def calls(monkeypatch):
    seen: list[tuple[str, tuple, dict]] = []

    def record(kind):
        def fn(*args, **kwargs):
            seen.append((kind, args, kwargs))
            return kind

        return fn

    monkeypatch.setattr(run_module, "train_model", record("small"))
    monkeypatch.setattr(run_module, "finetune", record("finetune"))
    return seen


def _users(corpus):
    return None if corpus is None else sorted(corpus.users)


def test_a_train_config_trains_a_small_model_on_the_loaded_corpora(paths, calls, tmp_path):
    cfg = TrainConfig(mode="crt", noise_multiplier=1.0)
    assert (
        run_module.run_training(
            paths["train"], tmp_path / "o", cfg, public=paths["pub"], private=paths["priv"]
        )
        == "small"
    )
    [(kind, args, kwargs)] = calls
    assert kind == "small" and args[1:] == (tmp_path / "o", cfg)
    assert _users(args[0]) == ["train0", "train1", "train2"]
    public, private = kwargs["split"]
    assert _users(public) == ["pub0", "pub1", "pub2"] and _users(private) == [
        "priv0",
        "priv1",
        "priv2",
    ]
    assert "progress" not in kwargs  # the small trainer keeps its own default


def test_a_finetune_config_fine_tunes_its_base(paths, calls, tmp_path):
    cfg = FinetuneConfig(base="smollm2-135m")
    assert run_module.run_training(paths["train"], tmp_path / "o", cfg, progress=False) == "finetune"
    [(kind, args, kwargs)] = calls
    assert kind == "finetune" and args[1:] == (tmp_path / "o", cfg)
    assert _users(args[0]) == ["train0", "train1", "train2"]
    assert kwargs == {"progress": False, "public": None, "private": None}


def _result(**final):
    from lmleak.train.trainer import TrainResult

    return TrainResult(
        model_dir=Path("m"),
        history=[],
        final={"val_perplexity": 12.5, "tokens_per_s": 100.0, **final},
        privacy={
            "epsilon": 2.0,
            "delta": 1e-5,
            "tokenizer_source": "public",
            "split": {"public_sentence_share": 0.4},
        },
        train_users=["a", "b"],
        val_users=["c"],
    )


def test_the_summary_is_the_json_record_of_the_run():
    summary = run_module.training_summary(_result(), "gpt", "crt")
    assert summary == {
        "model_dir": "m",
        "mode": "crt",
        "arch": "gpt",
        "val_perplexity": 12.5,
        "val_top1_accuracy": None,
        "val_top3_accuracy": None,
        "tokens_per_s": 100.0,
        "epsilon": 2.0,
        "delta": 1e-5,
        "held_out_users": ["c"],
        "tokenizer_source": "public",
        "gamma": None,
        "gamma_source": None,
        "public_sentence_share": 0.4,
        # the DP keys of dp_summary (the gate and the HTML card read them); this record has no unit
        "dp_epsilon": 2.0,
        "dp_delta": 1e-5,
        "privacy_unit": None,
        "max_sequences_per_user": None,
        "sampler": None,
        "sampler_warning": None,
        "epsilon_poisson_accountant": None,
        "users": None,
        "largest_user_sequences": None,
        "group_privacy_epsilon_largest_user": None,
        "group_privacy_delta_largest_user": None,
        "guarantee": None,
        "epsilon_statement": "epsilon = 2 per training sequence (sequence-level DP, delta = 1e-05)",
    }
    # a fine-tune also records its base, the perplexity before and the merged folder
    tuned = run_module.training_summary(_result(val_perplexity_before=30.0), "x", "nodp")
    assert (tuned["val_perplexity_before"], tuned["merged_dir"], tuned["base"]) == (30.0, None, None)


def test_the_arch_label_names_the_small_model_or_the_kind_of_fine_tune():
    assert run_module.arch_label(TrainConfig(arch="lstm")) == "lstm"
    assert (
        run_module.arch_label(FinetuneConfig(base="smollm2-135m", lora=4))
        == "LoRA r=4 fine-tune of smollm2-135m"
    )
    assert run_module.arch_label(FinetuneConfig(base="b", full=True)) == "full fine-tune of b"


def test_train_and_summarise_trains_once_and_records_the_mode_as_given(paths, monkeypatch, tmp_path):
    seen = []

    def fake_training(*args, **kwargs):
        seen.append((args, kwargs))
        return _result()

    monkeypatch.setattr(run_module, "run_training", fake_training)
    cfg = FinetuneConfig(base="smollm2-135m", mode="plain")
    run = run_module.train_and_summarise(paths["train"], tmp_path / "o", cfg, progress=False, mode="plain")
    assert seen == [
        ((paths["train"], tmp_path / "o", cfg), {"public": None, "private": None, "progress": False})
    ]
    assert (run.arch, run.mode) == ("LoRA r=8 fine-tune of smollm2-135m", "plain")
    extra = {
        k: run.summary.pop(k) for k in ("warnings", "confidentiality", "reaudit_config", "reaudit_command")
    }
    assert run.summary == run_module.training_summary(run.result, run.arch, "plain")
    assert extra["warnings"] == [] and extra["confidentiality"] is None
    assert extra["reaudit_command"] == f"lmleak audit {tmp_path / 'o' / 'reaudit.yaml'}"
    assert (tmp_path / "o" / "reaudit.yaml").is_file()
    assert run_module.train_and_summarise(paths["train"], tmp_path / "o", cfg).mode == "nodp"  # the config's


def test_train_user_dp_trains_with_the_person_as_the_unit(tmp_path):
    from tests.train.test_units import _skewed_corpus

    res = run_module.train_user_dp(
        _skewed_corpus(),
        tmp_path / "m",
        noise_multiplier=1.0,
        max_sequences_per_user=2,
        epochs=1,
        batch_size=3,
        seq_len=16,
        vocab_size=300,
        n_embd=16,
        n_head=2,
        n_layer=1,
        holdout_users=0.0,
    )
    priv = json.loads((tmp_path / "m" / "privacy.json").read_text())
    assert priv["privacy_unit"] == "user" and priv["max_sequences_per_user"] == 2 and priv["users"] == 9
    assert res.privacy["tokenizer_source"].startswith("public:")  # no flag needed for DP
    with pytest.raises(ConfigError, match="documents"):
        run_module.train_user_dp(Corpus([]), tmp_path / "x", noise_multiplier=1.0)


def test_a_third_party_warning_during_training_is_restated_among_the_summarys_warnings(
    paths, monkeypatch, tmp_path, capsys
):
    """Issue 33: Opacus' UserWarning (with its site-packages path) raised while training runs is caught
    and listed, restated, with the run's other warnings; nothing of it reaches stderr."""
    import warnings

    from lmleak.train.restated import KNOWN

    def fake_training(*args, **kwargs):
        path = "/venv/lib/python3.11/site-packages/opacus/accountants/analysis/rdp.py"
        warnings.warn_explicit("Optimal order is the largest alpha. Please consider", UserWarning, path, 332)
        return _result()

    monkeypatch.setattr(run_module, "run_training", fake_training)
    cfg = FinetuneConfig(base="smollm2-135m", mode="plain")
    run = run_module.train_and_summarise(paths["train"], tmp_path / "o", cfg, progress=False)
    assert run.summary["warnings"] == [KNOWN["Optimal order is the largest alpha"]]
    assert "site-packages" not in capsys.readouterr().err
