"""The one protocol every attack talks to: capabilities plus narrow, capability-gated methods.

A model declares what access it grants (:class:`Capability`); an attack calls :func:`require`
before its first query and fails with a clear message if the model lacks something. A black-box
backend therefore never implements a method only to raise from it mid-run.

Conventions shared by every backend (the contract suite in ``tests/contracts`` checks them):

- Token ids are model-specific; ``tokenizer.encode`` never adds special tokens. Every forward
  input starts with the model's start token ``bos_token_id`` (= ``tokenizer.bos_id``; for Hugging
  Face tokenizers chosen by :func:`lmleak.models.tokenizer.start_token_id`: the BOS, or
  ``<|endoftext|>`` where the BOS is a chat marker, or the EOS where there is no BOS, as GPT-2
  does), and every token after it is scored (:data:`SCORING_CONVENTION`), so the first real token
  of a text is predicted too. Summaries that hold scores record both (:func:`scoring_convention`).
- Log-probabilities are natural logarithms (nats) and are <= 0.
- ``rank`` is 1-based: 1 + the number of vocabulary tokens whose log-probability is *strictly*
  greater than the true token's (ties favour the true token). A true token is "in the top-k"
  iff ``rank <= k``.
- Batched calls return results in input order and equal the same calls made one by one.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from lmleak.errors import CapabilityError

if TYPE_CHECKING:  # pragma: no cover
    import torch


class Capability(str, enum.Enum):  # noqa: UP042 - str+Enum keeps str()/format() output as it was
    """An access level a model grants to an attacker."""

    SCORE = "score"  # exact log p(continuation | context), per-position ranks (teacher forcing)
    TOP_K = "top_k"  # only the k most likely next tokens (paper 001's threat model)
    GENERATE = "generate"  # decoded text
    FILL_MASK = "fill_mask"  # masked LM distributions (paper 004's generation attack)
    EMBEDDINGS = "embeddings"  # white-box: input embeddings and gradients (soft prompts)


@runtime_checkable
class TextTokenizer(Protocol):
    """The tokenizer view lmleak needs; :class:`lmleak.models.tokenizer.HFTokenizer` adapts HF ones."""

    vocab_size: int
    bos_id: int
    eos_id: int | None
    pad_id: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


@dataclass(frozen=True, slots=True)
class TokenStats:
    """Teacher-forced statistics of one token sequence, aligned with its token ids.

    Attributes:
        ranks: int32, 1-based rank of each true token among the model's predictions given the
            tokens before it (and the BOS). For a top-k-only model, tokens outside the top k get
            rank ``k + 1`` (only "not in the top k" is known).
        logprobs: float32 log p(token_i | tokens_<i) in nats; NaN where the model does not expose it.
        top1_logprobs: float32 log-probability of the most likely token at each position; NaN where
            unknown.
    """

    ranks: np.ndarray
    logprobs: np.ndarray
    top1_logprobs: np.ndarray

    def __len__(self) -> int:
        return int(self.ranks.shape[0])


@dataclass(frozen=True, slots=True)
class SpanScore:
    """The score of a continuation text given a context text.

    ``logprob`` is the sum over the continuation's tokens (nats); ``num_words`` counts whitespace
    words of the continuation, so per-word perplexities compare across tokenizers.
    """

    logprob: float
    num_tokens: int
    num_words: int

    @property
    def perplexity_per_token(self) -> float:
        return float(np.exp(-self.logprob / max(self.num_tokens, 1)))

    @property
    def perplexity_per_word(self) -> float:
        return float(np.exp(-self.logprob / max(self.num_words, 1)))


@runtime_checkable
class LanguageModel(Protocol):
    """What every backend has. Capability-gated methods live in the narrower protocols below."""

    name: str
    capabilities: frozenset[Capability]
    tokenizer: TextTokenizer
    max_length: int  # longest input (BOS included) the model accepts in one forward pass

    @property
    def bos_token_id(self) -> int:
        """The start token every scored text follows (``tokenizer.bos_id``)."""
        ...


@runtime_checkable
class Scorer(LanguageModel, Protocol):
    """Capability.SCORE: exact probabilities under teacher forcing."""

    def token_stats(self, sequences: Sequence[Sequence[int]]) -> list[TokenStats]:
        """Per-position rank / logprob / top-1 logprob for each whole sequence (one pass each;
        sequences longer than ``max_length`` are scored with sliding windows)."""
        ...

    def next_logprobs(self, prefixes: Sequence[Sequence[int]]) -> np.ndarray:
        """Log-softmax over the vocabulary after each prefix, shape (len(prefixes), vocab)."""
        ...

    def score_ids(
        self, contexts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]]
    ) -> np.ndarray:
        """Sum of log p(continuation tokens | BOS + context), one float64 per pair."""
        ...

    def score_text(self, contexts: Sequence[str], continuations: Sequence[str]) -> list[SpanScore]:
        """Text-level scores, comparable across tokenizers via ``num_words``."""
        ...


@runtime_checkable
class TopKPredictor(LanguageModel, Protocol):
    """Capability.TOP_K: the k most likely next tokens after each prefix."""

    def top_k(self, prefixes: Sequence[Sequence[int]], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """(token ids, logprobs) sorted by decreasing probability, at most k each. Black-box
        backends may return NaN logprobs, or empty arrays when they abstain."""
        ...


@runtime_checkable
class Generator(LanguageModel, Protocol):
    """Capability.GENERATE: decoded continuations of text prompts."""

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int,
        num_beams: int = 1,
        do_sample: bool = False,
        num_return_sequences: int = 1,
        temperature: float = 1.0,
        top_k: int | None = None,
        seed: int | None = None,
    ) -> list[list[str]]:
        """For each prompt, ``num_return_sequences`` continuations (the prompt excluded)."""
        ...


@runtime_checkable
class WhiteBox(LanguageModel, Protocol):
    """Capability.EMBEDDINGS: gradients through input embeddings (soft prompts)."""

    @property
    def torch_module(self) -> torch.nn.Module: ...

    def input_embeddings(self) -> torch.nn.Embedding: ...

    def logits_from_embeddings(self, embeds: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, V) for input embeddings (B, T, H); differentiable."""
        ...


