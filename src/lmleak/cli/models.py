"""CLI: ``lmleak train`` and ``lmleak eval``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.markup import escape
from typer.core import TyperCommand, TyperOption

from lmleak.cli.common import (
    COUNT,
    OPEN_UNIT,
    POSITIVE,
    JsonOpt,
    QuietOpt,
    SeedOpt,
    number,
    out,
    print_json,
    quiet,
)
from lmleak.train.config import TrainConfig
from lmleak.words import plural


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("train", cls=_TrainCommand)(train)
    app.command("eval")(evaluate_cmd)


#: The panels of ``lmleak train --help`` (issue 29), each option by its parameter name, in the order
#: shown. tests/cli/test_models_help.py fails on an option in no panel.
TRAIN_PANELS: dict[str, tuple[str, ...]] = {
    "Model": (
        "arch",
        "layers",
        "width",
        "heads",
        "base",
        "tokenizer",
        "vocab_size",
        "tokenizer_from",
        "tokenizer_from_private",
        "lora",
        "lora_targets",
        "lora_alpha",
        "full",
        "merge",
        "precision",
    ),
    "Data": ("corpus", "holdout_users", "seq_len", "public", "private", "secrets", "policy"),
    "Privacy": (
        "mode",
        "target_epsilon",
        "noise_multiplier",
        "delta",
        "privacy_unit",
        "max_sequences_per_user",
        "sampler",
        "max_grad_norm",
        "accountant",
        "dp_clipping",
        "health_checks",
        "health_check_steps",
        "max_noise_to_signal",
    ),
    "Schedule": ("epochs", "batch_size", "lr", "seed", "max_steps", "device"),
    "Output": ("out_dir", "config", "snapshots", "replaces", "json_out", "quiet_", "help_all", "help"),
}
#: What plain ``--help`` shows; ``--help-all`` shows the long tail too.
TRAIN_COMMON = frozenset(
    {
        *("arch", "layers", "width", "heads", "base"),
        *("corpus", "holdout_users", "seq_len"),
        *("mode", "target_epsilon", "noise_multiplier", "delta", "privacy_unit"),
        *("epochs", "batch_size", "lr", "seed"),
        *("out_dir", "config", "json_out", "help_all", "help"),  # --quiet: `lmleak -q train`
    }
)


class _TrainCommand(TyperCommand):
    """``lmleak train``: its options in :data:`TRAIN_PANELS`, the ones not in :data:`TRAIN_COMMON`
    hidden from ``--help`` (``--help-all`` shows them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        order = [name for names in TRAIN_PANELS.values() for name in names]
        panel_of = {name: panel for panel, names in TRAIN_PANELS.items() for name in names}
        # the panels come out in the order of their first option
        self.params.sort(key=lambda p: order.index(p.name) if p.name in order else len(order))
        for param in self.params:
            if isinstance(param, TyperOption):
                param.rich_help_panel = panel_of.get(param.name or "")
                param.hidden = param.name not in TRAIN_COMMON

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            option.rich_help_panel = "Output"
        return option


def _show_every_option(ctx: typer.Context, value: bool) -> None:
    """``--help-all``: the help with every option, then exit."""
    if not value or ctx.resilient_parsing:
        return
    for param in ctx.command.params:
        if isinstance(param, TyperOption):
            param.hidden = False
    typer.echo(ctx.get_help(), color=ctx.color)
    raise typer.Exit()


def _option_keys(command: Any) -> dict[str, str]:
    """Every key a ``--config`` file may use -> the parameter it sets: each long option's name without
    its dashes, with ``-`` or ``_`` (``batch-size``, ``batch_size``; aliases such as ``context`` too)."""
    keys = {}
    for param in command.params:
        if param.name in ("config", "help_all") or not param.opts:
            continue
        for opt in param.opts:
            if opt.startswith("--"):
                keys[opt[2:]] = keys[opt[2:].replace("-", "_")] = param.name
    return keys


def _read_train_config(ctx: typer.Context, value: Path | None) -> Path | None:
    """``--config train.yaml``: its keys are the options' names (``epochs: 3``, ``batch-size: 32``);
    each value is checked as the option checks it, and the command line overrides the file."""
    if value is None or ctx.resilient_parsing:
        return value
    from lmleak.errors import ConfigError, did_you_mean
    from lmleak.safe_yaml import load_yaml_file

    data = load_yaml_file(value)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            "a train config is a mapping of option: value", path=value, hint="write e.g. epochs: 3"
        )
    keys = _option_keys(ctx.command)
    params: dict[str | None, Any] = {p.name: p for p in ctx.command.params}
    defaults: dict[str, Any] = {}
    set_by: dict[str, str] = {}
    for key, raw in data.items():
        name = keys.get(str(key))
        if name is None:
            raise ConfigError(
                f"unknown key {key!r}.{did_you_mean(str(key), [k for k in keys if '_' not in k])}",
                path=value,
                field=str(key),
                hint="use the names of lmleak train's options (lmleak train --help-all), without the dashes",
            )
        if name in set_by:
            raise ConfigError(
                f"{key!r} sets the same option as {set_by[name]!r}",
                path=value,
                field=str(key),
                hint="keep one",
            )
        set_by[name] = str(key)
        param = params[name]
        try:
            defaults[name] = param.process_value(ctx, raw)  # the option's own parser and checks
        except (typer.BadParameter, ValueError, TypeError) as e:
            message = e.message if isinstance(e, typer.BadParameter) else str(e)
            raise ConfigError(message, path=value, field=str(key)) from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


