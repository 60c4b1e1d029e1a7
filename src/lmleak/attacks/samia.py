"""SaMIA: membership inference from sampled text alone (Kaneko et al. 2024, "Sampling-based
Pseudo-Likelihood for Membership Inference Attacks", arXiv:2404.11262).

For each candidate text: its first ``int(prefix_share · words)`` whitespace words are the prefix,
the rest its true continuation. The model samples ``samples`` continuations of the prefix
(temperature sampling, text only), and the text's score is the ROUGE-N recall of the true
continuation by each sample, averaged over the samples: a model that saw the text tends to
continue its prefix with its own words, so **members score higher**. It needs only
:attr:`~lmleak.models.base.Capability.GENERATE`, so it runs on every backend, the HTTP ``text`` and
``chat`` tiers included.

Conventions, as the authors' code (``nlp-titech/samia``) computes them:

- words are whitespace-separated, case and punctuation kept; the prefix is ``int(n · share)``
  words (their ``sampling.py``), the reference every word after it;
- sampling at temperature 1 with top-k 50 (their ``model.generate`` call); the candidate is every
  word the model generated after the prefix;
- ROUGE-N recall = clipped n-gram matches / the reference's n-grams; for unigrams (the paper's
  N = 1, its only reported setting) that is the reference's word count, as their ``rouge_n``
  divides. Their code divides by the word count for every N; for bigrams lmleak divides by the
  reference's bigram count, the textbook ROUGE-2 recall (Lin 2004).

A text whose prefix or continuation is empty (one word at share 0.5), or whose continuation holds
no n-gram, gets no score (NaN: left out of the method's numbers and counted, as Min-K% does).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from lmleak.errors import check_number
from lmleak.models.base import Capability, require
from lmleak.words import plural


@dataclass(frozen=True, slots=True)
class SamiaSettings:
    """SaMIA's settings (``lmleak mia --samia-*``; the audit's ``membership.samia``).

    Attributes:
        samples: continuations sampled per text (the paper: 10).
        prefix_share: share of a text's words given as the prefix (the paper: 0.5).
        max_new_tokens: tokens generated per sample at most (the authors generate up to 1,024
            tokens in all; the candidate's extra words only add to the recall's chances equally).
        temperature: sampling temperature (the paper: 1).
        top_k: sample among the ``top_k`` most likely tokens (the authors: 50); 0: the whole vocabulary.
        ngram: N of ROUGE-N (1: unigrams, as the paper; 2: bigrams).
    """

    samples: int = 10
    prefix_share: float = 0.5
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_k: int = 50
    ngram: int = 1

    def __post_init__(self) -> None:
        check_number(self.samples, "samia_samples", ge=1, integer=True)
        check_number(self.prefix_share, "samia_prefix_share", gt=0, lt=1)
        check_number(self.max_new_tokens, "samia_max_new_tokens", ge=1, integer=True)
        check_number(self.temperature, "samia_temperature", gt=0)
        check_number(self.top_k, "samia_top_k", ge=0, integer=True)
        check_number(self.ngram, "samia_ngram", ge=1, le=2, integer=True)

    def record(self) -> dict[str, Any]:
        """A JSON-able record for fingerprints and summaries."""
        return asdict(self)


# ----------------------------------------------------------------------------------- pure maths
def split_prefix(text: str, share: float) -> tuple[list[str], list[str]]:
    """The prefix (the first ``int(n · share)`` of the ``n`` whitespace words) and the continuation.

    Example:
        >>> split_prefix("a b c d e", 0.5)
        (['a', 'b'], ['c', 'd', 'e'])
    """
    words = text.split()
    k = int(len(words) * share)
    return words[:k], words[k:]


def _ngrams(words: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def rouge_n_recall(candidate: Sequence[str], reference: Sequence[str], n: int = 1) -> float:
    """ROUGE-N recall: the reference's n-grams found in the candidate (each counted at most as often
    as the candidate holds it) over the reference's n-grams; NaN when the reference has none.

    Example:
        >>> rouge_n_recall("the cat the".split(), "the the the dog".split())   # 2 of 4 unigrams
        0.5
        >>> rouge_n_recall("a b c".split(), "a b d".split(), 2)                # 1 of 2 bigrams
        0.5
        >>> rouge_n_recall(["a"], [], 1)
        nan
    """
    ref = _ngrams(reference, n)
    total = sum(ref.values())
    if total == 0:
        return math.nan
    return sum((ref & _ngrams(candidate, n)).values()) / total


def samia_score(samples: Sequence[str], continuation: Sequence[str], n: int = 1) -> float:
    """A text's SaMIA score: the mean over its sampled continuations of their ROUGE-N recall of the
    true continuation (higher = more likely a member).

    Example:
        >>> samia_score(["c d e", "x y z"], ["c", "d", "e", "f"])   # (3/4 + 0) / 2
        0.375
    """
    return float(np.mean([rouge_n_recall(s.split(), continuation, n) for s in samples]))


# ----------------------------------------------------------------------------------- the queries
@dataclass(frozen=True, slots=True)
class SamiaResult:
    """SaMIA's scores and what they cost.

    ``requests`` counts the generation requests sent (an HTTP model's counter; a local backend's
    batched ``generate`` calls); ``cached`` the answers an HTTP cache gave instead. Per text:
    ``generated_tokens`` its samples' tokens, re-encoded with the model's tokenizer (NaN when that
    tokenizer is the server's, which would cost a request per sample), ``generated_words`` their words.
    """

    scores: np.ndarray
    samples: list[list[str]]
    requests: int
    cached: int
    generated_tokens: np.ndarray
    generated_words: np.ndarray


def _counters(model: Any) -> tuple[int, int] | None:
    c = getattr(model, "counters", None)
    if c is None or not hasattr(c, "requests"):
        return None
    return int(c.requests), int(getattr(c, "cached", 0))


def _local_tokenizer(model: Any) -> Any:
    tok = getattr(model, "tokenizer", None)
    return None if tok is None or type(tok).__name__ == "RemoteTokenizer" else tok


def samia_scores(model: Any, texts: Sequence[str], settings: SamiaSettings, *, seed: int = 0) -> SamiaResult:
    """Sample ``settings.samples`` continuations of every text's prefix in one batched
    ``generate`` call (an HTTP backend splits it into requests of its ``batch`` prompts, ``n``
    samples each) and score each text (:func:`samia_score`). Texts with an empty prefix or
    continuation are not sent and score NaN.

    Raises:
        CapabilityError: the model cannot generate text.
    """
    require(model, Capability.GENERATE, attack="SaMIA membership inference")
    splits = [split_prefix(t, settings.prefix_share) for t in texts]
    sent = [i for i, (p, c) in enumerate(splits) if p and len(c) >= settings.ngram]
    before = _counters(model)
    outs: list[list[str]] = []
    if sent:
        outs = model.generate(
            [" ".join(splits[i][0]) for i in sent],
            max_new_tokens=settings.max_new_tokens,
            do_sample=True,
            num_return_sequences=settings.samples,
            temperature=settings.temperature,
            top_k=settings.top_k or None,
            seed=seed,
        )
    after = _counters(model)
    if before is None or after is None:
        requests, cached = (1 if sent else 0), 0
    else:
        requests, cached = after[0] - before[0], after[1] - before[1]
    scores = np.full(len(texts), np.nan)
    samples: list[list[str]] = [[] for _ in texts]
    for i, out in zip(sent, outs, strict=True):
        samples[i] = list(out)
        scores[i] = samia_score(out, splits[i][1], settings.ngram)
    tok = _local_tokenizer(model)
    tokens = np.array(
        [math.nan if tok is None else float(sum(len(tok.encode(s)) for s in row)) for row in samples]
    )
    words = np.array([float(sum(len(s.split()) for s in row)) for row in samples])
    return SamiaResult(scores, samples, requests, cached, tokens, words)


def samia_columns(
    model: Any, texts: Sequence[str], settings: SamiaSettings, *, seed: int = 0
) -> dict[str, np.ndarray]:
    """The ``samia`` score per text and its cost columns: each text's share of the requests and
    cache hits (they sum to the totals over shards: :func:`samia_cost`), its samples' tokens and words."""
    r = samia_scores(model, texts, settings, seed=seed)
    n = max(len(texts), 1)
    return {
        "samia": r.scores,
        "samia_requests": np.full(len(texts), r.requests / n),
        "samia_cached": np.full(len(texts), r.cached / n),
        "samia_generated_tokens": r.generated_tokens,
        "samia_generated_words": r.generated_words,
    }


def samia_cost(table: Any, settings: SamiaSettings) -> dict[str, Any]:
    """The summary's SaMIA cost from the scores table (``samia_columns``' columns, over every
    shard): requests sent, cache hits, samples drawn, tokens and words generated, and the line
    ``samia_cost`` that ``lmleak mia`` prints."""
    sent = np.isfinite(np.asarray(table["samia"], dtype=np.float64))
    tokens = np.asarray(table["samia_generated_tokens"], dtype=np.float64)
    out: dict[str, Any] = {
        "samia_requests": round(float(np.sum(table["samia_requests"]))),
        "samia_cached": round(float(np.sum(table["samia_cached"]))),
        "samia_texts_sampled": int(np.sum(sent)),
        "samia_samples": int(np.sum(sent)) * settings.samples,
        "samia_generated_tokens": None if np.isnan(tokens).any() else int(tokens.sum()),
        "samia_generated_words": int(np.sum(table["samia_generated_words"])),
        "samia_max_generated_tokens": int(np.sum(sent)) * settings.samples * settings.max_new_tokens,
    }
    toks = (
        "tokens uncounted (the server's tokenizer)"
        if out["samia_generated_tokens"] is None
        else f"{out['samia_generated_tokens']:,} tokens"
    )
    out["samia_cost"] = (
        f"SaMIA: {out['samia_texts_sampled']} texts x {settings.samples} samples = {out['samia_samples']} "
        f"continuations in {plural(out['samia_requests'], 'request')} ({out['samia_cached']} cached); generated "
        f"{toks}, {out['samia_generated_words']:,} words (at most {out['samia_max_generated_tokens']:,} tokens)"
    )
    return out
