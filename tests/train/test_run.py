"""run_training: the config picks the trainer, and every corpus path is loaded once, in order."""

from __future__ import annotations

import json

import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.train import run as run_module
from lmleak.train.config import TrainConfig
from lmleak.train.finetune import FinetuneConfig


@pytest.fixture
def paths(tmp_path):
    out = {}
    for name in ("train", "pub", "priv"):
        docs = [Document(f"{name}{u}", f"{name}{u}-0", f"{name} text of user {u}") for u in range(3)]
        out[name] = tmp_path / f"{name}.jsonl"
        out[name].write_text("".join(json.dumps(d.to_dict()) + "\n" for d in Corpus(docs)))
    return out


@pytest.fixture
def calls(monkeypatch):
    seen: list[tuple[str, tuple, dict]] = []

    def record(kind):
        def fn(*args, **kwargs):
            seen.append((kind, args, kwargs))
            return kind

        return fn

    monkeypatch.setattr(run_module, "train_model", record("small"))
    monkeypatch.setattr(run_module, "finetune", record("finetune"))
    return seen


def _users(corpus):
    return None if corpus is None else sorted(corpus.users)


def test_a_train_config_trains_a_small_model_on_the_loaded_corpora(paths, calls, tmp_path):
    cfg = TrainConfig(mode="crt", noise_multiplier=1.0)
    assert (
        run_module.run_training(
            paths["train"], tmp_path / "o", cfg, public=paths["pub"], private=paths["priv"]
        )
        == "small"
    )
    [(kind, args, kwargs)] = calls
    assert kind == "small" and args[1:] == (tmp_path / "o", cfg)
    assert _users(args[0]) == ["train0", "train1", "train2"]
    assert _users(kwargs["public"]) == ["pub0", "pub1", "pub2"] and _users(kwargs["private"]) == [
        "priv0",
        "priv1",
        "priv2",
    ]
    assert "progress" not in kwargs  # the small trainer keeps its own default


def test_a_finetune_config_fine_tunes_its_base(paths, calls, tmp_path):
    cfg = FinetuneConfig(base="smollm2-135m")
    assert run_module.run_training(paths["train"], tmp_path / "o", cfg, progress=False) == "finetune"
    [(kind, args, kwargs)] = calls
    assert kind == "finetune" and args[1:] == (tmp_path / "o", cfg)
    assert _users(args[0]) == ["train0", "train1", "train2"]
    assert kwargs == {"progress": False, "public": None, "private": None}
