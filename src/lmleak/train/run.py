"""One entry point for ``lmleak train``: a small model from scratch, or a fine-tune of a pretrained one.

The config decides which: a :class:`~lmleak.train.config.TrainConfig` trains a small GPT or LSTM
(:func:`lmleak.train.trainer.train_model`), a :class:`~lmleak.train.finetune.FinetuneConfig`
fine-tunes its ``base`` (:func:`lmleak.train.finetune.finetune`).
"""

from __future__ import annotations

from pathlib import Path

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