# long: 48 Typer options in the signature; the body only builds the config and calls train_and_summarise
def train(
    corpus: Annotated[Path, typer.Option(help="Training corpus (JSONL, CSV, Parquet, folder, HF dataset).")],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for the model, train.json and privacy.json.")
    ],
    arch: Annotated[str, typer.Option(help="gpt (small GPT-2) or lstm (paper 001's 2x128 LSTM).")] = "gpt",
    mode: Annotated[
        str, typer.Option(help="nodp | dp (DP-SGD) | crt (paper 002) | sdp (selective DP, LSTM).")
    ] = "nodp",
    epochs: Annotated[int, typer.Option(help="Passes over the training data.", parser=COUNT)] = 5,
    batch_size: Annotated[
        int,
        typer.Option(help="Sequences per mini-batch (expected size under Poisson sampling).", parser=COUNT),
    ] = 16,
    lr: Annotated[float, typer.Option(help="AdamW learning rate.", parser=POSITIVE)] = 2e-3,
    seq_len: Annotated[
        int,
        typer.Option(
            "--seq-len",
            "--context",
            help="Tokens per training sequence (the GPT's context).",
            parser=number(int, ge=2),
        ),
    ] = 128,
    tokenizer: Annotated[
        str | None, typer.Option(help="word or bpe (default: bpe for gpt, word for lstm).")
    ] = None,
    vocab_size: Annotated[
        int,
        typer.Option(help="Tokenizer vocabulary size (most frequent words for word-level).", parser=COUNT),
    ] = 4000,
    seed: SeedOpt = 0,
    holdout_users: Annotated[
        float,
        typer.Option(
            "--holdout-users",
            "--val-fraction",
            help="Share of users held out of training (0 allowed): validation, and the non-members / controls of `mia` and `probe run`; recorded in holdout.json.",
            parser=number(ge=0, lt=1),
        ),
    ] = 0.1,
    layers: Annotated[int, typer.Option("--layers", help="GPT: transformer layers.", parser=COUNT)] = 2,
    width: Annotated[
        int, typer.Option("--width", help="GPT: embedding width (a multiple of --heads).", parser=COUNT)
    ] = 128,
    heads: Annotated[int, typer.Option("--heads", help="GPT: attention heads.", parser=COUNT)] = 4,
    snapshots: Annotated[
        bool, typer.Option(help="Save a checkpoint after every epoch (for `lmleak study snapshots`).")
    ] = False,
    noise_multiplier: Annotated[
        float | None, typer.Option(help="DP noise multiplier (dp/crt/sdp).", parser=POSITIVE)
    ] = None,
    target_epsilon: Annotated[
        float | None, typer.Option(help="DP target epsilon instead of a noise multiplier.", parser=POSITIVE)
    ] = None,
    delta: Annotated[float, typer.Option(help="DP delta.", parser=OPEN_UNIT)] = 1e-5,
    max_grad_norm: Annotated[float, typer.Option(help="Per-sequence clipping norm.", parser=POSITIVE)] = 1.0,
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
            help="Learn the tokenizer on this public corpus, or reuse an lmleak model folder's (default: D_pub for crt, the training text for nodp, a public vocabulary from SmolLM2's merges for dp/sdp).",
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
    lora: Annotated[int, typer.Option("--lora", help="--base: LoRA adapter rank (peft).", parser=COUNT)] = 8,
    lora_targets: Annotated[
        str | None,
        typer.Option(
            "--lora-targets",
            help="--base: comma-separated module names to adapt (default per architecture: q_proj,v_proj for llama/mistral/qwen, c_attn for gpt2; else every Linear in attention).",
        ),
    ] = None,
    lora_alpha: Annotated[
        float | None,
        typer.Option("--lora-alpha", help="--base: LoRA scaling alpha (default 2 x rank).", parser=POSITIVE),
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
            parser=COUNT,
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(
            "--device",
            help="--base: auto (a GPU when present), cpu, cuda, cuda:N (default: the global --device).",
        ),
    ] = None,
    privacy_unit: Annotated[
        str | None,
        typer.Option(
            "--privacy-unit",
            help="dp/crt/sdp: what epsilon protects: user (default whenever the corpus has user ids: each step samples people, each person's gradient clipped as one) or sequence (one training sequence; a person with k sequences gets only group privacy).",
        ),
    ] = None,
    max_sequences_per_user: Annotated[
        int,
        typer.Option(
            "--max-sequences-per-user",
            help="--privacy-unit user: a sampled person contributes the mean gradient of up to K of their sequences, picked at random each step.",
            parser=COUNT,
        ),
    ] = 4,
    sampler: Annotated[
        str,
        typer.Option(
            "--sampler",
            help="dp/crt/sdp: poisson (default; what the accountant assumes) or shuffle (fixed batches; epsilon is then the bound without amplification by sampling, the Poisson number printed beside it with a warning).",
        ),
    ] = "poisson",
    health_checks: Annotated[
        bool,
        typer.Option(
            "--health-checks/--no-health-checks",
            help="dp/crt/sdp: stop a run whose trainable weights have not moved, or whose noise drowns the signal, after the first --health-check-steps steps and at the end (--no-health-checks: warn and go on).",
        ),
    ] = True,
    health_check_steps: Annotated[
        int,
        typer.Option(
            "--health-check-steps", help="Private steps before the first health check.", parser=COUNT
        ),
    ] = 10,
    max_noise_to_signal: Annotated[
        float,
        typer.Option(
            "--max-noise-to-signal",
            help="Health check: the largest median ratio of the noise's norm to the clipped gradient sum's norm.",
            parser=POSITIVE,
        ),
    ] = 1e4,
    replaces: Annotated[
        Path | None,
        typer.Option(
            "--replaces",
            help="The model this one is meant to replace: its validation perplexity is compared, and OUT/reaudit.yaml audits both.",
        ),
    ] = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Read options from this YAML file (keys as the option names: `epochs: 3`, `batch-size: 32`; "
            "unknown keys are refused); options on the command line win.",
            is_eager=True,
            callback=_read_train_config,
        ),
    ] = None,
    help_all: Annotated[
        bool,
        typer.Option(
            "--help-all",
            help="Show every option (the long tail too) and exit.",
            is_eager=True,
            callback=_show_every_option,
        ),
    ] = False,
) -> None:
    """Train a small GPT or LSTM on a corpus, or fine-tune a pretrained model (--base), plainly or with DP-SGD / CRT / selective DP.

    Example: lmleak train --corpus data/corpus.jsonl --out runs/model --holdout-users 0.2

    The common options are below; --help-all shows every one. --config train.yaml takes the same
    options from a file, keyed by their names without the dashes.
    """
    from lmleak.errors import ConfigError

    # lazy: lmleak.train.finetune and lmleak.train.run import torch, which `lmleak --help` must not load
    from lmleak.train.finetune import FinetuneConfig
    from lmleak.train.run import train_and_summarise

    quiet(quiet_ or json_out)
    if (public is None) != (private is None):
        raise ConfigError("give both --public and --private, or neither", field="public")
    # typer hands the literal choices over as str; the configs check mode, arch and dp_clipping
    common: dict[str, Any] = dict(
        mode=mode,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        seq_len=seq_len,
        seed=seed,
        holdout_users=holdout_users,
        noise_multiplier=noise_multiplier,
        target_epsilon=target_epsilon,
        target_delta=delta,
        max_grad_norm=max_grad_norm,
        accountant=accountant,
        policy=policy,
        secrets=None if secrets is None else str(secrets),
        privacy_unit=privacy_unit,
        max_sequences_per_user=max_sequences_per_user,
        sampler=sampler,
        health_checks=health_checks,
        health_check_steps=health_check_steps,
        max_noise_to_signal=max_noise_to_signal,
    )
    cfg: Any
    if base is not None:
        targets = tuple(t.strip() for t in lora_targets.split(",") if t.strip()) if lora_targets else None
        cfg = FinetuneConfig(
            base=base,
            lora=lora,
            lora_alpha=lora_alpha,
            full=full,
            merge=merge,
            lora_targets=targets,
            max_steps=max_steps,
            dp_clipping=dp_clipping or "auto",
            device=device,
            precision=precision,
            **common,
        )
    else:
        cfg = cast(Any, TrainConfig)(
            arch=arch,
            tokenizer=tokenizer,
            vocab_size=vocab_size,
            n_layer=layers,
            n_embd=width,
            n_head=heads,
            snapshots=snapshots,
            dp_clipping=dp_clipping or "bookkeeping",
            tokenizer_from=tokenizer_from,
            tokenizer_from_private=tokenizer_from_private,
            **common,
        )
    run = train_and_summarise(
        corpus,
        out_dir,
        cfg,
        public=public,
        private=private,
        progress=not (quiet_ or json_out),
        mode=mode,
        replaces=replaces,
    )
    _print_result(run, out_dir, json_out)


