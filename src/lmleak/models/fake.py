"""A deterministic fake language model shipped for tests (yours and ours), in the spirit of
``httpx.MockTransport``.

:class:`FakeLM` is a word-level n-gram model with add-alpha smoothing and back-off, fitted on a
list of texts. It memorises what it saw, so the leakage report, exposure and probing find real
leaks in it, and it needs no download and no training time. It runs through the same
:class:`~lmleak.models.torch_causal.TorchCausalLM` code as the real backends, so it grants
SCORE, TOP_K and GENERATE (not EMBEDDINGS: it has no embeddings).

Example:
    >>> lm = FakeLM.from_texts(["my id is 123456", "my id is 654321"], order=3)
    >>> ids = lm.tokenizer.encode("my id is 123456")
    >>> [int(r) for r in lm.token_stats([ids])[0].ranks]
    [1, 1, 1, 1]
    >>> lm.generate(["my id"], max_new_tokens=2)
    [['is 123456']]
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from types import SimpleNamespace

import numpy as np
import torch

from lmleak.models.base import Capability
from lmleak.models.torch_causal import TorchCausalLM

SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")


class SimpleWordTokenizer:
    """Whitespace tokenizer over a fixed vocabulary; unknown words map to ``<unk>``."""

    def __init__(self, words: Iterable[str]) -> None:
        self.vocab: list[str] = list(SPECIALS) + sorted(set(words) - set(SPECIALS))
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = 0, 1, 2, 3
        self.vocab_size = len(self.vocab)

    def encode(self, text: str) -> list[int]:
        return [self.index.get(w, self.unk_id) for w in text.split()]

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.vocab[int(i)] for i in ids)


class NGramModule(torch.nn.Module):
    """Log-probability tables of an n-gram model, exposed through the causal-LM calling convention."""

    def __init__(self, sequences: list[list[int]], vocab_size: int, order: int, alpha: float) -> None:
        super().__init__()
        self.order, self.alpha, self.vocab_size = order, alpha, vocab_size
        self.counts: dict[tuple[int, ...], Counter[int]] = defaultdict(Counter)
        for seq in sequences:
            for t in range(1, len(seq)):
                for n in range(0, order):  # contexts of length 0..order-1
                    if t - n < 0:
                        break
                    self.counts[tuple(seq[t - n : t])][seq[t]] += 1
        self._cache: dict[tuple[int, ...], torch.Tensor] = {}

    def _logprobs(self, context: tuple[int, ...]) -> torch.Tensor:
        # back off to the longest context seen in training
        for n in range(min(len(context), self.order - 1), -1, -1):
            ctx = context[len(context) - n :]
            if ctx in self.counts:
                break
        if ctx not in self._cache:
            counts = np.full(self.vocab_size, self.alpha, dtype=np.float64)
            for tok, c in self.counts[ctx].items():
                counts[tok] += c
            counts[0] = 0.0  # never predict padding
            self._cache[ctx] = torch.log(torch.as_tensor(counts / counts.sum(), dtype=torch.float32))
        return self._cache[ctx]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> SimpleNamespace:
        b, t = input_ids.shape
        out = torch.empty((b, t, self.vocab_size), dtype=torch.float32)
        rows = input_ids.tolist()
        for i in range(b):
            for j in range(t):
                out[i, j] = self._logprobs(tuple(rows[i][max(0, j - self.order + 2) : j + 1]))
        return SimpleNamespace(logits=out)

    def get_input_embeddings(self) -> None:
        return None


class FakeLM(TorchCausalLM):
    """A memorising n-gram model; see the module docstring."""

    def __init__(
        self, module: NGramModule, tokenizer: SimpleWordTokenizer, *, name: str = "fake", max_length: int = 64
    ):
        # eos_id is an int here, where TextTokenizer allows None: the protocol's attribute is invariant
        super().__init__(module, tokenizer, name=name, max_length=max_length, batch_tokens=1 << 14)  # type: ignore[arg-type]
        self.capabilities = frozenset({Capability.SCORE, Capability.TOP_K, Capability.GENERATE})

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        *,
        order: int = 3,
        alpha: float = 0.01,
        name: str = "fake",
        max_length: int = 64,
    ) -> FakeLM:
        """Fit on ``texts``; every word of them is in the vocabulary."""
        tok = SimpleWordTokenizer(w for t in texts for w in t.split())
        seqs = [[tok.bos_id, *tok.encode(t), tok.eos_id] for t in texts]
        return cls(NGramModule(seqs, tok.vocab_size, order, alpha), tok, name=name, max_length=max_length)