SCORING_CONVENTION = "every token after the start token is scored"


def scoring_convention(model: Any, *, prefix: str = "") -> dict[str, Any]:
    """What a summary holding ``model``'s scores records about how they were taken: the start token
    (``bos_token_id``; None for a model that has none, e.g. a generation-only API seen through its
    tokenizer-less view) and :data:`SCORING_CONVENTION`. ``prefix`` names a second model's keys
    (``reference_``).

    Example:
        >>> class M:
        ...     bos_token_id = 0
        >>> scoring_convention(M())
        {'bos_token_id': 0, 'scoring_convention': 'every token after the start token is scored'}
        >>> scoring_convention(M(), prefix="reference_")["reference_bos_token_id"]
        0
    """
    bos = getattr(model, "bos_token_id", None)
    if bos is None:
        bos = getattr(getattr(model, "tokenizer", None), "bos_id", None)
    return {
        f"{prefix}bos_token_id": None if bos is None else int(bos),
        f"{prefix}scoring_convention": SCORING_CONVENTION,
    }


def require(model: Any, *needed: Capability, attack: str | None = None) -> None:
    """Raise :class:`CapabilityError` before any work if ``model`` lacks a needed capability.

    Example:
        >>> class Api:
        ...     name = "api"; capabilities = frozenset({Capability.GENERATE})
        >>> require(Api(), Capability.GENERATE)
        >>> require(Api(), Capability.SCORE, attack="exposure")
        Traceback (most recent call last):
        ...
        lmleak.errors.CapabilityError: exposure needs 'score' access, but model 'api' grants only 'generate'. Use a model loaded with full access (a local checkpoint), or an attack that needs only 'generate'.
    """
    have: frozenset[Capability] = getattr(model, "capabilities", frozenset())
    missing = [c for c in needed if c not in have]
    if not missing:
        return
    who = attack or "this attack"
    grants = ", ".join(sorted(f"'{c.value}'" for c in have)) or "nothing"
    need = ", ".join(f"'{c.value}'" for c in missing)
    raise CapabilityError(
        f"{who} needs {need} access, but model '{getattr(model, 'name', model)}' grants only {grants}. "
        f"Use a model loaded with full access (a local checkpoint), or an attack that needs only {grants}."
    )


def count_words(text: str) -> int:
    """Whitespace words, the unit of per-word perplexity (at least 1 for non-empty text).

    Example:
        >>> count_words("  My ID is: 123456 ")
        4
    """
    return len(text.split())


def continuation_logprobs(stats: Sequence[TokenStats], contexts: Sequence[Sequence[int]]) -> np.ndarray:
    """Sum of each joined sequence's log-probs after its context (float64), from its token stats.

    Example:
        >>> st = TokenStats(np.array([1, 1, 2]), np.array([-1.0, -0.5, -0.25], dtype=np.float32), np.zeros(3))
        >>> continuation_logprobs([st], [[7]]).tolist()
        [-0.75]
    """
    return np.array(
        [float(st.logprobs[len(c) :].astype(np.float64).sum()) for st, c in zip(stats, contexts, strict=True)]
    )


def score_text_by_ids(scorer: Any, contexts: Sequence[str], continuations: Sequence[str]) -> list[SpanScore]:
    """``score_text`` for any backend with a tokenizer and ``score_ids``: encode, score, count words."""
    enc = scorer.tokenizer.encode
    ctx = [enc(c) if c else [] for c in contexts]
    cont = [enc(x) for x in continuations]
    lp = scorer.score_ids(ctx, cont)
    return [
        SpanScore(float(v), len(ids), count_words(x))
        for v, ids, x in zip(lp, cont, continuations, strict=True)
    ]
