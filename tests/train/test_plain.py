"""train.plain: chunks, batches, per-sequence losses, evaluation and plain SGD, each against a loop."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from lmleak.models.small import build_tokenizer
from lmleak.train.config import TrainConfig
from lmleak.train.plain import (
    IGNORE,
    Chunks,
    PlainStrategy,
    batch_tensors,
    encode_chunks,
    evaluate,
    forward_logits,
    sequence_losses,
)


def test_chunks_never_cross_documents():
    tok = build_tokenizer(["a b c", "d e f g h i"], kind="word", vocab_size=30)
    chunks = encode_chunks(["a b c", "d e f g h i"], tok, seq_len=4)
    bos, eos = tok.bos_token_id, tok.eos_token_id
    rows = [chunks.ids[i, : chunks.lengths[i]].tolist() for i in range(len(chunks))]
    assert rows[0][0] == bos and rows[0][-1] == eos and len(rows[0]) == 5  # BOS a b c EOS
    assert rows[1][0] == bos and rows[-1][-1] == eos
    assert all(eos not in r[:-1] for r in rows)


class _Bigram(torch.nn.Module):
    """logits[t] = table[ids[t]]: a model whose every prediction can be recomputed by hand."""

    def __init__(self, vocab: int, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.table = torch.nn.Parameter(torch.randn(vocab, vocab, generator=g))
        self.seen: list[torch.Tensor] = []

    def forward(self, input_ids, attention_mask=None, position_ids=None):
        self.seen.append(position_ids)
        return SimpleNamespace(logits=self.table[input_ids])


def _chunks() -> Chunks:
    ids = torch.tensor([[1, 5, 6, 7, 2], [1, 8, 2, 0, 0], [6, 7, 2, 0, 0]])
    return Chunks(ids, torch.tensor([5, 3, 3]))


def test_batch_tensors_shift_by_one_and_mask_padding():
    c = _chunks()
    x, m, y = batch_tensors(c.ids, c.lengths)
    assert x.tolist() == [[1, 5, 6, 7], [1, 8, 2, 0], [6, 7, 2, 0]]
    assert m.tolist() == [[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 1, 0]]
    assert y.tolist() == [[5, 6, 7, 2], [8, 2, IGNORE, IGNORE], [7, 2, IGNORE, IGNORE]]
    x2, _, _ = batch_tensors(c.ids[1:], c.lengths[1:])
    assert x2.shape == (2, 2)  # trimmed to the longest chunk of the batch


def test_forward_logits_passes_one_position_row_per_sequence():
    module = _Bigram(10)
    x, m, _ = batch_tensors(_chunks().ids, _chunks().lengths)
    assert torch.equal(forward_logits(module, x, m), module.table[x])
    assert module.seen[-1].tolist() == [[0, 1, 2, 3]] * 3


def test_sequence_losses_are_mean_token_cross_entropy_without_padding():
    module = _Bigram(10)
    x, m, y = batch_tensors(_chunks().ids, _chunks().lengths)
    got = sequence_losses(forward_logits(module, x, m), y)
    for i in range(3):
        terms = [
            -torch.log_softmax(module.table[x[i, t]], -1)[y[i, t]].item()
            for t in range(y.shape[1])
            if y[i, t] != IGNORE
        ]
        assert got[i].item() == pytest.approx(sum(terms) / len(terms), rel=1e-5)


def test_evaluate_matches_a_loop_over_tokens():
    module = _Bigram(10, seed=3)
    chunks = _chunks()
    got = evaluate(module, chunks, batch_size=2, ks=(1, 2))
    total, hits, n = 0.0, {1: 0, 2: 0}, 0
    for i in range(len(chunks)):
        row = chunks.ids[i, : chunks.lengths[i]].tolist()
        for a, b in zip(row[:-1], row[1:], strict=True):
            lp = torch.log_softmax(module.table[a].detach(), -1)
            total -= lp[b].item()
            order = torch.argsort(lp, descending=True).tolist()
            hits[1] += b in order[:1]
            hits[2] += b in order[:2]
            n += 1
    assert got["tokens"] == n == 8
    assert got["loss"] == pytest.approx(total / n, rel=1e-5)
    assert got["perplexity"] == pytest.approx(math.exp(total / n), rel=1e-5)
    assert (got["top1_accuracy"], got["top2_accuracy"]) == (hits[1] / n, hits[2] / n)


def test_plain_strategy_visits_every_chunk_once_per_epoch_and_learns():
    tok = build_tokenizer(["a b c d e f"], kind="word", vocab_size=20)
    chunks = encode_chunks(["a b c d e f"] * 5, tok, seq_len=3)
    cfg = TrainConfig(batch_size=4, lr=0.05, seed=1)
    strategy = PlainStrategy(cfg)
    module = strategy.setup(_Bigram(len(tok)), chunks, {})
    before = evaluate(module, chunks)["loss"]
    for epoch in (1, 2, 3):
        batches = list(strategy.batches(epoch))
        assert [len(ids) for _, ids, _ in batches] == [4, 4, 4, 3]
        rows = sorted(tuple(r.tolist()) for _, ids, _ in batches for r in ids)
        assert rows == sorted(tuple(r.tolist()) for r in chunks.ids)
        for kind, ids, lengths in batches:
            strategy.step(kind, ids, lengths)
    assert strategy.trained_module() is module and strategy.steps == 12
    assert evaluate(module, chunks)["loss"] < before
    privacy = strategy.privacy()
    assert privacy["mode"] == "nodp" and privacy["epsilon"] is None and privacy["steps"] == 12
