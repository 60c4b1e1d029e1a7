"""Fine-tuning pretrained models (LoRA via peft, or all weights) in every mode, on a tiny Llama.

Oracles: the DP clipped gradient against a loop of per-example gradients clipped by hand; the merged
model against base + (alpha / r) B A computed from the saved adapter tensors and against peft's
unmerged forward pass; resumption against an uninterrupted run.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from lmleak.errors import ConfigError, ModelError
from lmleak.train.finetune import (
    FinetuneConfig,
    Finetuner,
    default_targets,
    finetune,
    logits_of,
    prepare_model,
    resolve_precision,
)
from lmleak.train.plain import batch_tensors, encode_chunks, sequence_losses
from tests.train.test_trainer import tiny_corpus


def make_tiny_llama(path, texts, *, tied: bool = True, seed: int = 0):
    """A 2-layer, width-64 Llama folder (config.json, safetensors, tokenizer) with a small word vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from lmleak.models.small import build_tokenizer

    tok = build_tokenizer(texts, kind="word", vocab_size=80)
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=128,
        tie_word_embeddings=tied,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    LlamaForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def corpus():
    return tiny_corpus(8, 2)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory, corpus):
    return make_tiny_llama(tmp_path_factory.mktemp("llama") / "base", corpus.texts())


def _cfg(base, mode="plain", **kw):
    kw.setdefault("lora", 4)
    kw.setdefault("seq_len", 16)
    kw.setdefault("batch_size", 4)
    kw.setdefault("epochs", 1)
    kw.setdefault("lr", 5e-3)
    if mode not in ("plain", "nodp"):
        kw.setdefault("noise_multiplier", 1.0)
    return FinetuneConfig(base=str(base), mode=mode, **kw)


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
    res = finetune(corpus, out, _cfg(llama_dir, mode, merge=True), progress=False)
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


@pytest.mark.parametrize("full", [False, True])
def test_dp_clipped_gradient_equals_a_loop_of_clipped_per_example_gradients(llama_dir, corpus, full):
    from lmleak.models.loading import load_model

    lm = load_model(llama_dir)
    cfg = _cfg(llama_dir, "dp", full=full, noise_multiplier=0.0, max_grad_norm=0.05)
    model, _ = prepare_model(lm.module, cfg)
    model.train()
    torch.manual_seed(3)
    with torch.no_grad():  # LoRA starts with B = 0, where A's gradient is 0: move off that point
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.1)
    ft = Finetuner(model, cfg, "cpu", resolve_precision("fp32", "cpu"))
    assert ft.clipping == ("opacus hooks" if full else "bookkeeping")
    chunks = encode_chunks(corpus.texts(), _tok(lm), cfg.seq_len)
    ids, lengths = chunks.ids[:5], chunks.lengths[:5]
    ft.clipped_gradient(ids, lengths)
    got = [p.grad.clone() for p in ft.params]

    x, m, y = batch_tensors(ids, lengths)
    total = [torch.zeros_like(p) for p in ft.params]
    clipped = 0
    for i in range(len(ids)):
        loss = sequence_losses(logits_of(model, x[i : i + 1], m[i : i + 1]), y[i : i + 1]).sum()
        grads = torch.autograd.grad(loss, ft.params, allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(ft.params, grads, strict=True)]
        norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads)))
        factor = min(1.0, cfg.max_grad_norm / (norm + 1e-6))
        clipped += factor < 1.0
        for t, g in zip(total, grads, strict=True):
            t += factor * g
    assert clipped == len(ids)
    for g, want in zip(got, total, strict=True):
        assert torch.allclose(g, want, rtol=1e-4, atol=1e-7)


def _tok(lm):
    from lmleak.train.finetune import _Tok

    return _Tok(lm.tokenizer)


def test_full_dp_fine_tune_unties_embeddings_and_reloads(llama_dir, corpus, tmp_path):
    from lmleak.models.loading import load_model

    out = tmp_path / "full"
    res = finetune(corpus, out, _cfg(llama_dir, "dp", full=True, lr=1e-3, max_steps=3), progress=False)
    assert res.history[0]["tokens"] > 0
    assert res.privacy["trainable"] == "all weights" and res.privacy["clipping"] == "opacus hooks"
    assert res.privacy["accounted_steps"] == res.privacy["noise_draws"] == 3
    info = json.loads((out / "train.json").read_text())
    assert info["model"]["untied_embeddings"] is True
    lm = load_model(out)
    assert lm.base == str(llama_dir.resolve())
    assert (
        lm.module.get_output_embeddings().weight.data_ptr()
        != lm.module.get_input_embeddings().weight.data_ptr()
    )


def test_default_targets_by_architecture(tiny_gpt2):
    from transformers import LlamaConfig, LlamaForCausalLM

    assert default_targets(tiny_gpt2) == ["c_attn"]
    llama = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=32,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
        )
    )
    assert default_targets(llama) == ["q_proj", "v_proj"]
    llama.config.model_type = "unknown-arch"  # fallback: every Linear inside attention
    assert default_targets(llama) == ["k_proj", "o_proj", "q_proj", "v_proj"]


def test_unknown_lora_target_is_a_config_error(llama_dir, corpus, tmp_path):
    with pytest.raises(ConfigError, match="lora_targets"):
        finetune(corpus, tmp_path / "x", _cfg(llama_dir, lora_targets=("nope_proj",)), progress=False)


