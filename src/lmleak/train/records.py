"""What a fine-tuning run writes besides the weights: ``train.json``, ``privacy.json``, ``holdout.json``,
the checkpoint, and the fingerprint that ties a checkpoint to its config and data.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch

from lmleak.data.corpus import Corpus
from lmleak.data.holdout import TRAIN_DOCUMENTS_KEY, Holdout, document_counts, held_out_of, write_holdout
from lmleak.runs import atomic_write_json
from lmleak.train.config import FinetuneConfig
from lmleak.train.finetuner import Finetuner
from lmleak.train.plain import Chunks
from lmleak.train.trainer import inherited_tokenizer_source, policy_gamma, public_share


def fingerprint(config: FinetuneConfig, n_train: int, n_val: int) -> str:
    """What a checkpoint must match to be resumed: the config (but the device and ``merge``) and the data sizes."""
    keep = {k: v for k, v in config.to_dict().items() if k not in ("device", "merge")}
    return hashlib.sha256(
        json.dumps([keep, n_train, n_val], sort_keys=True, default=str).encode()
    ).hexdigest()[:16]


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Write a checkpoint atomically (a temporary file renamed over the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train_info(
    ft: Finetuner,
    base: dict[str, str],
    model_info: dict[str, Any],
    history: list[dict[str, Any]],
    final: dict[str, Any],
    resumed_from: int | None,
    corpora: tuple[Corpus, Corpus | None],
    train_sequences: Chunks,
    split_stats: dict[str, Any] | None,
) -> dict[str, Any]:
    """``train.json``: the config, model, device and precision, history, and who was trained on
    (``corpora``: the training corpus and the held-out one)."""
    train_corpus, val = corpora
    return {
        "config": ft.config.to_dict(),
        "kind": "finetune",
        "base": base["spec"],
        "model": model_info,
        "device": ft.device,
        "precision": ft.precision.name,
        "precision_reason": ft.precision.reason,
        "history": history,
        "final": final,
        "resumed_after_epoch": resumed_from,
        "train_users": train_corpus.users,
        "val_users": val.users if val is not None else [],
        "num_train_documents": len(train_corpus),
        TRAIN_DOCUMENTS_KEY: document_counts(d.user_id for d in train_corpus),
        "num_train_sequences": len(train_sequences),
        "split_stats": split_stats,
    }


def write_records(
    out: Path,
    ckpt: Path,
    info: dict[str, Any],
    privacy: dict[str, Any],
    cfg: FinetuneConfig,
    source: str | None,
) -> None:
    """Write ``train.json``, ``holdout.json`` and ``privacy.json``, then drop the finished run's checkpoint."""
    atomic_write_json(out / "train.json", info)
    held = held_out_of(info["val_users"], info["train_users"])
    write_holdout(out, Holdout(held, cfg.holdout_users, cfg.seed, source))
    atomic_write_json(out / "privacy.json", privacy)
    ckpt.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        ckpt.parent.rmdir()


def final_metrics(
    history: list[dict[str, Any]], before: dict[str, Any] | None, wall_seconds: float, trained_tokens: int
) -> dict[str, Any]:
    """The last epoch's record, plus perplexity before training, wall time and overall throughput."""
    final = dict(history[-1]) if history else {}
    if before is not None:
        final["val_perplexity_before"] = before["perplexity"]
    final["wall_seconds"] = wall_seconds
    # over every epoch's own time (an epoch trained before a resumption included)
    epoch_seconds = sum(h.get("seconds") or 0.0 for h in history)
    final["tokens_per_s"] = (
        sum(h.get("tokens") or 0 for h in history) / epoch_seconds if epoch_seconds > 0 else None
    )
    final["tokens_this_run"] = trained_tokens
    return final


def privacy_record(
    ft: Finetuner,
    cfg: FinetuneConfig,
    base: dict[str, str],
    train_corpus: Corpus,
    split_stats: dict[str, Any] | None,
) -> dict[str, Any]:
    """``privacy.json``: the accountant's epsilon, the tokenizer and base, gamma and the CRT split."""
    privacy = ft.privacy()
    base_dir = Path(base["spec"])
    privacy["tokenizer_source"] = (
        inherited_tokenizer_source(base_dir) if base_dir.is_dir() else f"pretrained:{base['name']}"
    )
    privacy["base"] = base["spec"]
    privacy.update(train_corpus.people_record())  # people after merging spellings (issue 33)
    if cfg.mode in ("crt", "sdp"):
        privacy.update(policy_gamma(cfg, train_corpus))  # type: ignore[arg-type]
    if split_stats:
        privacy["split"] = public_share(split_stats)
    return privacy
