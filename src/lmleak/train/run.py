"""One entry point for ``lmleak train``: a small model from scratch, or a fine-tune of a pretrained one.

The settings (:class:`~lmleak.train.config.TrainSettings`, what the command's options are) decide
which, through their record: a :class:`~lmleak.train.config.TrainConfig` trains a small GPT or LSTM
(:func:`lmleak.train.trainer.train_model`), a :class:`~lmleak.train.finetune.FinetuneConfig`
fine-tunes its ``base`` (:func:`lmleak.train.finetune.finetune`).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Corpus
from lmleak.data.loaders import load_corpus
from lmleak.errors import ConfigError
from lmleak.runs import atomic_write_text
from lmleak.train.config import TrainConfig, TrainSettings
from lmleak.train.finetune import FinetuneConfig, finetune
from lmleak.train.release import (
    confidentiality_statement,
    dp_summary,
    perplexity_warning,
    reaudit_config,
    replaced_perplexity,
)
from lmleak.train.restated import restated_warnings
from lmleak.train.trainer import TrainResult, train_model


def run_training(
    corpus: str | Path,
    out_dir: str | Path,
    config: TrainSettings | TrainConfig | FinetuneConfig,
    *,
    public: str | Path | None = None,
    private: str | Path | None = None,
    progress: bool = True,
) -> TrainResult:
    """Load the corpora and train (``TrainConfig``) or fine-tune (``FinetuneConfig``) into ``out_dir``.

    Args:
        corpus: the training corpus (any format :func:`lmleak.data.loaders.load_corpus` reads).
        out_dir: the folder for the model, ``train.json``, ``privacy.json`` and ``holdout.json``.
        config: what to train and how (settings, or the record :meth:`TrainSettings.config` makes).
        public: CRT only: a pre-split public corpus (with ``private``).
        private: CRT only: a pre-split private corpus (with ``public``).
        progress: fine-tuning: draw progress bars (the small trainer keeps its default; ``--quiet``
            hides every bar through :func:`lmleak.progress.set_enabled`).

    Returns:
        The training result (a :class:`~lmleak.train.finetune.FinetuneResult` for a fine-tune).
    """
    if isinstance(config, TrainSettings):
        config = config.config()
    train = load_corpus(corpus)
    pub = load_corpus(public) if public else None
    priv = load_corpus(private) if private else None
    if isinstance(config, FinetuneConfig):
        return finetune(train, out_dir, config, progress=progress, public=pub, private=priv)
    return train_model(train, out_dir, config, split=None if pub is None or priv is None else (pub, priv))


def train_user_dp(
    corpus: Corpus,
    out_dir: str | Path,
    settings: TrainSettings | None = None,
    *,
    val_corpus: Corpus | None = None,
    progress: bool = False,
    **fields: Any,
) -> TrainResult:
    """User-level DP training on a corpus with user ids: a small GPT/LSTM (``base`` None) or a LoRA /
    full fine-tune of ``base``, in ``mode`` ``dp`` (the default here), ``crt`` or ``sdp``, with the
    person as the privacy unit (:mod:`lmleak.train.units`): each step samples users, each contributes
    the mean gradient of up to ``max_sequences_per_user`` of their sequences, clipped as one; ε (from
    exactly one of ``target_epsilon`` / ``noise_multiplier``) is per person.

    ``fields`` are :class:`~lmleak.train.config.TrainSettings` fields (``epochs``, ``batch_size`` in
    users per step, ``lora``, ``max_grad_norm`` …), over ``settings`` when given. The result's
    ``privacy`` is what ``privacy.json`` holds (``privacy_unit: user``, ``sample_rate`` of users,
    ``users``, ``largest_user_sequences``).

    Example (a one-run audit with canary *users* builds its corpus, then)::

        res = train_user_dp(corpus, "run/model", target_epsilon=4.0, epochs=3, batch_size=8)
        res.privacy["epsilon"], res.privacy["privacy_unit"]   # (≤ 4.0, 'user')

    Raises:
        ConfigError: the corpus has no documents, or a setting is invalid.
    """
    if not len(corpus):
        raise ConfigError("user-level DP training needs a corpus with documents and user ids", field="corpus")
    given = {"mode": "dp", **(settings.to_dict() if settings else {}), **fields, "privacy_unit": "user"}
    config = TrainSettings(**given).config()
    if isinstance(config, FinetuneConfig):
        return finetune(corpus, out_dir, config, val_corpus=val_corpus, progress=progress)
    return train_model(corpus, out_dir, config, val_corpus=val_corpus, progress=progress)


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
    epsilon, the held-out users, the tokenizer's source, gamma and D_pub's share, the DP keys of
    :func:`lmleak.train.release.dp_summary` (``dp_epsilon``, ``privacy_unit``, the group-privacy bound
    of a sequence-level run …), and for a fine-tune its base, the perplexity before and the merged
    folder."""
    summary: dict[str, Any] = {
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
    summary.update(dp_summary(res.privacy))
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
    settings: TrainSettings | TrainConfig | FinetuneConfig,
    *,
    public: str | Path | None = None,
    private: str | Path | None = None,
    progress: bool = True,
    mode: str | None = None,
    replaces: str | Path | None = None,
) -> TrainingRun:
    """:func:`run_training`, with what ``lmleak train`` prints about it (the work of that command).

    ``mode`` is the mode as the user wrote it, for the record (a fine-tune also takes ``plain`` for
    ``nodp``); default ``settings.mode`` (as given). ``replaces``: the model this one is meant to replace (its
    validation perplexity is the reference of the quality warning, and the re-audit config audits
    both). The summary gains ``warnings`` and ``reaudit_command`` (``OUT/reaudit.yaml`` is written).
    """
    config = settings.config() if isinstance(settings, TrainSettings) else settings
    with restated_warnings() as third_party:  # Opacus' UserWarning with its site-packages path: restated
        res = run_training(corpus, out_dir, config, public=public, private=private, progress=progress)
    arch, mode = arch_label(config), mode or settings.mode
    summary = training_summary(res, arch, mode)
    summary["warnings"] = run_warnings(res, config, replaces) + third_party
    summary["confidentiality"] = confidentiality_statement(res.privacy)
    path = Path(out_dir) / "reaudit.yaml"
    fine_tune = isinstance(config, FinetuneConfig)
    atomic_write_text(path, reaudit_config(out_dir, corpus, replaces=replaces, fine_tune=fine_tune))
    summary["reaudit_config"] = str(path)
    summary["reaudit_command"] = f"lmleak audit {shlex.quote(str(path))}"
    return TrainingRun(res, arch, mode, summary)


