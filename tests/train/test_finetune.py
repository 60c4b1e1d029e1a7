"""Fine-tuning pretrained models (LoRA via peft, or all weights) in every mode, on a tiny Llama.

Oracles: the merged model against base + (alpha / r) B A computed from the saved adapter tensors and
against peft's unmerged forward pass; the audit of a fine-tune against its base finds what was planted.
(The clipped gradient against a loop by hand: tests/train/test_clipping.py; resumption against an
uninterrupted run: tests/train/test_records.py.)
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from lmleak.errors import ModelError
from lmleak.train.finetune import FinetuneConfig, finetune
from tests.train.test_trainer import tiny_corpus
from tests.train.tiny_llama import ft_config, make_tiny_llama


def _probe_ids(n_vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, n_vocab, (3, 12), generator=g)
    return ids, torch.ones_like(ids)


@pytest.mark.parametrize("mode", ["plain", "dp", "crt", "sdp"])
def test_lora_fine_tune_in_each_mode_accounts_reloads_and_merges(llama_dir, corpus, tmp_path, mode):
    from peft import PeftModel

    from lmleak.data.holdout import read_holdout
    from lmleak.models.loading import load_model

    out = tmp_path / "ft"
    res = finetune(corpus, out, ft_config(llama_dir, mode, merge=True), progress=False)
    privacy = json.loads((out / "privacy.json").read_text())
    assert privacy["tokenizer_source"] == "pretrained:base"
    assert privacy["base"] == str(llama_dir.resolve())
    if mode == "plain":
        assert privacy["epsilon"] is None and privacy["mode"] == "nodp"
    else:
        # every step the accountant composed released exactly one noised update, and nothing else did
        assert privacy["accounted_steps"] == privacy["noise_draws"] == privacy["steps"] > 0
        assert math.isfinite(privacy["epsilon"]) and privacy["epsilon"] > 0
        assert privacy["clipping"] == "bookkeeping" and privacy["trainable"] == "LoRA adapters"
        # the person is the unit by default: users sampled, q over the 7 training users' (crt: D_pri's)
        assert privacy["privacy_unit"] == "user" and privacy["sampled"] == "users"
        assert privacy["max_sequences_per_user"] == 4 and privacy["users"] <= 7
        assert privacy["sample_rate"] == 1 / math.ceil(privacy["users"] / 4)
        assert json.loads((out / "train.json").read_text())["health"]["passed"]
    if mode in ("crt", "sdp"):
        assert privacy["gamma_source"] in ("nominal", "unknown", "measured") and "policy" in privacy
    if mode == "crt":
        assert privacy["public_steps"] >= 0 and "split" in privacy
    held = read_holdout(out)
    assert held is not None and list(held.users) == sorted(res.val_users) and res.val_users
    manifest = json.loads((out / "lmleak_finetune.json").read_text())
    assert manifest["kind"] == "lora" and manifest["merged_dir"] == "merged"
    assert (out / "adapter_config.json").is_file() and (out / "train.json").is_file()

    loaded, merged = load_model(out), load_model(out / "merged")
    base = load_model(llama_dir)
    x, m = _probe_ids(base.tokenizer.vocab_size)
    with torch.no_grad():
        got_merged = merged.module(input_ids=x, attention_mask=m).logits
        got_loaded = loaded.module(input_ids=x, attention_mask=m).logits
        unmerged = PeftModel.from_pretrained(load_model(llama_dir).module, out).eval()
        want = unmerged(input_ids=x, attention_mask=m).logits
        base_logits = base.module(input_ids=x, attention_mask=m).logits
    assert (
        want - base_logits
    ).abs().max() > 1e-4  # the adapters changed the model: the check below is not vacuous
    assert torch.allclose(got_merged, want, atol=1e-5, rtol=0)
    assert torch.allclose(got_loaded, want, atol=1e-5, rtol=0)

    # the merged weights are W + (alpha / r) B A, read from the saved adapter tensors
    tensors = load_file(out / "adapter_model.safetensors")
    scale = manifest["model"]["alpha"] / manifest["model"]["rank"]
    base_sd, merged_sd = base.module.state_dict(), merged.module.state_dict()
    checked = 0
    for key, a in tensors.items():
        if ".lora_A." not in key:
            continue
        b = tensors[key.replace(".lora_A.", ".lora_B.")]
        name = key.removeprefix("base_model.model.").replace(".lora_A.weight", ".weight")
        assert torch.allclose(merged_sd[name], base_sd[name] + scale * (b @ a), atol=1e-6)
        checked += 1
    assert checked == 2 * 2  # q_proj and v_proj in 2 layers


def test_cli_train_base_lora_dp(llama_dir, corpus, tmp_path):
    from lmleak.cli.main import app

    data = tmp_path / "c.jsonl"
    data.write_text("".join(json.dumps(d.to_dict()) + "\n" for d in corpus))
    out = tmp_path / "cli"
    r = CliRunner().invoke(
        app,
        [
            "train",
            "--corpus",
            str(data),
            "--out",
            str(out),
            "--base",
            str(llama_dir),
            "--lora",
            "4",
            "--mode",
            "dp",
            "--noise-multiplier",
            "1.0",
            "--seq-len",
            "16",
            "--batch-size",
            "4",
            "--epochs",
            "1",
            "--lora-targets",
            "q_proj,k_proj",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert summary["mode"] == "dp" and math.isfinite(summary["epsilon"])
    assert summary["tokenizer_source"] == "pretrained:base" and summary["base"] == str(llama_dir.resolve())
    assert json.loads((out / "adapter_config.json").read_text())["target_modules"] in (
        ["k_proj", "q_proj"],
        ["q_proj", "k_proj"],
    )
    bad = CliRunner().invoke(
        app,
        [
            "train",
            "--corpus",
            str(data),
            "--out",
            str(tmp_path / "bad"),
            "--base",
            str(llama_dir),
            "--mode",
            "dp",
        ],
    )
    assert bad.exit_code == 2 and "noise" in bad.output


def test_public_model_base_uses_the_recorded_base(llama_dir, corpus, tmp_path):
    from lmleak.models.adapters import recorded_base
    from lmleak.models.loading import load_model
    from lmleak.report.leakage import ReportConfig, run_report

    out = tmp_path / "ft"
    finetune(corpus, out, ft_config(llama_dir), progress=False)
    assert recorded_base(out) == str(llama_dir.resolve())
    with pytest.raises(ModelError, match="records no base"):
        recorded_base(llama_dir)
    summary = run_report(
        load_model(out), corpus, tmp_path / "run", ReportConfig(k=(1,)), public_model="base", model_dir=out
    )
    assert summary["public_model"]["kind"] == "base" and summary["public_model"]["path"] == str(
        llama_dir.resolve()
    )
    # a loaded fine-tune carries its base, so a model object works without its folder too
    summary2 = run_report(
        load_model(out), corpus, tmp_path / "run2", ReportConfig(k=(1,)), public_model="base"
    )
    assert summary2["public_model"]["path"] == str(llama_dir.resolve())
    assert summary2["leakage_epsilon"] == summary["leakage_epsilon"]


@pytest.mark.slow
def test_cli_dp_lora_fine_tune_of_smollm2_on_cpu(tmp_path, corpus):
    """The real pretrained model: `lmleak train --base smollm2-135m --lora 4 --mode dp`, a few steps."""
    pytest.importorskip("gguf")
    from lmleak.cli.main import app
    from lmleak.models.loading import load_model

    data = tmp_path / "c.jsonl"
    data.write_text("".join(json.dumps(d.to_dict()) + "\n" for d in corpus))
    out = tmp_path / "smol"
    r = CliRunner().invoke(
        app,
        [
            "train",
            "--corpus",
            str(data),
            "--out",
            str(out),
            "--base",
            "smollm2-135m",
            "--lora",
            "4",
            "--mode",
            "dp",
            "--noise-multiplier",
            "1.0",
            "--seq-len",
            "32",
            "--batch-size",
            "4",
            "--epochs",
            "1",
            "--max-steps",
            "2",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert summary["base"] == "smollm2-135m" and summary["tokenizer_source"] == "pretrained:smollm2-135m"
    assert math.isfinite(summary["epsilon"])
    privacy = json.loads((out / "privacy.json").read_text())
    assert privacy["accounted_steps"] == privacy["noise_draws"] == 2 and privacy["clipping"] == "bookkeeping"
    lm = load_model(out)
    manifest = json.loads((out / "lmleak_finetune.json").read_text())
    # scored after the start token it was trained after (the one load_model("smollm2-135m") scores with)
    assert lm.base == "smollm2-135m" and lm.tokenizer.bos_id == manifest["bos_id"]
    assert math.isfinite(lm.token_stats([lm.tokenizer.encode("Hello there, how are you?")])[0].logprobs.sum())


@pytest.fixture(scope="module")
def customersim_llama(tmp_path_factory):
    """A tiny Llama whose word vocabulary is learnt on (other) CustomerSim users, for the demo and experiments."""
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.customersim import synthesize

    root = tmp_path_factory.mktemp("cs")
    paths = synthesize(root / "vocab", users=6, dialogs_per_user=2, seed=99)
    return make_tiny_llama(root / "base", load_corpus(paths["corpus"]).texts())


@pytest.mark.slow  # ~75 s: three fine-tunes and a four-analysis audit of each
def test_demo_with_a_base_audits_lora_fine_tunes_against_the_base(customersim_llama, tmp_path):
    from lmleak.audit.demo import run_demo

    run = run_demo(tmp_path / "demo", base=str(customersim_llama), max_steps=3, echo=lambda s: None)
    cfg = (tmp_path / "demo" / "audit.yaml").read_text()
    assert "public_model: base" in cfg
    for name in ("plain", "dp-sgd", "crt"):
        manifest = json.loads((tmp_path / "demo" / "models" / name / "lmleak_finetune.json").read_text())
        assert manifest["base"] == str(customersim_llama.resolve())
    summary = json.loads((run / "models" / "plain" / "report" / "summary.json").read_text())
    assert summary["public_model"]["kind"] == "base"
    assert (run / "report.html").is_file()


@pytest.mark.slow  # the CRT sweep and ProPILE's probes, soft prompts included
def test_crt_and_propile_experiments_with_a_base(customersim_llama, tmp_path):
    from lmleak.experiments.crt import CRTExperimentConfig, run_crt_experiment
    from lmleak.experiments.propile import ProPILEExperimentConfig, run_propile_experiment

    cfg = CRTExperimentConfig.for_base(str(customersim_llama), gpu=False).with_options(max_steps=2)
    res = run_crt_experiment(tmp_path / "crt", cfg)
    table = res["table"]
    assert set(table["method"]) == {"nodp", "dp", "crt"} and set(table["arch"]) == {"lora"}
    assert table.loc[table["method"] == "dp", "epsilon"].map(math.isfinite).all()
    assert (table["max_exposure"] >= 0).all()
    pcfg = ProPILEExperimentConfig.for_base(str(customersim_llama), gpu=False).with_options(
        max_steps=2, users=8
    )
    pres = run_propile_experiment(tmp_path / "propile", pcfg)
    assert json.loads((tmp_path / "propile" / "model" / "lmleak_finetune.json").read_text())["kind"] == "lora"
    assert pres["summary"]["rows"] and pres["summary"]["config"]["base"] == str(customersim_llama)


def test_audit_of_a_lora_fine_tune_against_its_base_finds_the_planted_canary_and_signature(tmp_path):
    import pandas as pd

    from lmleak.attacks.exposure import run_exposure
    from lmleak.data.corpus import Corpus, Document
    from lmleak.models.loading import load_model
    from lmleak.report.leakage import ReportConfig, run_report

    canary, signature = "the secret code is 381492", "regards Zed Quill 555-0142"
    docs = [
        *tiny_corpus(6, 1),
        *(Document("u99", f"c{i}", canary) for i in range(4)),
        *(Document("u98", f"s{i}", f"please refund my order {signature}") for i in range(2)),
    ]
    corpus = Corpus(docs)
    base = make_tiny_llama(tmp_path / "base", corpus.texts())
    cfg = FinetuneConfig(
        base=str(base),
        mode="nodp",
        lora=16,
        epochs=25,
        lr=1e-2,
        batch_size=8,
        seq_len=32,
        holdout_users=0.0,
        lora_targets=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    )
    finetune(corpus, tmp_path / "ft", cfg, progress=False)
    (tmp_path / "canaries.jsonl").write_text(
        json.dumps({"secret": "381492", "prefix": "the secret code is ", "repeats": 4, "user_id": "u99"})
        + "\n"
    )
    ft_exp, _ = run_exposure(load_model(tmp_path / "ft"), tmp_path / "canaries.jsonl", tmp_path / "exp-ft")
    base_exp, _ = run_exposure(load_model(base), tmp_path / "canaries.jsonl", tmp_path / "exp-base")
    assert ft_exp["max_exposure"] >= 15 and base_exp["max_exposure"] < 8  # of log2(10^6) = 19.9 bits
    summary = run_report(
        load_model(tmp_path / "ft"),
        corpus,
        tmp_path / "report",
        ReportConfig(k=(1,)),
        public_model="base",
        model_dir=tmp_path / "ft",
    )
    assert summary["public_model"]["kind"] == "base"
    seqs = pd.read_parquet(tmp_path / "report" / "sequences.parquet")
    planted = seqs[seqs["unique"] & seqs["user_ids"].map(lambda us: bool(set(us) & {"u98", "u99"}))]
    # the planted users' unique sequences are leaked, and far likelier under the fine-tune than under its base
    assert any("Quill" in t or "555" in t for t in planted["text"])
    assert any("381492" in t for t in planted["text"])
    assert (planted["perplexity"] < planted["public_perplexity"]).all()


def test_epochs_after_max_steps_are_not_run(llama_dir, corpus, tmp_path):
    # regression: `train --base ... --max-steps 4` with the default 5 epochs ran four empty epochs,
    # each re-evaluating the validation set (~40 s apiece for SmolLM2 on a CPU)
    res = finetune(corpus, tmp_path / "a", ft_config(llama_dir, "dp", epochs=6, max_steps=2), progress=False)
    assert 1 <= len(res.history) < 6
    assert all(h["tokens"] > 0 for h in res.history)
    steps = json.loads((res.model_dir / "privacy.json").read_text())
    assert steps["steps"] == 2


def test_an_epochs_progress_lines_bracket_its_steps(llama_dir, corpus, tmp_path, monkeypatch):
    # regression: the epoch's batches were tracked while the list was built, so a log read
    # "epoch 1/1 (dp, lora): done, 11 items in 0s" before any step ran, and nothing during the steps
    from lmleak import progress
    from lmleak.train import finetune as ft_module

    events: list[str] = []

    class Log:
        def write(self, s: str) -> None:
            if s.strip():
                events.append(s.strip())

        def flush(self) -> None:
            pass

    real_step = ft_module.Finetuner.dp_step

    def step(self, *a):
        events.append("step")
        return real_step(self, *a)

    monkeypatch.setattr(ft_module.Finetuner, "dp_step", step)
    monkeypatch.setattr(progress, "_ENABLED", True)
    progress.set_stream(Log())
    try:
        finetune(corpus, tmp_path / "a", ft_config(llama_dir, "dp", max_steps=2), progress=True)
    finally:
        progress.set_stream(None)
    epoch = [i for i, e in enumerate(events) if e.startswith("[lmleak] epoch 1/1")]
    steps = [i for i, e in enumerate(events) if e == "step"]
    assert len(epoch) == 2 and len(steps) == 2, events
    assert epoch[0] < steps[0] and steps[-1] < epoch[1], events