def _print_result(run: Any, out_dir: Path, json_out: bool) -> None:
    """Print the training summary: as JSON, or as a per-epoch table and the privacy notes."""
    if json_out:
        print_json(run.summary)
        return
    res = run.result
    out.print(_history_table(res, out_dir, run.arch, run.mode))
    held = res.val_users
    out.print(
        f"held out {len(held)} of {plural(len(held) + len(res.train_users), 'user')} (never trained on; the non-members and "
        f"controls of `lmleak mia` / `lmleak probe run`): {out_dir / 'holdout.json'}"
    )
    out.print(f"tokenizer learnt from: {res.privacy.get('tokenizer_source')}")
    _print_privacy_notes(res.privacy)
    summary = run.summary
    if summary.get("confidentiality"):
        out.print(f"[yellow]{escape(summary['confidentiality'])}[/]", soft_wrap=True)
    for w in summary.get("warnings") or []:
        out.print(f"[bold yellow]warning:[/] {escape(w)}", soft_wrap=True)
    out.print(
        f"re-audit it beside the model it replaces: {escape(summary['reaudit_command'])}", soft_wrap=True
    )


def _history_table(res: Any, out_dir: Path, arch: str, mode: str) -> Any:
    """One row per epoch: train loss, validation perplexity and top-1/top-3 accuracy, throughput."""
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
    return t


