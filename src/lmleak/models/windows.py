"""Sliding windows over sequences longer than a model's context, shared by every scoring backend.

A sequence longer than ``max_length`` is split into windows of ``max_length`` tokens that advance
by ``max_length - overlap`` tokens; each token is scored in the first window that contains it with
at least ``overlap`` tokens of context before it (the Hugging Face sliding-window perplexity
recipe). :class:`~lmleak.models.torch_causal.TorchCausalLM`, the HTTP backend and the vLLM scorer
cut the same windows, so their per-token stats agree. No torch here: the HTTP backend runs without it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def windows(n: int, max_length: int, overlap: int) -> list[tuple[int, int, int]]:
    """Windows over a sequence of ``n`` inputs (BOS included) whose targets are positions 1..n-1.

    Returns ``(start, end, first_target)``: the window feeds inputs ``[start, end)`` and keeps the
    predictions for targets ``first_target .. end-1`` (target t is predicted from inputs < t).

    Example:
        >>> windows(10, 4, 2)
        [(0, 4, 1), (2, 6, 4), (4, 8, 6), (6, 10, 8)]
        >>> windows(3, 8, 4)
        [(0, 3, 1)]
        >>> windows(10, 4, 0)
        [(0, 4, 1), (3, 7, 4), (6, 10, 7)]
    """
    if n <= max_length:
        return [(0, n, 1)]
    # a window's first input is context only (nothing before it in the window predicts it), so
    # windows share at least one token: overlap 0 means "as little as possible", not a crash
    stride = max(max_length - max(overlap, 1), 1)
    out = [(0, max_length, 1)]
    scored_to = max_length  # targets < scored_to are done
    start = stride
    while scored_to < n:
        end = min(start + max_length, n)
        out.append((start, end, scored_to))
        scored_to = end
        start += stride
    return out


def window_rows(
    sequences: Sequence[Sequence[int]], bos: int, max_length: int, overlap: int
) -> tuple[list[list[int]], list[tuple[int, int, int]]]:
    """Every window of every sequence (``bos`` first) as one row, and each row's owner
    ``(sequence, first target kept, window start)``.

    Example:
        >>> window_rows([[5, 6, 7, 8]], 1, 3, 1)
        ([[1, 5, 6], [6, 7, 8]], [(0, 1, 0), (0, 3, 2)])
    """
    rows: list[list[int]] = []
    owners: list[tuple[int, int, int]] = []
    for s, seq in enumerate(sequences):
        full = [bos, *map(int, seq)]
        for start, end, first in windows(len(full), max_length, overlap):
            rows.append(full[start:end])
            owners.append((s, first, start))
    return rows, owners


def stats_buffers(
    sequences: Sequence[Sequence[int]],
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Unfilled per-token ranks (int32), logprobs and top-1 logprobs (float32), one array each per sequence."""
    return (
        [np.empty(len(seq), dtype=np.int32) for seq in sequences],
        [np.empty(len(seq), dtype=np.float32) for seq in sequences],
        [np.empty(len(seq), dtype=np.float32) for seq in sequences],
    )
