"""The non-private building blocks every training mode shares: chunks, per-sequence losses, evaluation
and plain SGD.

:mod:`lmleak.train.dp` builds its DP-SGD, CRT and selective-DP strategies on these, and
:mod:`lmleak.train.trainer` runs the loop; both import this module, never each other's internals
(the rules for chunks and losses are in :mod:`lmleak.train.trainer`'s docstring).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lmleak.train.config import TrainConfig

IGNORE = -100


@dataclass
class Chunks:
    """Fixed-width training sequences: ``ids`` (N, seq_len + 1) padded, ``lengths`` (N,), and
    ``docs`` (N,), the index of the text each chunk was cut from (who owns it, for user-level DP)."""

    ids: torch.Tensor
    lengths: torch.Tensor
    docs: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])


def encode_chunks(texts: list[str], tokenizer: Any, seq_len: int) -> Chunks:
    """Tokenise documents into fixed-width chunks (see the module docstring for the rule).

    Example:
        >>> from lmleak.models.small import build_tokenizer
        >>> tok = build_tokenizer(["a b c d e"], kind="word", vocab_size=20)
        >>> c = encode_chunks(["a b c d e"], tok, seq_len=4)
        >>> c.lengths.tolist(), len(c), c.docs.tolist()  # [BOS a b c d] then [d e EOS], both of text 0
        ([5, 3], 2, [0, 0])
    """
    pad = tokenizer.pad_token_id
    rows: list[list[int]] = []
    docs: list[int] = []
    for d, text in enumerate(texts):
        ids = [
            tokenizer.bos_token_id,
            *tokenizer.encode(text, add_special_tokens=False),
            tokenizer.eos_token_id,
        ]
        start = 0
        while start < len(ids) - 1:
            rows.append(ids[start : start + seq_len + 1])
            docs.append(d)
            start += seq_len
    out = torch.full((len(rows), seq_len + 1), pad, dtype=torch.long)
    lengths = torch.zeros(len(rows), dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r)
        lengths[i] = len(r)
    return Chunks(out, lengths, torch.tensor(docs, dtype=torch.long))


def forward_logits(module: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits for inputs; explicit per-sample position ids (Opacus ghost clipping needs them)."""
    b, t = ids.shape
    pos = torch.arange(t).repeat(b, 1)  # .repeat, not .expand: per-sample tensors must not alias
    out = module(input_ids=ids, attention_mask=mask, position_ids=pos)
    return out.logits if hasattr(out, "logits") else out[0]


def batch_tensors(
    ids: torch.Tensor, lengths: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(inputs, attention mask, targets with IGNORE on padding) for a batch of chunks."""
    width = int(lengths.max()) if len(lengths) else 1
    ids = ids[:, :width].contiguous()
    pos = torch.arange(width).unsqueeze(0)
    mask = (pos < lengths.unsqueeze(1)).long()
    targets = ids[:, 1:].masked_fill(mask[:, 1:] == 0, IGNORE).contiguous()
    return ids[:, :-1].contiguous(), mask[:, :-1].contiguous(), targets


def sequence_losses(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean token loss per sequence (B,), padding excluded."""
    tok = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),
        targets.reshape(-1),
        ignore_index=IGNORE,
        reduction="none",
    ).view(targets.shape)
    valid = (targets != IGNORE).sum(1).clamp(min=1)
    return tok.sum(1) / valid


@torch.inference_mode()
def evaluate(
    module: torch.nn.Module, chunks: Chunks, *, batch_size: int = 32, ks: tuple[int, ...] = (1, 3)
) -> dict[str, float]:
    """Token-level loss, perplexity and top-k next-token accuracy over chunks (teacher forcing)."""
    module.eval()
    total_loss, total_tokens = 0.0, 0
    hits = dict.fromkeys(ks, 0)
    for s in range(0, len(chunks), batch_size):
        x, m, y = batch_tensors(chunks.ids[s : s + batch_size], chunks.lengths[s : s + batch_size])
        logits = forward_logits(module, x, m).float()
        valid = y != IGNORE
        total_loss += float(torch.nn.functional.cross_entropy(logits[valid], y[valid], reduction="sum"))
        total_tokens += int(valid.sum())
        top = logits.topk(max(ks), dim=-1).indices
        for k in ks:
            hits[k] += int(((top[..., :k] == y.unsqueeze(-1)).any(-1) & valid).sum())
    n = max(total_tokens, 1)
    loss = total_loss / n
    out = {"loss": loss, "perplexity": math.exp(min(loss, 50.0)), "tokens": total_tokens}
    out.update({f"top{k}_accuracy": hits[k] / n for k in ks})
    return out


