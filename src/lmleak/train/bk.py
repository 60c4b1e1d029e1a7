"""Per-sample clipping for GPT-2-shaped models in one backward pass (book-keeping, Bu et al. 2023).

DP-SGD needs, per training sequence i, the gradient g_i of its loss, clipped to norm C, summed over
the batch. Opacus' ghost clipping gets the norms in a first backward pass and the clipped sum in a
second one. Here one backward pass does both, because every trainable parameter of a GPT-2 sits in
a layer whose per-sample gradient is a simple function of the layer's input ``a`` and the gradient
``g`` of the loss at its output (both captured by hooks during the one backward pass):

- ``Linear`` / transformers ``Conv1D`` (y = a W + b): g_i(W) = Σ_t a_{i,t}ᵀ g_{i,t}, computed per
  sample as one batched matrix product (the cost of the ordinary weight gradient); g_i(b) = Σ_t g_{i,t};
- ``Embedding`` (rows picked by ids): ‖g_i(W)‖² = Σ_{t,t'} [id_t = id_t'] g_{i,t}·g_{i,t'} (the ghost
  norm: no V × d matrix per sample), and the clipped sum by one ``index_add``;
- ``LayerNorm``: g_i(w) = Σ_t g_{i,t} ⊙ â_{i,t} (â the normalised input), g_i(b) = Σ_t g_{i,t}.

The weights' ordinary (summed) gradients are never computed: inside :meth:`BookKeeping.capture`
the parameters stop requiring gradients, the embeddings' outputs are made to require them instead,
and autograd computes only the activations' gradients. After the backward pass
:meth:`BookKeeping.clipped_sum` forms the clip factors c_i = min(1, C / (‖g_i‖ + 1e-6)) (Opacus'
formula) and writes Σ_i c_i g_i into each parameter's ``.grad``. Noise, averaging, sampling and
accounting are the caller's (:class:`lmleak.train.dp.DPStrategy`).

User-level clipping (``groups``): each user's gradient is the mean of its sequences' gradients,
G_u = (1/k_u) Σ_{i∈u} g_i, clipped to C as a whole. The per-sample pieces above are reduced by user
before the norm — a segment sum of the (B, in, out) products for linear layers, of (B, d) vectors
for LayerNorm, and for embeddings a sum of token gradients over (user, token id) pairs — so one
backward pass still suffices. The clipped sum is then Σ_i (c_{u(i)} / k_{u(i)}) g_i: the same
formulas as per sequence with per-sample coefficients.

The test oracle is per-sample gradients by ``torch.func`` (vmap over grad), clipped and summed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


def _conv1d_type() -> type | None:
    from transformers.pytorch_utils import Conv1D  # lazy: transformers takes seconds to import

    return Conv1D


@dataclass
class _Record:
    module: nn.Module
    kind: str  # linear | conv1d | embedding | layernorm
    inputs: list[torch.Tensor] = field(default_factory=list)
    grads: list[torch.Tensor] = field(default_factory=list)


class UnsupportedModel(ValueError):
    """The model has a trainable parameter outside the layer types book-keeping handles."""


class BookKeeping:
    """Per-sample gradient norms and the clipped gradient sum of ``module`` in one backward pass.

    Usage::

        bk = BookKeeping(model)
        with bk.capture():
            per_sample_loss = ...            # (B,) from a forward pass inside the block
            per_sample_loss.sum().backward()
        norms = bk.clipped_sum(max_grad_norm)  # sets p.grad = Σ_i c_i g_i; returns ‖g_i‖

    Raises :class:`UnsupportedModel` when a trainable parameter is not the weight or bias of a
    ``Linear``, ``Conv1D``, ``Embedding`` or ``LayerNorm``, or a parameter is shared by two layers.
    """

    def __init__(self, module: nn.Module) -> None:
        conv1d = _conv1d_type()
        self.module = module
        self.records: list[_Record] = []
        owned: dict[int, str] = {}
        for name, sub in module.named_modules():
            own = [p for p in sub.parameters(recurse=False) if p.requires_grad]
            if not own:
                continue
            if isinstance(sub, nn.Linear):
                kind = "linear"
            elif conv1d is not None and isinstance(sub, conv1d):
                kind = "conv1d"
            elif isinstance(sub, nn.Embedding):
                kind = "embedding"
            elif isinstance(sub, nn.LayerNorm) and sub.elementwise_affine:
                kind = "layernorm"
            else:
                raise UnsupportedModel(
                    f"layer {name or '(root)'} ({type(sub).__name__}) holds trainable "
                    "parameters that book-keeping clipping does not handle"
                )
            for p in own:
                if id(p) in owned:
                    raise UnsupportedModel(f"parameter shared by {owned[id(p)]} and {name} (tied weights)")
                owned[id(p)] = name
            self.records.append(_Record(sub, kind))
        self.params = [p for p in module.parameters() if p.requires_grad]
        if len(owned) != len(self.params):
            raise UnsupportedModel("some trainable parameters belong to no layer")
        self._active = False
        for rec in self.records:
            rec.module.register_forward_hook(self._forward_hook(rec))

    def _forward_hook(self, rec: _Record) -> Any:
        def hook(mod: nn.Module, inputs: tuple[Any, ...], out: torch.Tensor) -> None:
            if not self._active:
                return
            rec.inputs.append(inputs[0].detach())
            if not out.requires_grad:  # an embedding whose weight is switched off: start the graph here
                out.requires_grad_(True)
            out.register_hook(lambda g: rec.grads.append(g.detach()))

        return hook

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        """Forward and backward passes inside this block record what the per-sample gradients need."""
        for rec in self.records:
            rec.inputs.clear()
            rec.grads.clear()
        flags = [p.requires_grad for p in self.params]
        for p in self.params:
            p.requires_grad_(False)
            p.grad = None
        self._active = True
        try:
            yield
        finally:
            self._active = False
            for p, f in zip(self.params, flags, strict=True):
                p.requires_grad_(f)

    def _pairs(self, rec: _Record) -> tuple[torch.Tensor, torch.Tensor]:
        if len(rec.inputs) != 1 or len(rec.grads) != 1:
            raise RuntimeError(
                f"{type(rec.module).__name__} ran {len(rec.inputs)} times in the forward pass and "
                f"received {len(rec.grads)} gradients; book-keeping expects each layer once"
            )
        return rec.inputs[0], rec.grads[0]

    def per_sample(self, groups: torch.Tensor | None = None) -> tuple[torch.Tensor, list[Any]]:
        """(‖g_i‖ over all parameters, per-layer state for :meth:`clipped_sum`); with ``groups`` (B,)
        the norms ‖G_u‖ of the users' mean gradients instead (see the module docstring)."""
        sq: torch.Tensor | None = None
        states: list[Any] = []
        grouping = None if groups is None else Grouping(groups)
        for rec in self.records:
            a, g = self._pairs(rec)
            m = rec.module
            b = g.shape[0]
            g3 = g.reshape(b, -1, g.shape[-1]).float()
            if rec.kind in ("linear", "conv1d"):
                a3 = a.reshape(b, -1, a.shape[-1]).float()
                w = torch.bmm(a3.transpose(1, 2), g3)  # (B, in, out)
                bias = g3.sum(1) if m.bias is not None and m.bias.requires_grad else None
                if grouping is None:
                    s = w.pow(2).sum((1, 2))
                    if bias is not None:
                        s = s + bias.pow(2).sum(1)
                else:
                    s = grouping.sq(w) + (grouping.sq(bias) if bias is not None else 0.0)
                states.append((w, bias))
            elif rec.kind == "embedding":
                ids = a.reshape(b, -1)
                if grouping is None:
                    same = (ids.unsqueeze(2) == ids.unsqueeze(1)).float()
                    s = (same * torch.bmm(g3, g3.transpose(1, 2))).sum((1, 2))
                else:
                    s = grouping.embedding_sq(ids, g3, m.num_embeddings)
                states.append((ids, g3))
            else:  # layernorm
                a3 = a.reshape(b, -1, a.shape[-1]).float()
                norm = torch.nn.functional.layer_norm(a3, m.normalized_shape, None, None, m.eps)
                w = (g3 * norm).sum(1) if m.weight.requires_grad else None
                bias = g3.sum(1) if m.bias is not None and m.bias.requires_grad else None
                if grouping is None:
                    s = sum((t.pow(2).sum(1) for t in (w, bias) if t is not None), torch.zeros(b))
                else:
                    s = sum((grouping.sq(t) for t in (w, bias) if t is not None), torch.zeros(grouping.n))
                states.append((w, bias))
            sq = s if sq is None else sq + s
        assert sq is not None
        return sq.sqrt(), states

    def clipped_sum(self, max_grad_norm: float, groups: torch.Tensor | None = None) -> torch.Tensor:
        """Write Σ_i c_i g_i into every parameter's ``.grad``; return the per-sample norms ‖g_i‖.

        With ``groups`` (B,) — sequence i belongs to user ``groups[i]`` in 0..U-1 — write
        Σ_u clip_C(G_u) with G_u the mean gradient of user u's sequences, and return ‖G_u‖ (U,)."""
        norms, states = self.per_sample(groups)
        c = (max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
        if groups is not None:
            c = Grouping(groups).per_sample(c)
        for rec, state in zip(self.records, states, strict=True):
            m = rec.module
            if rec.kind in ("linear", "conv1d"):
                w, bias = state
                if m.weight.requires_grad:
                    gw = torch.einsum("b,bio->io", c, w)
                    m.weight.grad = (gw.t() if rec.kind == "linear" else gw).to(m.weight.dtype).contiguous()
                if bias is not None:
                    m.bias.grad = (c @ bias).to(m.bias.dtype)
            elif rec.kind == "embedding":
                ids, g3 = state
                grad = torch.zeros_like(m.weight, dtype=torch.float32)
                grad.index_add_(0, ids.reshape(-1), (g3 * c[:, None, None]).reshape(-1, g3.shape[-1]))
                m.weight.grad = grad.to(m.weight.dtype)
            else:
                w, bias = state
                if w is not None:
                    m.weight.grad = (c @ w).to(m.weight.dtype)
                if bias is not None:
                    m.bias.grad = (c @ bias).to(m.bias.dtype)
            rec.inputs.clear()
            rec.grads.clear()
        return norms


class Grouping:
    """Sequences grouped by user: ``groups`` (B,) holds each sequence's user index in 0..U-1, and a
    user's gradient is the mean over its k_u sequences (weights 1 / k_u).

    Example:
        >>> g = Grouping(torch.tensor([0, 0, 1]))
        >>> g.sq(torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]])).tolist()  # ‖(1+3)/2‖², ‖2‖²
        [4.0, 4.0]
        >>> g.per_sample(torch.tensor([1.0, 0.5])).tolist()  # c_u / k_u per sequence
        [0.5, 0.5, 0.5]
    """

    def __init__(self, groups: torch.Tensor) -> None:
        self.groups = groups.reshape(-1).long()
        self.n = int(self.groups.max()) + 1 if len(self.groups) else 0
        counts = torch.bincount(self.groups, minlength=self.n).float()
        self.weights = 1.0 / counts[self.groups]
        # (U, B): row u holds 1 / k_u at u's sequences, so the users' means are one matrix product
        self.matrix = torch.zeros(self.n, len(self.groups))
        self.matrix[self.groups, torch.arange(len(self.groups))] = self.weights

    def per_sample(self, per_group: torch.Tensor) -> torch.Tensor:
        """A per-user coefficient as per-sequence coefficients, divided by the user's sequence count."""
        return per_group[self.groups.to(per_group.device)] * self.weights.to(per_group.device)

    def sq(self, per_sample: torch.Tensor) -> torch.Tensor:
        """‖Σ_{i∈u} g_i / k_u‖² per user, for per-sample tensors (B, ...) that are the gradient itself."""
        flat = per_sample.reshape(len(self.groups), -1)
        summed = self.matrix.to(device=flat.device, dtype=flat.dtype) @ flat  # (U, P): a GEMM, no scatter
        return summed.pow(2).sum(1)

    def embedding_sq(self, ids: torch.Tensor, g3: torch.Tensor, vocab: int) -> torch.Tensor:
        """‖G_u‖² of an embedding table: token gradients summed per (user, token id) pair, then
        squared and summed per user (memory of the activations, no V × d matrix per user)."""
        b, t, d = g3.shape
        dev = g3.device
        groups = self.groups.to(dev)
        key = (groups[:, None] * vocab + ids.to(dev)).reshape(-1)
        pairs, inverse = torch.unique(key, return_inverse=True)
        rows = torch.zeros(len(pairs), d, device=dev, dtype=g3.dtype)
        rows.index_add_(0, inverse, (g3 * self.weights.to(dev)[:, None, None]).reshape(-1, d))
        out = torch.zeros(self.n, device=dev, dtype=g3.dtype)
        out.index_add_(0, torch.div(pairs, vocab, rounding_mode="floor"), rows.pow(2).sum(1))
        return out
