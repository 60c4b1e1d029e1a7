"""A text and its neighbours in one forward pass: each neighbour's tokens from where it leaves the text,
packed behind the text under a tree-shaped attention mask.

A neighbour of the neighbourhood attack (Mattern et al. 2023) replaces one word, so its tokens equal
the text's up to some position ``q`` and the model's outputs there are the text's. Scoring each
neighbour whole repeats those ``q`` positions; here one row holds ``BOS + text`` followed by every
neighbour's tokens from ``q`` on, each suffix attending to ``BOS + text[:q]`` and causally to itself,
with the position ids it would have on its own. With the word chosen uniformly, a neighbour costs
about half a pass instead of one. The numbers are those of scoring every neighbour whole, up to float
rounding (checked against that in tests/attacks/test_packed_pass.py).

Applies to a :class:`~lmleak.models.torch_causal.TorchCausalLM` over a Hugging Face module (which
takes a 4-D float attention mask and ``position_ids``) when ``BOS + text`` fits one window; callers
fall back to whole passes otherwise (:func:`packs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lmleak.models.torch_causal import TorchCausalLM


@dataclass(frozen=True, slots=True)
class PackedRow:
    """One row of the packed pass: ``ids`` = BOS + text ``text`` + suffixes; ``segments`` holds
    ``(neighbour, q, start, length)``: neighbour ``neighbour`` leaves the text at token ``q`` and its
    tokens from ``q`` on sit at ``ids[start : start + length]``."""

    text: int
    ids: list[int]
    positions: list[int]
    segments: list[tuple[int, int, int, int]]


@dataclass(frozen=True, slots=True)
class PackedScores:
    """Per text: token log-probabilities (and, when asked, the next-token distributions' ``mu`` and
    ``sigma`` of log p); per text and neighbour: the neighbour's token log-probabilities."""

    logprobs: list[np.ndarray]
    mu: list[np.ndarray] | None
    sigma: list[np.ndarray] | None
    neighbour_logprobs: list[list[np.ndarray]]


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share.

    Example:
        >>> common_prefix_length([5, 6, 7, 8], [5, 6, 9, 8])
        2
        >>> common_prefix_length([5, 6], [5, 6, 7])
        2
    """
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def packs(
    model: Any, sequences: Sequence[Sequence[int]], neighbours: Sequence[Sequence[Sequence[int]]] = ()
) -> bool:
    """Whether :func:`packed_pass` applies: a Hugging Face module, and every ``BOS + text`` and
    ``BOS + neighbour`` in one window (so no position id leaves the model's range)."""
    return (
        isinstance(model, TorchCausalLM)
        and type(model.module).__module__.startswith("transformers.")
        and all(1 + len(s) <= model.max_length for s in sequences)
        and all(1 + len(y) <= model.max_length for nb in neighbours for y in nb)
    )


def packed_rows(
    sequences: Sequence[Sequence[int]], neighbours: Sequence[Sequence[Sequence[int]]], *, bos: int, cap: int
) -> list[PackedRow]:
    """The rows of the packed pass; a text whose suffixes would make a row longer than ``cap`` tokens
    gets several rows, each starting with ``BOS + text`` (a row holds at least one neighbour).

    Example:
        >>> [(r.ids, r.positions, r.segments) for r in packed_rows([[5, 6, 7]], [[[5, 9, 7], [5, 6, 7]]], bos=1, cap=99)]
        [([1, 5, 6, 7, 9, 7], [0, 1, 2, 3, 2, 3], [(0, 1, 4, 2), (1, 3, 6, 0)])]
    """
    rows: list[PackedRow] = []
    for i, (text, nbrs) in enumerate(zip(sequences, neighbours, strict=True)):
        x = [int(t) for t in text]
        segs: list[tuple[int, int, int, int]] = []
        ids, pos = [bos, *x], list(range(1 + len(x)))
        for j, nb in enumerate(nbrs):
            y = [int(t) for t in nb]
            q = common_prefix_length(x, y)
            suffix = y[q:]
            if segs and len(ids) + len(suffix) > cap:
                rows.append(PackedRow(i, ids, pos, segs))
                ids, pos, segs = [bos, *x], list(range(1 + len(x))), []
            segs.append((j, q, len(ids), len(suffix)))
            ids += suffix
            pos += range(1 + q, 1 + q + len(suffix))
        rows.append(PackedRow(i, ids, pos, segs))
    return rows


def tree_mask(rows: Sequence[PackedRow], text_lengths: Sequence[int], width: int) -> Any:
    """``(len(rows), width, width)`` booleans, True where a query position may attend to a key:
    the text causally, each suffix to ``BOS + text[:q]`` and causally to itself, padding to itself."""
    allow = torch.zeros((len(rows), width, width), dtype=torch.bool)
    causal = torch.ones((width, width), dtype=torch.bool).tril()
    for b, (row, n) in enumerate(zip(rows, text_lengths, strict=True)):
        n0 = 1 + n
        allow[b, :n0, :n0] = causal[:n0, :n0]
        for _, q, start, length in row.segments:
            allow[b, start : start + length, : 1 + q] = True
            allow[b, start : start + length, start : start + length] = causal[:length, :length]
        pad = torch.arange(len(row.ids), width)
        allow[b, pad, pad] = True
    return allow


def log_prob_moments(logp: Any) -> tuple[Any, Any]:
    """Mean and standard deviation of ``log p(z)`` under ``z ~ p``, for log-probabilities (..., V).

    Two passes (centred second moment): ``E[log p^2] - mu^2`` cancels badly for the near-uniform
    distributions of a barely trained model. The reductions are batched dot products (``bmm``),
    which here cost less than half of ``(a * b).sum(-1)``.
    """
    shape, v = logp.shape[:-1], logp.shape[-1]
    p = logp.exp().reshape(-1, 1, v)
    # subtle: p is exactly 0 in float32 below log p ~ -104, so clamping -inf there changes no term
    # and avoids 0 * -inf = NaN
    lc = logp.clamp_min(-1e4).reshape(-1, v, 1)
    mu = torch.bmm(p, lc).reshape(-1, 1, 1)
    var = torch.bmm(p, lc.sub_(mu).square_()).reshape(shape)
    return mu.reshape(shape), var.clamp_min(0).sqrt()


def packed_pass(
    model: Any,
    sequences: Sequence[Sequence[int]],
    neighbours: Sequence[Sequence[Sequence[int]]],
    *,
    moments: bool = False,
    cap: int | None = None,
) -> PackedScores:
    """Score every text and every neighbour (``neighbours[i]`` are text ``i``'s) in packed rows.

    ``cap`` bounds a row's length (default ``max(4 * max_length, 1024)``: attention over a row costs
    its length squared). Requires :func:`packs`.
    """
    rows = packed_rows(
        sequences, neighbours, bos=model.tokenizer.bos_id, cap=cap or max(4 * model.max_length, 1024)
    )
    lps = [np.empty(len(s), dtype=np.float32) for s in sequences]
    mus = [np.empty(len(s), dtype=np.float32) for s in sequences] if moments else None
    sds = [np.empty(len(s), dtype=np.float32) for s in sequences] if moments else None
    nlps: list[list[np.ndarray]] = [[np.empty(0, dtype=np.float32)] * len(nb) for nb in neighbours]
    done: set[int] = set()
    with torch.inference_mode():
        for batch in model._batches([len(r.ids) for r in rows]):
            part = [rows[r] for r in batch]
            lengths = [len(sequences[r.text]) for r in part]
            logp, true_lp = _forward_rows(model, part, lengths)
            if moments:  # only the texts' positions (every row starts with its text): not the tails
                mu, sd = log_prob_moments(logp[:, : max(lengths)])
            for b, (r, n) in enumerate(zip(part, lengths, strict=True)):
                base = true_lp[b, :n]
                if r.text not in done:  # a text split over rows is read from its first row
                    done.add(r.text)
                    lps[r.text][:] = base
                    if mus is not None and sds is not None:
                        mus[r.text][:] = mu[b, :n].cpu().numpy()
                        sds[r.text][:] = sd[b, :n].cpu().numpy()
                for j, q, start, length in r.segments:
                    y = neighbours[r.text][j]
                    nlps[r.text][j] = _neighbour_logprobs(y, base, logp[b], true_lp[b], q, start, length)
    return PackedScores(lps, mus, sds, nlps)


def _forward_rows(model: Any, part: Sequence[PackedRow], lengths: Sequence[int]) -> tuple[Any, np.ndarray]:
    """One forward pass over packed rows: log-probabilities (B, width, V) and, at each row position
    ``t``, the log-probability of ``ids[t + 1]`` (B, width - 1)."""
    dev = model.device
    width = max(len(r.ids) for r in part)
    ids, _ = model._pad([r.ids for r in part])
    pos = torch.zeros((len(part), width), dtype=torch.long)
    for b, r in enumerate(part):
        pos[b, : len(r.positions)] = torch.as_tensor(r.positions)
    allow = tree_mask(part, lengths, width)
    # the additive mask in the module's own dtype, as Hugging Face builds its own masks
    dtype = next(model.module.parameters()).dtype
    mask = torch.zeros(allow.shape, dtype=dtype).masked_fill_(~allow, torch.finfo(dtype).min)
    out = model.module(input_ids=ids.to(dev), attention_mask=mask[:, None].to(dev), position_ids=pos.to(dev))
    logits = out.logits if hasattr(out, "logits") else out[0]
    logp = torch.log_softmax(logits.float(), dim=-1)
    true_lp = logp[:, :-1].gather(-1, ids[:, 1:].to(dev).unsqueeze(-1)).squeeze(-1).cpu().numpy()
    return logp, true_lp


def _neighbour_logprobs(
    y: Sequence[int], base: np.ndarray, logp: Any, true_lp: np.ndarray, q: int, start: int, length: int
) -> np.ndarray:
    """A neighbour's token log-probabilities from its row: the text's up to ``q``, then its suffix's.

    The suffix's first token is predicted where the text leaves off (row position ``q``), the rest
    by the suffix's own positions.
    """
    lp = np.empty(len(y), dtype=np.float32)
    lp[:q] = base[:q]
    if length:
        lp[q] = float(logp[q, int(y[q])])
        lp[q + 1 :] = true_lp[start : start + length - 1]
    return lp