def test_precision_rules_and_their_cpu_fallback(monkeypatch):
    assert resolve_precision("auto", "cpu").dtype is None
    assert resolve_precision("fp16", "cpu").name == "fp32"
    assert resolve_precision("bf16", "cpu").dtype == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_precision("auto", "cuda").dtype == torch.bfloat16
    assert resolve_precision("fp16", "cuda").name == "fp32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    fallback = resolve_precision("auto", "cuda:0")
    assert fallback.dtype is None and "no bf16" in fallback.reason


def test_cpu_run_records_device_and_fp32_and_bf16_autocast_stays_close(llama_dir, corpus, tmp_path):
    from lmleak.models.loading import load_model

    res = finetune(corpus, tmp_path / "a", _cfg(llama_dir, "dp", device="cpu", max_steps=2), progress=False)
    info = json.loads((res.model_dir / "train.json").read_text())
    assert info["device"] == "cpu" and info["precision"] == "fp32" and "CPU" in info["precision_reason"]
    # bf16 autocast (the GPU path) gives nearly the fp32 clipped gradient
    grads = {}
    for prec in ("fp32", "bf16"):
        lm = load_model(llama_dir)
        cfg = _cfg(llama_dir, "dp", noise_multiplier=0.0, max_grad_norm=1e3, precision=prec)
        model, _ = prepare_model(lm.module, cfg)
        torch.manual_seed(0)
        with torch.no_grad():
            for n, p in model.named_parameters():
                if "lora_" in n:
                    p.normal_(0, 0.1)
        ft = Finetuner(model, cfg, "cpu", resolve_precision(prec, "cpu"))
        chunks = encode_chunks(corpus.texts(), _tok(lm), 16)
        ft.clipped_gradient(chunks.ids[:4], chunks.lengths[:4])
        grads[prec] = torch.cat([p.grad.reshape(-1) for p in ft.params])
    rel = (grads["bf16"] - grads["fp32"]).norm() / grads["fp32"].norm()
    assert 0 < rel < 0.1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without a GPU")
def test_asking_for_a_gpu_without_one_is_a_config_error(llama_dir, corpus, tmp_path):
    with pytest.raises(ConfigError, match="CUDA"):
        finetune(corpus, tmp_path / "x", _cfg(llama_dir, device="cuda"), progress=False)


def test_an_interrupted_run_resumes_to_the_uninterrupted_result(llama_dir, corpus, tmp_path):
    cfg = _cfg(llama_dir, "dp", epochs=2)
    whole = finetune(corpus, tmp_path / "whole", cfg, progress=False)

    class Stop(Exception):
        pass

    def stop_after_first(epoch, model):
        if epoch == 1:
            raise Stop

    with pytest.raises(Stop):
        finetune(corpus, tmp_path / "cut", cfg, progress=False, on_epoch_end=stop_after_first)
    assert (tmp_path / "cut" / "checkpoint" / "state.pt").is_file()
    with pytest.raises(ConfigError, match="different run"):
        finetune(corpus, tmp_path / "cut", _cfg(llama_dir, "dp", epochs=2, lr=1e-4), progress=False)
    resumed = finetune(corpus, tmp_path / "cut", cfg, progress=False)
    assert json.loads((tmp_path / "cut" / "train.json").read_text())["resumed_after_epoch"] == 1
    assert not (tmp_path / "cut" / "checkpoint").exists()
    a = load_file(tmp_path / "whole" / "adapter_model.safetensors")
    b = load_file(tmp_path / "cut" / "adapter_model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    for key in ("epsilon", "noise_draws", "accounted_steps", "steps"):
        assert whole.privacy[key] == resumed.privacy[key]
    assert [h["train_loss"] for h in whole.history] == [h["train_loss"] for h in resumed.history]


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
    finetune(corpus, out, _cfg(llama_dir), progress=False)
    assert recorded_base(out) == str(llama_dir.resolve())
    with pytest.raises(ModelError, match="records no base"):
        recorded_base(llama_dir)
    summary = run_report(
        load_model(out), corpus, tmp_path / "run", ReportConfig(ks=(1,)), public_model="base", model_dir=out
    )
    assert summary["public_model"]["kind"] == "base" and summary["public_model"]["path"] == str(
        llama_dir.resolve()
    )
    # a loaded fine-tune carries its base, so a model object works without its folder too
    summary2 = run_report(
        load_model(out), corpus, tmp_path / "run2", ReportConfig(ks=(1,)), public_model="base"
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
        ReportConfig(ks=(1,)),
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
    res = finetune(corpus, tmp_path / "a", _cfg(llama_dir, "dp", epochs=6, max_steps=2), progress=False)
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
        finetune(corpus, tmp_path / "a", _cfg(llama_dir, "dp", max_steps=2), progress=True)
    finally:
        progress.set_stream(None)
    epoch = [i for i, e in enumerate(events) if e.startswith("[lmleak] epoch 1/1")]
    steps = [i for i, e in enumerate(events) if e == "step"]
    assert len(epoch) == 2 and len(steps) == 2, events
    assert epoch[0] < steps[0] and steps[-1] < epoch[1], events
