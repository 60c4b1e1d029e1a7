"""One entry point for ``lmleak train``: a small model from scratch, or a fine-tune of a pretrained one.

The config decides which: a :class:`~lmleak.train.config.TrainConfig` trains a small GPT or LSTM
(:func:`lmleak.train.trainer.train_model`), a :class:`~lmleak.train.finetune.FinetuneConfig`
fine-tunes its ``base`` (:func:`lmleak.train.finetune.finetune`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.loaders import load_corpus
from lmleak.train.config import TrainConfig
from lmleak.train.finetune import FinetuneConfig, finetune
from lmleak.train.trainer import TrainResult, train_model


def run_training(
    corpus: str | Path,
    out_dir: str | Path,
    config: TrainConfig | FinetuneConfig,
    *,
    public: str | Path | None = None,
    private: str | Path | None = None,
    progress: bool = True,
) -> TrainResult:
    """Load the corpora and train (``TrainConfig``) or fine-tune (``FinetuneConfig``) into ``out_dir``.

    Args:
        corpus: the training corpus (any format :func:`lmleak.data.loaders.load_corpus` reads).
        out_dir: the folder for the model, ``train.json``, ``privacy.json`` and ``holdout.json``.
        config: what to train and how.
        public: CRT only: a pre-split public corpus (with ``private``).
        private: CRT only: a pre-split private corpus (with ``public``).
        progress: fine-tuning: draw progress bars (the small trainer keeps its default; ``--quiet``
            hides every bar through :func:`lmleak.progress.set_enabled`).

    Returns:
        The training result (a :class:`~lmleak.train.finetune.FinetuneResult` for a fine-tune).
    """
    train = load_corpus(corpus)
    pub = load_corpus(public) if public else None
    priv = load_corpus(private) if private else None
    if isinstance(config, FinetuneConfig):
        return finetune(train, out_dir, config, progress=progress, public=pub, private=priv)
    return train_model(train, out_dir, config, public=pub, private=priv)


@dataclass(frozen=True)
class TrainingRun:
    """A finished ``lmleak train``: the training result, the architecture and mode it names, and
    its ``--json`` record (:func:`training_summary`)."""

    result: TrainResult
    arch: str
    mode: str
    summary: dict[str, Any]


def arch_label(config: TrainConfig | FinetuneConfig) -> str:
    """What was trained, as ``lmleak train`` prints it: ``gpt``/``lstm``, or the kind of fine-tune.

    Example:
        >>> arch_label(TrainConfig(arch="lstm"))
        'lstm'
    """
    if isinstance(config, FinetuneConfig):
        return f"{'full' if config.full else f'LoRA r={config.lora}'} fine-tune of {config.base}"
    return config.arch


def training_summary(res: TrainResult, arch: str, mode: str) -> dict[str, Any]:
    """The ``--json`` record of a training run: where the model is, its final validation metrics,
    epsilon, the held-out users, the tokenizer's source, gamma and D_pub's share (and, for a
    fine-tune, its base, the perplexity before and the merged folder)."""
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
    merged_dir = getattr(res, "merged_dir", None)
    if merged_dir is not None or "val_perplexity_before" in res.final:
        summary.update(
            base=res.privacy.get("base"),
            val_perplexity_before=res.final.get("val_perplexity_before"),
            merged_dir=None if merged_dir is None else str(merged_dir),
        )
    return summary


def train_and_summarise(
    corpus: str | Path,
    out_dir: str | Path,
    config: TrainConfig | FinetuneConfig,
    *,
    public: str | Path | None = None,
    private: str | Path | None = None,
    progress: bool = True,
    mode: str | None = None,
) -> TrainingRun:
    """:func:`run_training`, with what ``lmleak train`` prints about it (the work of that command).

    ``mode`` is the mode as the user wrote it, for the record (a fine-tune also takes ``plain`` for
    ``nodp``); default ``config.mode``.
    """
    res = run_training(corpus, out_dir, config, public=public, private=private, progress=progress)
    arch, mode = arch_label(config), mode or config.mode
    return TrainingRun(res, arch, mode, training_summary(res, arch, mode))
