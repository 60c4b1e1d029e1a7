"""CLI: ``lmleak train`` and ``lmleak eval``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, cast

import typer

from lmleak.cli.common import JsonOpt, QuietOpt, SeedOpt, out, print_json, quiet


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("train")(train)
    app.command("eval")(evaluate_cmd)


def resolve_model(spec: str, **kw: Any) -> Any:
    """Load a model spec through the registry (paths, smollm2-135m, fake:..., topk:k:...)."""
    from lmleak.models.loading import load_model

    return load_model(spec, **kw)


def train(
    corpus: Annotated[Path, typer.Option(help="Training corpus (JSONL, CSV, Parquet, folder, HF dataset).")],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for the model, train.json and privacy.json.")
    ],
    arch: Annotated[str, typer.Option(help="gpt (small GPT-2) or lstm (paper 001's 2x128 LSTM).")] = "gpt",
    mode: Annotated[
        str, typer.Option(help="nodp | dp (DP-SGD) | crt (paper 002) | sdp (selective DP, LSTM).")
    ] = "nodp",
    epochs: Annotated[int, typer.Option(help="Passes over the training data.")] = 5,
    batch_size: Annotated[
        int, typer.Option(help="Sequences per mini-batch (expected size under Poisson sampling).")
    ] = 16,
    lr: Annotated[float, typer.Option(help="AdamW learning rate.")] = 2e-3,
    seq_len: Annotated[
        int, typer.Option("--seq-len", "--context", help="Tokens per training sequence (the GPT's context).")
    ] = 128,
    tokenizer: Annotated[
        str | None, typer.Option(help="word or bpe (default: bpe for gpt, word for lstm).")
    ] = None,
    vocab_size: Annotated[
        int, typer.Option(help="Tokenizer vocabulary size (most frequent words for word-level).")
    ] = 4000,
    seed: SeedOpt = 0,
    holdout_users: Annotated[
        float,
        typer.Option(
            "--holdout-users",
            "--val-fraction",
            help="Share of users held out of training (0 allowed): validation, and the non-members / controls of `mia` and `probe run`; recorded in holdout.json.",
        ),
    ] = 0.1,
    layers: Annotated[int, typer.Option("--layers", help="GPT: transformer layers.")] = 2,
    width: Annotated[
        int, typer.Option("--width", help="GPT: embedding width (a multiple of --heads).")
    ] = 128,
    heads: Annotated[int, typer.Option("--heads", help="GPT: attention heads.")] = 4,
    snapshots: Annotated[
        bool, typer.Option(help="Save a checkpoint after every epoch (for `lmleak report snapshots`).")
    ] = False,
    noise_multiplier: Annotated[float | None, typer.Option(help="DP noise multiplier (dp/crt/sdp).")] = None,
    target_epsilon: Annotated[
        float | None, typer.Option(help="DP target epsilon instead of a noise multiplier.")
    ] = None,
    delta: Annotated[float, typer.Option(help="DP delta.")] = 1e-5,
    max_grad_norm: Annotated[float, typer.Option(help="Per-sequence clipping norm.")] = 1.0,
    accountant: Annotated[str, typer.Option(help="prv (default) or rdp.")] = "prv",
    dp_clipping: Annotated[
        str | None,
        typer.Option(
            "--dp-clipping",
            help="Per-sequence clipping: bookkeeping (one backward pass; default for the small GPT) or ghost (Opacus); with --base: auto (default: bookkeeping where it applies, else Opacus hooks), bookkeeping or hooks.",
        ),
    ] = None,
    policy: Annotated[
        str | None, typer.Option(help="Redaction policy for crt/sdp (default balanced).")
    ] = None,
    tokenizer_from: Annotated[
        str | None,
        typer.Option(
            "--tokenizer-from",
            help="Learn the tokenizer on this public corpus, or reuse an lmleak model folder's (default: D_pub for crt, the training text for nodp; required for dp/sdp).",
        ),
    ] = None,
    tokenizer_from_private: Annotated[
        bool,
        typer.Option(
            "--tokenizer-from-private",
            help="dp/sdp: accept a tokenizer learnt from the private text (outside the DP guarantee; recorded in privacy.json).",
        ),
    ] = False,
    secrets: Annotated[
        Path | None,
        typer.Option(
            "--secrets",
            help="crt/sdp: secrets.jsonl ground truth; the policy's miss rate gamma is measured on the training text and written to privacy.json.",
        ),
    ] = None,
    public: Annotated[
        Path | None, typer.Option(help="crt: a pre-split public corpus (with --private).")
    ] = None,
    private: Annotated[
        Path | None, typer.Option(help="crt: a pre-split private corpus (with --public).")
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help="Fine-tune this pretrained causal LM (a Hugging Face folder, a .gguf file, or smollm2-135m) instead of training a small model from scratch (docs/finetune.md).",
        ),
    ] = None,
    lora: Annotated[int, typer.Option("--lora", help="--base: LoRA adapter rank (peft).")] = 8,
    lora_targets: Annotated[
        str | None,
        typer.Option(
            "--lora-targets",
            help="--base: comma-separated module names to adapt (default per architecture: q_proj,v_proj for llama/mistral/qwen, c_attn for gpt2; else every Linear in attention).",
        ),
    ] = None,
    lora_alpha: Annotated[
        float | None, typer.Option("--lora-alpha", help="--base: LoRA scaling alpha (default 2 x rank).")
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="--base: fine-tune all weights instead of LoRA adapters.")
    ] = False,
    merge: Annotated[
        bool,
        typer.Option(
            "--merge", help="--base: also write OUT/merged, a plain Hugging Face folder of base + adapters."
        ),
    ] = False,
    precision: Annotated[
        str,
        typer.Option(
            "--precision",
            help="--base: auto (bf16 autocast on a GPU that has it, fp32 on the CPU), fp32, bf16 or fp16 (falls back to fp32).",
        ),
    ] = "auto",
    max_steps: Annotated[
        int | None,
        typer.Option(
            "--max-steps",
            help="--base: at most this many optimiser steps of each kind (plain/public and private DP) in all; for smoke runs (the accountant counts the steps taken).",
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(
            "--device",
            help="--base: auto (a GPU when present), cpu, cuda, cuda:N (default: the global --device).",
        ),
    ] = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
) -> None:
    """Train a small GPT or LSTM on a corpus, or fine-tune a pretrained model (--base), plainly or with DP-SGD / CRT / selective DP."""
    from lmleak.data.loaders import load_corpus
    from lmleak.errors import ConfigError

    quiet(quiet_ or json_out)
    if (public is None) != (private is None):
        raise ConfigError("give both --public and --private, or neither", field="public")
    if base is not None:
        from lmleak.train.finetune import FinetuneConfig, finetune

        fcfg = FinetuneConfig(
            base=base,
            mode=mode,
            lora=lora,
            lora_alpha=lora_alpha,
            full=full,
            merge=merge,
            epochs=epochs,
            lora_targets=tuple(t.strip() for t in lora_targets.split(",") if t.strip())
            if lora_targets
            else None,
            batch_size=batch_size,
            lr=lr,
            seq_len=seq_len,
            seed=seed,
            holdout_users=holdout_users,
            max_steps=max_steps,
            max_grad_norm=max_grad_norm,
            noise_multiplier=noise_multiplier,
            target_epsilon=target_epsilon,
            target_delta=delta,
            accountant=accountant,
            dp_clipping=dp_clipping or "auto",
            policy=policy,
            secrets=None if secrets is None else str(secrets),
            device=device,
            precision=precision,
        )
        res = finetune(
            load_corpus(corpus),
            out_dir,
            fcfg,
            progress=not (quiet_ or json_out),
            public=load_corpus(public) if public else None,
            private=load_corpus(private) if private else None,
        )
        arch = f"{'full' if full else f'LoRA r={lora}'} fine-tune of {base}"
    else:
        res = _train_small(
            corpus,
            out_dir,
            arch,
            mode,
            epochs,
            batch_size,
            lr,
            seq_len,
            tokenizer,
            vocab_size,
            seed,
            holdout_users,
            layers,
            width,
            heads,
            snapshots,
            noise_multiplier,
            target_epsilon,
            delta,
            max_grad_norm,
            accountant,
            policy,
            dp_clipping or "bookkeeping",
            tokenizer_from,
            tokenizer_from_private,
            secrets,
            public,
            private,
        )
    _print_result(res, out_dir, arch, mode, json_out)


def _train_small(
    corpus: Path,
    out_dir: Path,
    arch: str,
    mode: str,
    epochs: int,
    batch_size: int,
    lr: float,
    seq_len: int,
    tokenizer: str | None,
    vocab_size: int,
    seed: int,
    holdout_users: float,
    layers: int,
    width: int,
    heads: int,
    snapshots: bool,
    noise_multiplier: float | None,
    target_epsilon: float | None,
    delta: float,
    max_grad_norm: float,
    accountant: str,
    policy: str | None,
    dp_clipping: str,
    tokenizer_from: str | None,
    tokenizer_from_private: bool,
    secrets: Path | None,
    public: Path | None,
    private: Path | None,
) -> Any:
    from lmleak.data.loaders import load_corpus
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model

    # typer hands the literal choices over as str; TrainConfig checks mode, arch and dp_clipping
    cfg = cast(Any, TrainConfig)(
        arch=arch,
        mode=mode,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        seq_len=seq_len,
        tokenizer=tokenizer,
        vocab_size=vocab_size,
        seed=seed,
        holdout_users=holdout_users,
        n_layer=layers,
        n_embd=width,
        n_head=heads,
        snapshots=snapshots,
        noise_multiplier=noise_multiplier,
        target_epsilon=target_epsilon,
        target_delta=delta,
        max_grad_norm=max_grad_norm,
        accountant=accountant,
        policy=policy,
        dp_clipping=dp_clipping,
        tokenizer_from=tokenizer_from,
        tokenizer_from_private=tokenizer_from_private,
        secrets=None if secrets is None else str(secrets),
    )
    return train_model(
        load_corpus(corpus),
        out_dir,
        cfg,
        public=load_corpus(public) if public else None,
        private=load_corpus(private) if private else None,
    )


def _print_result(res: Any, out_dir: Path, arch: str, mode: str, json_out: bool) -> None:
    summary = {
        "model_dir": str(res.model_dir),
        "mode": mode,
        "arch": arch,
        "val_perplexity": res.final.get("val_perplexity"),
        "val_top1_accuracy": res.final.get("val_top1_accuracy"),
        "val_top3_accuracy": res.final.get("val_top3_accuracy"),
        "tokens_per_s": res.final.get("tokens_per_s"),
        "epsilon": res.privacy.get("epsilon"),
        "delta": res.privacy.get("delta"),
        "held_out_users": res.val_users,
        "tokenizer_source": res.privacy.get("tokenizer_source"),
        "gamma": res.privacy.get("gamma"),
        "gamma_source": res.privacy.get("gamma_source"),
        "public_sentence_share": (res.privacy.get("split") or {}).get("public_sentence_share"),
    }
    if getattr(res, "merged_dir", None) is not None or "val_perplexity_before" in res.final:
        summary.update(
            base=res.privacy.get("base"),
            val_perplexity_before=res.final.get("val_perplexity_before"),
            merged_dir=None if res.merged_dir is None else str(res.merged_dir),
        )
    if json_out:
        print_json(summary)
        return
    from rich.table import Table

    t = Table(title=f"{arch} trained ({mode}) -> {out_dir}")
    t.add_column("epoch", justify="right")
    t.add_column("train loss", justify="right")
    t.add_column("val perplexity", justify="right")
    t.add_column("val top-1", justify="right")
    t.add_column("val top-3", justify="right")
    t.add_column("tokens/s", justify="right")
    for h in res.history:
        t.add_row(
            str(h["epoch"]),
            _f(h.get("train_loss")),
            _f(h.get("val_perplexity")),
            _f(h.get("val_top1_accuracy")),
            _f(h.get("val_top3_accuracy")),
            _f(h.get("tokens_per_s"), 0),
        )
    out.print(t)
    held = res.val_users
    out.print(
        f"held out {len(held)} of {len(held) + len(res.train_users)} users (never trained on; the non-members and "
        f"controls of `lmleak mia` / `lmleak probe run`): {out_dir / 'holdout.json'}"
    )
    out.print(f"tokenizer learnt from: {res.privacy.get('tokenizer_source')}")
    split = res.privacy.get("split") or {}
    if split:
        out.print(
            f"CRT split: D_pub holds {split.get('public_sentence_share', 0):.1%} of the sentences and "
            f"{split.get('public_word_share', 0):.1%} of the words; private because of: {split.get('private_reasons')}"
        )
    if res.privacy.get("gamma_source"):
        g = res.privacy.get("gamma")
        out.print(
            f"policy miss rate gamma = {'unknown' if g is None else f'{g:.4f}'} ({res.privacy['gamma_source']}"
            + (
                f", 95% upper bound {res.privacy['gamma_upper95']:.4f} on {res.privacy['gamma_support']} secrets"
                if res.privacy.get("gamma_upper95") is not None
                else ""
            )
            + ")"
        )
    if res.privacy.get("epsilon") is not None:
        out.print(
            f"DP: epsilon = {res.privacy['epsilon']:.3f} at delta = {res.privacy['delta']:g} "
            f"({res.privacy['accountant']} accountant, {res.privacy['steps']} private steps)"
        )


def _f(v: Any, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def evaluate_cmd(
    model: Annotated[str, typer.Option(help="Model: a folder, a .gguf file, smollm2-135m, ...")],
    corpus: Annotated[Path, typer.Option(help="Corpus to evaluate on.")],
    k: Annotated[list[int], typer.Option(help="Top-k accuracies to report (repeatable).")] = [1, 3],  # noqa: B006
    out_path: Annotated[
        Path | None, typer.Option("--out", help="Also write the metrics to this JSON file.")
    ] = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
) -> None:
    """Perplexity (per token and per word) and top-k accuracy of a model on a corpus (teacher forcing)."""
    from lmleak.data.loaders import load_corpus
    from lmleak.models.base import Capability, require
    from lmleak.models.evaluation import evaluate_model
    from lmleak.runs import atomic_write_json

    quiet(quiet_ or json_out)
    lm = resolve_model(model)
    require(lm, Capability.SCORE, attack="eval")
    metrics = evaluate_model(lm, load_corpus(corpus), ks=tuple(k))
    record: dict[str, Any] = {"model": model, "corpus": str(corpus), **metrics}
    if out_path:
        atomic_write_json(out_path, record)
    if json_out:
        print_json(record)
        return
    from rich.table import Table

    t = Table(title=f"{model} on {corpus}")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for key, v in record.items():
        if isinstance(v, float):
            t.add_row(key, f"{v:.4f}")
    out.print(t)
