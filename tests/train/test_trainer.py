"""The trainer: loss goes down, users are held out, models reload through plain transformers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lmleak.data.corpus import Corpus, Document
from lmleak.train.config import TrainConfig
from lmleak.train.trainer import split_users, train_model


def tiny_corpus(users: int = 12, docs: int = 3) -> Corpus:
    rng = np.random.default_rng(0)
    words = "the order arrived late please refund my card number is".split()
    out = []
    for u in range(users):
        for d in range(docs):
            text = " ".join(rng.choice(words, size=20)) + f" My ID is: {u:06d}"
            out.append(Document(f"u{u}", f"u{u}-{d}", text))
    return Corpus(out)


def test_validation_holds_out_whole_users():
    corpus = tiny_corpus()
    train, val = split_users(corpus, 0.25, seed=0)
    assert val is not None and set(train.users).isdisjoint(val.users)
    assert len(train) + len(val) == len(corpus) and len(val.users) == 3


@pytest.mark.parametrize("arch", ["gpt", "lstm"])
def test_a_small_model_lowers_its_loss_and_reloads_identically(tmp_path, arch):
    corpus = tiny_corpus()
    cfg = TrainConfig(
        arch=arch, epochs=3, batch_size=8, seq_len=32, vocab_size=60, n_embd=32, n_head=2, lr=5e-3
    )
    res = train_model(corpus, tmp_path / arch, cfg)
    losses = [h["train_loss"] for h in res.history]
    assert losses[-1] < losses[0]
    assert set(res.train_users).isdisjoint(res.val_users)
    assert (tmp_path / arch / "train.json").exists() and (tmp_path / arch / "privacy.json").exists()
    from lmleak.models.small import load_small_model

    lm = load_small_model(tmp_path / arch)
    ids = lm.tokenizer.encode(corpus[0].text)[: lm.max_length - 1]  # one window: BOS + ids
    stats = lm.token_stats([ids])[0]
    assert np.all(stats.logprobs <= 0) and len(stats) == len(ids)
    if arch == "gpt":
        from transformers import AutoModelForCausalLM, AutoTokenizer

        hf = AutoModelForCausalLM.from_pretrained(tmp_path / arch)
        tok = AutoTokenizer.from_pretrained(tmp_path / arch)
        x = torch.tensor([[tok.bos_token_id, *ids]])
        with torch.no_grad():
            ref = torch.log_softmax(hf(input_ids=x).logits[0, :-1], -1).gather(-1, x[0, 1:, None]).squeeze(-1)
        np.testing.assert_allclose(stats.logprobs, ref.numpy(), atol=1e-4)


def test_snapshots_are_saved_per_epoch(tmp_path):
    cfg = TrainConfig(arch="lstm", epochs=2, batch_size=8, seq_len=16, vocab_size=40, snapshots=True)
    train_model(tiny_corpus(4, 2), tmp_path, cfg)
    assert sorted(p.name for p in (tmp_path / "snapshots").iterdir()) == ["epoch-1", "epoch-2"]


def test_dp_modes_need_a_noise_setting():
    from lmleak.errors import ConfigError

    with pytest.raises(ConfigError, match="noise_multiplier"):
        TrainConfig(mode="dp")
    with pytest.raises(ConfigError, match="LSTM"):
        TrainConfig(mode="sdp", arch="gpt", noise_multiplier=1.0)
