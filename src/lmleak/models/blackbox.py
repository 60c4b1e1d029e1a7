"""Black-box views of a model: only its top-k next tokens, or only its generated text.

:class:`TopKOnly` is paper 001's threat model (the "tab attack" sees the top-k suggestions of an
autocomplete API). With ``min_top1_prob`` it abstains — returns nothing — when the most likely
token's probability is below the threshold (API hardening, paper 001 §6.1).

:class:`TextOnly` exposes generation alone (a chat/completions API): exact-match probing works,
likelihood-based attacks are refused by :func:`~lmleak.models.base.require`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lmleak.errors import CapabilityError
from lmleak.models.base import Capability, require


class TopKOnly:
    """Grants only ``Capability.TOP_K`` (at most ``k`` tokens per query)."""

    def __init__(self, model: Any, k: int, *, min_top1_prob: float | None = None) -> None:
        require(model, Capability.SCORE, attack="TopKOnly (it simulates the API from a full-access model)")
        if k < 1:
            raise ValueError("k must be >= 1")
        self.inner = model
        self.k = int(k)
        self.min_top1_prob = min_top1_prob
        self.name = f"top{k}:{model.name}" + (f"@p>={min_top1_prob:g}" if min_top1_prob else "")
        self.tokenizer = model.tokenizer
        self.max_length = model.max_length
        self.capabilities = frozenset({Capability.TOP_K})

    @property
    def bos_token_id(self) -> int:
        """The start token every scored text follows (the wrapped model's)."""
        return int(self.tokenizer.bos_id)

    def _abstains(self, top1_logprob: float) -> bool:
        return self.min_top1_prob is not None and float(np.exp(top1_logprob)) < self.min_top1_prob

    def top_k(self, prefixes: Sequence[Sequence[int]], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        if k > self.k:
            raise CapabilityError(f"the API returns at most the top {self.k} tokens; asked for {k}")
        out = []
        for ids, lps in self.inner.top_k(prefixes, k):
            if len(lps) and self._abstains(float(lps[0])):
                out.append((np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)))
            else:
                # the API reveals the ranking, not the probabilities
                out.append((ids, np.full(len(ids), np.nan, dtype=np.float32)))
        return out

    def topk_ranks(self, sequences: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Per-position ranks as the API reveals them: the true rank when within the top k and the
        API answered, else ``k + 1``.

        Implementation shortcut: one teacher-forced pass of the wrapped model gives every prefix's
        prediction at once, which is observationally identical to querying the API once per prefix
        (the test suite checks it against literal per-prefix ``top_k`` calls). Ties follow the
        ledger's convention (a tie favours the true token); an API listing exactly tied tokens by
        id could order them otherwise, which real-valued models practically never produce.
        """
        out = []
        for st in self.inner.token_stats(sequences):
            ranks = st.ranks.astype(np.int32).copy()
            ranks[ranks > self.k] = self.k + 1
            if self.min_top1_prob is not None:
                ranks[np.exp(st.top1_logprobs) < self.min_top1_prob] = self.k + 1
            out.append(ranks)
        return out


class TextOnly:
    """Grants only ``Capability.GENERATE``."""

    def __init__(self, model: Any) -> None:
        require(model, Capability.GENERATE, attack="TextOnly")
        self.inner = model
        self.name = f"text:{model.name}"
        self.tokenizer = model.tokenizer
        self.max_length = model.max_length
        self.capabilities = frozenset({Capability.GENERATE})

    @property
    def bos_token_id(self) -> int:
        """The start token every scored text follows (the wrapped model's)."""
        return int(self.tokenizer.bos_id)

    def generate(self, prompts: Sequence[str], **kwargs: Any) -> list[list[str]]:
        return self.inner.generate(prompts, **kwargs)
