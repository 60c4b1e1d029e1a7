"""Public models for the curated metric and the leakage epsilon (paper 001 §5, §6.2).

A public model is any model lmleak loads with SCORE access (another lmleak model, a Hugging Face
directory, ``smollm2-135m``), or the *leave-out* model of §5/§6.2: the same architecture
retrained on D without every user who owns a unique leaked sequence — a model that never saw any
data of those users, so its perplexity of their sequences is what "not memorised" looks like.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Corpus
from lmleak.errors import RunError
from lmleak.models.loading import load_model
from lmleak.train.trainer import TrainConfig, train_model

LEAVE_OUT = "leave-out"


def load_any_model(spec: str | Path) -> Any:
    """Load a model through :func:`lmleak.models.loading.load_model` (a path or any model spec)."""
    return load_model(str(spec))


def _train_config(model_dir: Path | None, overrides: dict[str, Any] | None) -> Any:
    """The audited model's training config (from its ``train.json``) as a ``TrainConfig``."""
    import dataclasses

    values: dict[str, Any] = {}
    if model_dir is not None:
        train_json = Path(model_dir) / "train.json"
        if train_json.exists():
            data = json.loads(train_json.read_text(encoding="utf-8"))
            values = dict(data.get("config", data))
        manifest = Path(model_dir) / "lmleak_model.json"
        if "arch" not in values and manifest.exists():
            values["arch"] = json.loads(manifest.read_text(encoding="utf-8")).get("arch", "gpt")
    values.update(overrides or {})
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    values = {k: v for k, v in values.items() if k in names}
    if "snapshots" in names:
        values["snapshots"] = False  # the public model needs no per-epoch checkpoints
    if "mode" in names:
        values["mode"] = "nodp"
    return TrainConfig(**values)


class FoldedPublic:
    """Leave-out public models in folds: the owners of unique sequences are split into ``F`` folds
    and fold ``f``'s model is trained without fold ``f``'s owners, so every owner is scored by a
    model that never saw any of their data (the §6.2 guarantee) even when leaving out *all*
    owners at once would leave too little data (a corpus where every user leaks something).

    Users outside every fold (non-owners) are scored by fold 0's model.
    """

    def __init__(self, models: list[Any], fold_of: dict[str, int], name: str = LEAVE_OUT) -> None:
        self.models, self.fold_of, self.name = models, fold_of, name
        caps = [frozenset(getattr(m, "capabilities", frozenset())) for m in models]
        self.capabilities = frozenset.intersection(*caps) if caps else frozenset()

    def model_for(self, user_id: str) -> Any:
        return self.models[self.fold_of.get(user_id, 0)]


def leave_out_folds(num_owners: int, num_users: int) -> int:
    """How many leave-out models: 1 (the paper's single model) while leaving every owner out keeps
    at least half of the users; otherwise 2, so each model still trains on half of them.

    Example:
        >>> leave_out_folds(3, 100), leave_out_folds(60, 100), leave_out_folds(0, 10)
        (1, 2, 1)
    """
    return 1 if num_owners <= num_users - num_owners else 2


def train_leave_out(
    corpus: Corpus,
    users: Iterable[str],
    out_dir: str | Path,
    *,
    model_dir: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    folds: int | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Retrain the audited architecture on ``corpus`` without ``users``; returns (model, info).

    The config is read from the audited model's ``train.json`` when present (same architecture,
    tokenizer kind, epochs, seed), with ``overrides`` applied on top. The public model is trained
    plainly (``mode="nodp"``, no snapshots) even when the audited one used DP: it stands for what
    the best model of that architecture learns without those users, so a DP model's ε_l is not
    inflated by a deliberately weakened reference. With ``folds > 1`` (default: see
    :func:`leave_out_folds`) the result is a :class:`FoldedPublic`.
    """

    left_out = sorted(set(users))
    all_users = corpus.users
    folds = folds or leave_out_folds(len(left_out), len(all_users))
    config = _train_config(None if model_dir is None else Path(model_dir), overrides)
    tokenizer, tok_source = None, None
    if model_dir is not None and (Path(model_dir) / "tokenizer.json").is_file():
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(Path(model_dir))
        tok_source = f"pretrained:{Path(model_dir).name}"
    fold_of = {u: i % folds for i, u in enumerate(left_out)}
    models, trained_on = [], []
    for f in range(folds):
        drop = [u for u in left_out if fold_of[u] == f]
        remaining = corpus.without_users(drop)
        if len(remaining) == 0:
            raise RunError(
                "leave-out would remove every user of the corpus; no public model can be trained",
            )
        out = Path(out_dir) if folds == 1 else Path(out_dir) / f"fold-{f}"
        # the audited model's own tokenizer: perplexities per token then compare, and a vocabulary
        # learnt without the left-out users would make their words look rarer than they are
        result = train_model(remaining, out, config, tokenizer=tokenizer, tokenizer_source=tok_source)
        models.append(load_any_model(Path(getattr(result, "model_dir", out))))
        trained_on.append(len(remaining))
    info = {
        "kind": LEAVE_OUT,
        "path": str(out_dir),
        "users_left_out": len(left_out),
        "folds": folds,
        "documents_trained_on": trained_on[0] if folds == 1 else trained_on,
        "config": repr(config),
    }
    if folds == 1:
        return models[0], info
    return FoldedPublic(models, fold_of), info