def run_warnings(
    res: TrainResult, config: TrainConfig | FinetuneConfig, replaces: str | Path | None
) -> list[str]:
    """What a reader of the run must not miss: a shuffled run's ε, failed health checks, collapsed
    validation perplexity, a vocabulary learnt from private text under DP."""
    priv = res.privacy
    warnings = [priv["sampler_warning"]] if priv.get("sampler_warning") else []
    info = _read_json(Path(res.model_dir) / "train.json")
    warnings += list((info.get("health") or {}).get("warnings") or [])
    val = res.final.get("val_perplexity")
    if replaces is not None:
        ref, why_not = replaced_perplexity(replaces, res.model_dir)
        if ref is None:
            warnings.append(
                f"validation perplexity not compared with {replaces}: {why_not or 'it records none'}"
            )
        else:
            w = perplexity_warning(
                val, reference=ref, reference_name=f"the model it replaces ({Path(replaces).name})"
            )
            warnings += [w] if w else []
    elif "val_perplexity_before" in res.final:
        w = perplexity_warning(val, reference=res.final["val_perplexity_before"], reference_name="the base")
        warnings += [w] if w else []
    else:
        w = perplexity_warning(val, vocab_size=info.get("vocab_size"))
        warnings += [w] if w else []
    source = str(priv.get("tokenizer_source") or "")
    if config.mode != "nodp" and source.startswith("private"):
        warnings.append(
            f"the vocabulary was learnt from private text ({source}): its rare words (names) are outside the DP guarantee"
        )
    return warnings


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError):
        return {}
