"""Fine-tuning a pretrained causal LM (LoRA adapters via ``peft``, or all weights) in every training mode.

``lmleak train --base NAME_OR_DIR --lora R`` lands here. The modes are those of
:mod:`lmleak.train.trainer` with the same rules, applied to the trainable weights only:

- ``nodp`` (alias ``plain``): AdamW over shuffled mini-batches;
- ``dp``: DP-SGD (Abadi et al. 2016) — Poisson sampling at rate q = 1 / steps-per-epoch,
  per-sequence clipping to ``max_grad_norm``, Gaussian noise N(0, σ²C²), division by the expected
  batch size, Opacus' accountant (``prv`` or ``rdp``); an empty Poisson batch is a noise-only step;
- ``crt``: paper 002 Algorithm 1 — each epoch one plain epoch on D_pub, then one DP epoch on D_pri
  (the same dedup/redact/split as the small models: :func:`lmleak.train.dp.crt_split_for`); only
  the private steps are accounted;
- ``sdp``: selective DP (Shi et al. 2021) — the ordinary gradient of the loss on non-sensitive
  target tokens plus the clipped, noised per-sequence gradient of the loss on sensitive ones.

Per-sample gradients are taken of the *trainable* weights only (the LoRA matrices A and B, which
peft builds as ``nn.Linear`` layers): by the project's book-keeping clipping
(:mod:`lmleak.train.bk`, one backward pass, a per-sample (in × r) product per adapter) when every
trainable weight belongs to a layer it handles, otherwise (``--full`` on a model with RMSNorm, tied
embeddings) by Opacus' ``GradSampleModule`` hooks. The frozen pretrained weights are public: the
DP guarantee covers the fine-tuning data, on the assumption that the base never saw it.

Device and precision: the device comes from ``--device`` / :mod:`lmleak.models.device` (a GPU when
torch sees one). ``precision="auto"`` autocasts the forward pass to bfloat16 on a GPU that supports
it and stays in float32 otherwise — on the CPU always (CPU bf16 autocast is slower than fp32 on the
machines lmleak targets and changes results), and on a GPU without bf16 (fp16 would need loss
scaling, which would have to be undone before per-sample clipping). Weights, optimiser state,
clipping and noise stay in float32. ``train.json`` records the device, the precision and why.

Checkpoints: after every epoch the trainable weights, optimiser, accountant history, counters and
RNG states go to ``OUT/checkpoint/state.pt``; rerunning the same command resumes after the last
finished epoch with the same batches and noise as an uninterrupted run (a different config is
refused). The checkpoint is removed once the model is saved.

Output: the adapters (``adapter_config.json`` + ``adapter_model.safetensors``) or, with ``full``,
a plain Hugging Face folder; ``lmleak_finetune.json`` (the manifest: base, kind, LoRA settings,
start token); ``train.json``, ``privacy.json``, ``holdout.json``; with ``merge`` also ``merged/``,
a plain Hugging Face folder of base + adapters. :func:`lmleak.models.loading.load_model` loads all.

The pieces, one concern per module: the settings (:class:`lmleak.train.config.FinetuneConfig`), model
preparation — base, tokenizer, LoRA, precision, saving (:mod:`lmleak.train.prepare`), per-sample
clipping (:mod:`lmleak.train.clipping`), the optimiser, noise and accountant of a run
(:mod:`lmleak.train.finetuner`), the records it writes (:mod:`lmleak.train.records`); this module
is the loop over epochs and the entry point, and re-exports the names callers import from it
(:class:`~lmleak.train.finetuner.Finetuner`, :func:`~lmleak.train.prepare.prepare_model`,
:func:`~lmleak.train.prepare.resolve_precision`).
"""

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lmleak.data.corpus import Corpus
from lmleak.errors import ConfigError
from lmleak.models.device import resolve_device
from lmleak.progress import track
from lmleak.train.config import FinetuneConfig
from lmleak.train.finetuner import Finetuner, evaluate_chunks
from lmleak.train.plain import EpochMeter
from lmleak.train.prepare import load_base, prepare_model, resolve_precision, save_model
from lmleak.train.records import (
    final_metrics,
    fingerprint,
    privacy_record,
    save_checkpoint,
    train_info,
    write_records,
)
from lmleak.train.sensitive import mask_token_id
from lmleak.train.sequences import RunData, crt_split_words, encode_run
from lmleak.train.trainer import TrainResult, split_users

