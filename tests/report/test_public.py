"""The leave-out public model (paper 001 §5, §6.2): retrain without the owners of unique sequences."""

from __future__ import annotations

import json
import types
from dataclasses import dataclass

import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.models.fake import FakeLM


@dataclass(frozen=True)
class _TrainConfig:
    arch: str = "gpt"
    epochs: int = 1
    seed: int = 0
    tokenizer: str = "word"
    snapshots: bool = True
    mode: str = "nodp"


@pytest.fixture
def fake_trainer(monkeypatch, tmp_path):
    """A stand-in for ``lmleak.train.trainer`` that records what it was asked to train."""
    calls: list[tuple[Corpus, object]] = []

    def train_model(corpus, out_dir, config, *, tokenizer=None, tokenizer_source=None):
        from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

        calls.append((corpus, config))
        tok = (
            tokenizer
            if tokenizer is not None
            else build_tokenizer(corpus.texts(), kind="word", vocab_size=100)
        )
        save_small_model(
            new_small_gpt(len(tok), SmallGPTConfig(n_positions=32, n_embd=16, n_layer=1, n_head=2)),
            tok,
            out_dir,
        )
        return types.SimpleNamespace(model_dir=out_dir)

    from lmleak.report import public

    monkeypatch.setattr(public, "TrainConfig", _TrainConfig)
    monkeypatch.setattr(public, "train_model", train_model)
    return calls


def test_leave_out_retrains_without_every_owner_of_a_unique_sequence_and_reuses_the_config(
    tmp_path, fake_trainer
):
    from lmleak.report.leakage import ReportConfig, run_report

    texts = [
        "my secret code is 7 7 3 1",
        "the weather is nice today",
        "the weather is nice today",
        "call me at 555 0100 now",
    ]
    corpus = Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)])
    model = FakeLM.from_texts(texts)
    model_dir = tmp_path / "audited"
    model_dir.mkdir()
    (model_dir / "train.json").write_text(
        json.dumps({"config": {"arch": "lstm", "epochs": 7, "seed": 3, "snapshots": True}})
    )
    s = run_report(
        model, corpus, tmp_path / "run", ReportConfig(k=(1,)), public_model="leave-out", model_dir=model_dir
    )
    ((trained, config),) = fake_trainer
    left = {d.user_id for d in corpus} - {d.user_id for d in trained}
    assert left == {"u0", "u3"}  # "the weather ..." is held by two users: not unique
    assert (config.arch, config.epochs, config.seed, config.snapshots) == ("lstm", 7, 3, False)
    assert s["public_model"]["kind"] == "leave-out" and s["public_model"]["users_left_out"] == 2
    assert s["leakage_epsilon"] is not None


def test_a_public_model_without_score_access_is_refused(tmp_path):
    from lmleak.errors import CapabilityError
    from lmleak.models.base import Capability
    from lmleak.report.leakage import ReportConfig, run_report

    class Api:
        name, capabilities = "api", frozenset({Capability.TOP_K})

    texts = ["a b c d", "e f g h"]
    corpus = Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)])
    with pytest.raises(CapabilityError, match="score"):
        run_report(FakeLM.from_texts(texts), corpus, tmp_path, ReportConfig(k=(1,)), public_model=Api())


def test_when_every_user_leaks_leave_out_trains_folds_that_never_saw_the_scored_owner(tmp_path, fake_trainer):
    from lmleak.report.leakage import ReportConfig, run_report
    from lmleak.report.public import FoldedPublic

    texts = [
        "my secret code is 7 7 3 1",
        "call me at 555 0100 now",
        "my pin is 4 4 1 2 ok",
        "send it to 12 elm st",
    ]
    corpus = Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)])
    s = run_report(
        FakeLM.from_texts(texts), corpus, tmp_path / "run", ReportConfig(k=(1,)), public_model="leave-out"
    )
    assert s["public_model"]["folds"] == 2 and s["public_model"]["users_left_out"] == 4
    trained = [{d.user_id for d in c} for c, _ in fake_trainer]
    assert trained == [{"u1", "u3"}, {"u0", "u2"}]  # fold f leaves out owners f, f+2, ...
    first, second = object(), object()
    folded = FoldedPublic([first, second], {"u0": 0, "u1": 1})
    assert folded.model_for("u1") is second and folded.model_for("u9") is first  # unknown users: fold 0
    assert s["leakage_epsilon"] is not None
