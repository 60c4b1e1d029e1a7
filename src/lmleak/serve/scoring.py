"""Per-position log-probabilities of token-id rows: what every logprob answer of ``lmleak serve`` is read from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def _nothing() -> None:
    return None


class Scoring:
    """Per-position log-probabilities of token-id rows, from one forward pass per batch where the model
    allows it (any :class:`~lmleak.models.torch_causal.TorchCausalLM`), else through the protocol."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.fast = all(hasattr(model, a) for a in ("_forward", "_pad", "_batches"))

    def rows(
        self, rows: Sequence[Sequence[int]], n: int, check: Callable[[], None] = _nothing
    ) -> list[dict[str, np.ndarray]]:
        """For each row (starting with BOS), arrays over its positions 1..len-1 (``rank``, ``logprob``,
        ``top_ids`` (P, n), ``top_lps`` (P, n)) and the next-token prediction after the row
        (``next_ids``, ``next_lps``: top ``max(n, 1)``). ``check`` runs before each batch (it raises
        to stop the work: a request past its deadline, a server shutting down)."""
        return self._fast(rows, n, check) if self.fast else self._slow(rows, n, check)

    def _fast(
        self, rows: Sequence[Sequence[int]], n: int, check: Callable[[], None]
    ) -> list[dict[str, np.ndarray]]:
        import torch  # the model is a torch model on this path

        m = self.model
        out: list[dict[str, np.ndarray]] = [{} for _ in rows]
        with torch.inference_mode():
            for batch in m._batches([len(r) for r in rows]):
                check()
                ids, mask = m._pad([list(rows[i]) for i in batch])
                logp = torch.log_softmax(m._forward(ids, mask).float(), dim=-1)
                targets = ids[:, 1:].to(logp.device)
                head = logp[:, :-1]
                true_lp = head.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
                rank = (head > true_lp.unsqueeze(-1)).sum(-1) + 1
                top_v, top_i = torch.topk(logp, max(n, 1), dim=-1)
                for j, i in enumerate(batch):
                    length = len(rows[i])
                    out[i] = {
                        "rank": rank[j, : length - 1].cpu().numpy(),
                        "logprob": true_lp[j, : length - 1].cpu().numpy(),
                        "top_ids": top_i[j, : length - 1, :n].cpu().numpy(),
                        "top_lps": top_v[j, : length - 1, :n].cpu().numpy(),
                        "next_ids": top_i[j, length - 1].cpu().numpy(),
                        "next_lps": top_v[j, length - 1].cpu().numpy(),
                    }
        return out

    def _slow(
        self, rows: Sequence[Sequence[int]], n: int, check: Callable[[], None]
    ) -> list[dict[str, np.ndarray]]:
        m = self.model
        out = []
        for r in rows:
            check()
            (st,) = m.token_stats([list(r[1:])])
            prefixes = [list(r[1:i]) for i in range(1, len(r) + 1)]
            preds = m.top_k(prefixes, max(n, 1))
            out.append(
                {
                    "rank": st.ranks,
                    "logprob": st.logprobs,
                    "top_ids": np.array([p[0][:n] for p in preds[:-1]]).reshape(len(r) - 1, n),
                    "top_lps": np.array([p[1][:n] for p in preds[:-1]]).reshape(len(r) - 1, n),
                    "next_ids": preds[-1][0],
                    "next_lps": preds[-1][1],
                }
            )
        return out