# the names callers import from this module (tests, benchmarks, experiments)
__all__ = [
    "FinetuneConfig",
    "FinetuneResult",
    "Finetuner",
    "evaluate_chunks",
    "finetune",
    "prepare_model",
    "resolve_precision",
]


@dataclass
class FinetuneResult(TrainResult):
    """A :class:`~lmleak.train.trainer.TrainResult` plus the merged folder (``--merge``), if any."""

    merged_dir: Path | None = None


def finetune(
    corpus: Corpus,
    out_dir: str | Path,
    config: FinetuneConfig,
    *,
    val_corpus: Corpus | None = None,
    public: Corpus | None = None,
    private: Corpus | None = None,
    progress: bool = True,
    on_epoch_end: Callable[[int, torch.nn.Module], None] | None = None,
) -> FinetuneResult:
    """Fine-tune ``config.base`` on ``corpus`` and save it to ``out_dir`` (see the module docstring).

    Args:
        corpus: the training data; ``config.holdout_users`` of its users are held out (validation,
            and the non-members of membership inference) unless ``val_corpus`` is given.
        public, private: ``crt`` with a pre-computed split (otherwise paper 002's split of ``corpus``).
        on_epoch_end: called as ``(epoch, model)`` after each epoch's checkpoint is written.
    """
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    if not progress:  # transformers' loading/saving bars go to stderr, around --json output
        hf_logging.disable_progress_bar()
    try:
        return _finetune(
            corpus,
            out_dir,
            config,
            val_corpus=val_corpus,
            public=public,
            private=private,
            progress=progress,
            on_epoch_end=on_epoch_end,
        )
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _finetune(
    corpus: Corpus,
    out_dir: str | Path,
    config: FinetuneConfig,
    *,
    val_corpus: Corpus | None,
    public: Corpus | None,
    private: Corpus | None,
    progress: bool,
    on_epoch_end: Callable[[int, torch.nn.Module], None] | None,
) -> FinetuneResult:
    """:func:`finetune` with transformers' progress bars already set: load, encode, train, save."""
    cfg = config
    device = resolve_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    out = Path(out_dir)
    torch.manual_seed(cfg.seed)
    train_corpus, val = (
        (corpus, val_corpus) if val_corpus is not None else split_users(corpus, cfg.holdout_users, cfg.seed)
    )
    module, tok, base = load_base(cfg, device)
    split = crt_split_words(train_corpus, cfg, public, private) if cfg.mode == "crt" else None
    data = encode_run(cfg, tok, train_corpus, val, split)

    model, model_info = prepare_model(module, cfg)
    model.to(device)
    ft = Finetuner(model, cfg, device, precision)
    if cfg.mode != "nodp":
        ft.set_private_data(len(data.train), data.units, data.unit, data.unit_reason)
        ft.mask_id = mask_token_id(tok)
    before = evaluate_chunks(model, data.val, device, precision) if data.val is not None else None

    ckpt = out / "checkpoint" / "state.pt"
    fp = fingerprint(cfg, len(data.train), 0 if data.val is None else len(data.val))
    history, resumed_from = _resume(ft, ckpt, fp)
    t_start = time.perf_counter()
    trained_tokens = _run_epochs(
        ft,
        data,
        history,
        first_epoch=1 if resumed_from is None else resumed_from + 1,
        ckpt=ckpt,
        fingerprint=fp,
        label=f"{cfg.mode}, {model_info['kind']}",
        progress=progress,
        on_epoch_end=on_epoch_end,
    )

    health = ft.finish_health()
    final = final_metrics(history, before, time.perf_counter() - t_start, trained_tokens)
    privacy = privacy_record(ft, cfg, base, train_corpus, data.split_stats)
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    merged_dir = save_model(model, tok, out, cfg, base, model_info)
    info = train_info(
        ft, base, model_info, history, final, resumed_from, (train_corpus, val), data.train, data.split_stats
    ) | {"privacy_unit": privacy.get("privacy_unit"), "health": health}  # the unit as resolved; DP health
    write_records(out, ckpt, info, privacy, cfg, corpus.source)
    return FinetuneResult(out, history, final, privacy, info["train_users"], info["val_users"], merged_dir)


