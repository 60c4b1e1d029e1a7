"""Per-sample clipping of a model's trainable weights: book-keeping where it applies, else Opacus hooks.

:func:`make_clipper` returns an object with ``capture()`` (a context for the forward and backward
pass), ``clipped_sum(C, groups=None)`` (writes Σ_i clip_C(g_i) into every trainable ``.grad``, returns
the per-sample norms; with ``groups``, the users' mean gradients are clipped instead) and ``params``: :class:`lmleak.train.bk.BookKeeping` (one backward pass, for
LoRA adapters and GPT-2-shaped models) or :class:`HooksClipper` (Opacus' ``GradSampleModule``,
for everything else: RMSNorm, tied embeddings under ``--full``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from lmleak.errors import ConfigError
from lmleak.train.bk import BookKeeping, Grouping, UnsupportedModel


class HooksClipper:
    """Per-sample gradients by Opacus' ``GradSampleModule`` hooks, clipped and summed by hand —
    the fallback where book-keeping does not apply (same interface as
    :class:`lmleak.train.bk.BookKeeping`: ``capture()``, ``clipped_sum(C)``, ``params``)."""

    def __init__(self, model: torch.nn.Module) -> None:
        from opacus import GradSampleModule

        self.gsm = GradSampleModule(model, batch_first=True, loss_reduction="sum", strict=False)
        self.gsm.disable_hooks()
        self.forward_module: torch.nn.Module = self.gsm
        self.params = [p for p in model.parameters() if p.requires_grad]

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        for p in self.params:
            p.grad = None
            p.grad_sample = None
        self.gsm.enable_hooks()
        try:
            yield
        finally:
            self.gsm.disable_hooks()

    def clipped_sum(self, max_grad_norm: float, groups: torch.Tensor | None = None) -> torch.Tensor:
        """Σ_i clip_C(g_i) into every ``.grad``; the per-sample norms. With ``groups`` (B,), the users'
        mean gradients are clipped instead and their norms returned (as :meth:`BookKeeping.clipped_sum`)."""
        samples = [p.grad_sample for p in self.params]
        b = next(s.shape[0] for s in samples if s is not None)
        dev = self.params[0].device
        if groups is None:
            sq = sum(
                (s.reshape(b, -1).float().pow(2).sum(1) for s in samples if s is not None),
                torch.zeros(b, device=dev),
            )
        else:
            grouping = Grouping(groups.to(dev))
            sq = sum(
                (grouping.sq(s.float()) for s in samples if s is not None),
                torch.zeros(grouping.n, device=dev),
            )
        norms = sq.sqrt()
        c = (max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
        if groups is not None:
            c = grouping.per_sample(c)
        for p, s in zip(self.params, samples, strict=True):
            p.grad = None if s is None else torch.einsum("b,b...->...", c, s.float()).to(p.dtype)
            p.grad_sample = None
        return norms


def make_clipper(model: torch.nn.Module, how: str) -> tuple[Any, str]:
    """(clipper, name): book-keeping when it applies (``auto``) or is asked for, else Opacus hooks."""
    if how in ("auto", "bookkeeping"):
        try:
            bk = BookKeeping(model)
            bk.forward_module = model  # type: ignore[attr-defined]
            return bk, "bookkeeping"
        except UnsupportedModel as e:
            if how == "bookkeeping":
                raise ConfigError(
                    f"book-keeping clipping does not apply to this model: {e}",
                    field="dp_clipping",
                    hint="use --dp-clipping hooks (Opacus) or auto",
                ) from None
    return HooksClipper(model), "opacus hooks"