class EpochMeter:
    """One epoch's bookkeeping, the same in both training loops: the step losses (a noise-only step's
    NaN left out), the target tokens trained on and the wall time, as a ``history`` record."""

    def __init__(self) -> None:
        self.losses: list[float] = []
        self.tokens = 0
        self.start = time.perf_counter()

    def add(self, loss: float, lengths: torch.Tensor) -> None:
        """A step's loss over sequences of ``lengths`` tokens (each predicts ``length - 1`` targets)."""
        if not math.isnan(loss):
            self.losses.append(loss)
        self.tokens += int((lengths - 1).clamp(min=0).sum())

    def record(self, epoch: int, *, tokens: bool = False) -> dict[str, Any]:
        """``{epoch, train_loss, [tokens,] tokens_per_s, seconds}`` (``train_loss`` None without a loss).

        Example:
            >>> m = EpochMeter()
            >>> m.add(2.0, torch.tensor([3, 1])); m.add(float("nan"), torch.tensor([], dtype=torch.long))
            >>> r = m.record(1, tokens=True); r["train_loss"], r["tokens"]
            (2.0, 2)
        """
        dt = time.perf_counter() - self.start
        out: dict[str, Any] = {
            "epoch": epoch,
            "train_loss": float(np.mean(self.losses)) if self.losses else None,
        }
        if tokens:
            out["tokens"] = self.tokens
        out["tokens_per_s"] = self.tokens / dt if dt > 0 else None
        out["seconds"] = dt
        return out


class PlainStrategy:
    """Non-private SGD (AdamW) over shuffled mini-batches of chunks."""

    mode = "nodp"

    def __init__(self, config: TrainConfig) -> None:
        self.config = config
        self.steps = 0

    def setup(self, module: torch.nn.Module, train: Chunks, extra: dict[str, Any]) -> torch.nn.Module:
        self.module = module
        self.train = train
        self.optimizer = torch.optim.AdamW(
            module.parameters(), lr=self.config.lr, weight_decay=self.config.weight_decay
        )
        self.gen = torch.Generator().manual_seed(self.config.seed)
        return module

    def batches(self, epoch: int) -> Iterator[tuple[str, torch.Tensor, torch.Tensor]]:
        order = torch.randperm(len(self.train), generator=self.gen)
        bs = self.config.batch_size
        for s in range(0, len(order), bs):
            idx = order[s : s + bs]
            yield "train", self.train.ids[idx], self.train.lengths[idx]

    def step(self, kind: str, ids: torch.Tensor, lengths: torch.Tensor) -> float:
        x, m, y = batch_tensors(ids, lengths)
        self.optimizer.zero_grad(set_to_none=True)
        loss = sequence_losses(forward_logits(self.module, x, m), y).mean()
        loss.backward()
        self.optimizer.step()
        self.steps += 1
        return float(loss.detach())

    def trained_module(self) -> torch.nn.Module:
        return self.module

    def privacy(self) -> dict[str, Any]:
        return plain_privacy_record(self.steps)


def plain_privacy_record(steps: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``privacy.json`` of a run without DP (small model or fine-tune; ``extra`` says what a
    fine-tune trained): ε unbounded, written as null.

    Example:
        >>> plain_privacy_record(3)["epsilon"] is None
        True
    """
    return {
        "mode": "nodp",
        "epsilon": None,
        "delta": None,
        "noise_multiplier": 0.0,
        "sample_rate": None,
        "steps": steps,
        "accountant": None,
        **(extra or {}),
        "note": "no differential privacy: epsilon is unbounded (reported as null)",
    }