def _resume(ft: Finetuner, ckpt: Path, fingerprint: str) -> tuple[list[dict[str, Any]], int | None]:
    """(history so far, last epoch done): restored from ``ckpt`` when this run left one, else ([], None)."""
    if not ckpt.exists():
        return [], None
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    if state.get("fingerprint") != fingerprint:
        raise ConfigError(
            f"{ckpt} belongs to a different run (config or data changed)",
            field="out",
            hint="rerun the original command to resume it, or use a new --out / delete the checkpoint folder",
        )
    done, history = ft.restore(state)
    return history, done


def _run_epochs(
    ft: Finetuner,
    data: RunData,
    history: list[dict[str, Any]],
    *,
    first_epoch: int,
    ckpt: Path,
    fingerprint: str,
    label: str,
    progress: bool,
    on_epoch_end: Callable[[int, torch.nn.Module], None] | None,
) -> int:
    """Train epochs ``first_epoch..epochs``, appending to ``history`` and checkpointing each; the tokens trained."""
    cfg, model = ft.config, ft.model
    trained_tokens = 0
    taken = {"plain": ft.public_steps, "private": ft.steps}
    kinds = [
        k for k, used in (("plain", cfg.mode in ("nodp", "crt")), ("private", cfg.mode != "nodp")) if used
    ]
    for epoch in range(first_epoch, cfg.epochs + 1):
        if cfg.max_steps is not None and all(taken[k] >= cfg.max_steps for k in kinds):
            break  # every step allowed is taken: a further epoch would only re-evaluate (minutes on a CPU)
        model.train()
        batches = _epoch_batches(ft, data)
        # tracked as the steps run (tracking the list as it was built logged "done in 0s" up front)
        steps: Iterable[tuple[str, tuple[Any, ...]]] = (
            track(batches, description=f"epoch {epoch}/{cfg.epochs} ({label})") if progress else batches
        )
        record = _train_epoch(ft, steps, taken, epoch)
        trained_tokens += record["tokens"]
        if data.val is not None:
            val = evaluate_chunks(model, data.val, ft.device, ft.precision)
            record.update({f"val_{k}": v for k, v in val.items()})
        history.append(record)
        save_checkpoint(ckpt, ft.state(epoch, history, fingerprint))
        if on_epoch_end is not None:
            on_epoch_end(epoch, model)
    return trained_tokens


def _epoch_batches(ft: Finetuner, data: RunData) -> list[tuple[str, tuple[Any, ...]]]:
    """One epoch's batches, in order: shuffled plain (nodp, or crt's public) then the private ones
    from the sampler (per sequence, or grouped by user)."""
    batches: list[tuple[str, tuple[Any, ...]]] = []
    if data.mode in ("nodp", "crt"):
        chunks = data.train if data.mode == "nodp" else data.public
        assert chunks is not None  # crt always encodes its public part
        order = torch.randperm(len(chunks))
        for s in range(0, len(order), data.batch_size):
            idx = order[s : s + data.batch_size]
            batches.append(("plain", (chunks.ids[idx], chunks.lengths[idx])))
    if data.mode == "dp" or data.mode == "crt":
        batches.extend(("dp", b) for b in ft.private_batches(data.train))
    elif data.mode == "sdp":
        for ids, lengths, groups, sensitive in ft.private_batches(data.train, data.sensitive):
            batches.append(("sdp", (ids, lengths, sensitive, groups)))
    return batches


def _train_epoch(
    ft: Finetuner, steps: Iterable[tuple[str, tuple[Any, ...]]], taken: dict[str, int], epoch: int
) -> dict[str, Any]:
    """Take the epoch's steps (at most ``max_steps`` of each kind in all) and return its history record."""
    max_steps = ft.config.max_steps
    meter = EpochMeter()
    for kind, batch in steps:
        which = "plain" if kind == "plain" else "private"
        if max_steps is not None and taken[which] >= max_steps:
            continue
        taken[which] += 1
        if kind == "plain":
            if len(batch[0]) == 0:
                continue
            loss = ft.plain_step(*batch)
            ft.public_steps += 1
        elif kind == "dp":
            loss = ft.dp_step(*batch)
        else:
            loss = ft.sdp_step(*batch)
        meter.add(loss, batch[1])
    return meter.record(epoch, tokens=True)