def _print_privacy_notes(privacy: dict[str, Any]) -> None:
    """The CRT split, the policy miss rate gamma and the DP epsilon, each when the run has one."""
    split = privacy.get("split") or {}
    if split:
        out.print(
            f"CRT split: D_pub holds {split.get('public_sentence_share', 0):.1%} of the sentences and "
            f"{split.get('public_word_share', 0):.1%} of the words; private because of: {split.get('private_reasons')}"
        )
    if privacy.get("gamma_source"):
        g = privacy.get("gamma")
        out.print(
            f"policy miss rate gamma = {'unknown' if g is None else f'{g:.4f}'} ({privacy['gamma_source']}"
            + (
                f", 95% upper bound {privacy['gamma_upper95']:.4f} on {plural(privacy['gamma_support'], 'secret')}"
                if privacy.get("gamma_upper95") is not None
                else ""
            )
            + ")"
        )
    if privacy.get("epsilon") is not None:
        # lazy: the CLI imports the library only when a command runs (`lmleak --help` stays light)
        from lmleak.train.release import epsilon_statement

        out.print(f"DP: {epsilon_statement(privacy)}", soft_wrap=True)
        out.print(
            f"    {privacy['accountant']} accountant, {privacy['steps']} private steps, "
            f"{privacy.get('sampler', 'poisson')} sampling of {privacy.get('sampled', 'sequences')} "
            f"(rate {privacy['sample_rate']:.3g})",
            soft_wrap=True,
        )


def _f(v: Any, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def evaluate_cmd(
    model: Annotated[str, typer.Option(help="Model: a folder, a .gguf file, smollm2-135m, ...")],
    corpus: Annotated[Path, typer.Option(help="Corpus to evaluate on.")],
    k: Annotated[list[int], typer.Option(help="Top-k accuracies to report (repeatable).", parser=COUNT)] = [  # noqa: B006
        1,
        3,
    ],
    out_path: Annotated[
        Path | None, typer.Option("--out", help="Also write the metrics to this JSON file.")
    ] = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
) -> None:
    """Perplexity (per token and per word) and top-k accuracy of a model on a corpus (teacher forcing).

    Example: lmleak eval --model runs/model --corpus data/corpus.jsonl
    """
    from lmleak.train.evaluate import evaluate_on_corpus  # lazy: imports torch

    quiet(quiet_ or json_out)
    record = evaluate_on_corpus(model, corpus, ks=tuple(k), out_path=out_path)
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
