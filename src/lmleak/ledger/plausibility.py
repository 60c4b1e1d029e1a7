"""Whether a ledger's scores can be the model's at all: a corpus perplexity above the vocabulary
size (worse than guessing uniformly) means the tokens scored are not the ones the model reads.

:func:`lmleak.ledger.ledger.build_ledger` calls :func:`check_better_than_uniform` on every backend
(in-process, vLLM, Ray, an HTTP API), so an audit through another model's tokenizer of the same
vocabulary size stops as invalid (exit 2) instead of reporting a leaking model as clean (issue 33: perplexity 5,681 over 500 tokens, 18 unique
leaked sequences instead of 100).
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from lmleak.errors import ModelError

#: How far above the vocabulary size a corpus perplexity may be before the audit stops as invalid
#: (:func:`check_better_than_uniform`). An untrained model is near-uniform with noise: tiny GPTs at
#: random initialisation measured 51.3-52.7 over 52 tokens (up to 1.02 V); another model's tokenizer
#: of the same size gave 5,681 over 500 (11 V).
UNIFORM_SLACK = 1.5


def vocabulary_size(model: Any) -> int | None:
    """The most tokens ``model`` can predict among (its tokenizer's size, its output layer's, a
    server's ``vocab_size``); None when none is known."""
    tok = getattr(model, "tokenizer", None)
    config = getattr(getattr(model, "module", None), "config", None)
    card = (getattr(model, "card", None) or {}).get("lmleak") or {}
    sizes = [
        getattr(tok, "vocab_size", None),
        getattr(config, "vocab_size", None),
        card.get("vocab_size") if isinstance(card, dict) else None,
    ]
    known = [int(n) for n in sizes if isinstance(n, int) and not isinstance(n, bool) and n > 0]
    return max(known) if known else None


def check_better_than_uniform(logprobs: Any, model: Any) -> None:
    """Stop an audit whose model predicts its corpus worse than uniform guessing.

    Guessing uniformly among V tokens has perplexity V, so a corpus perplexity above the vocabulary
    size (by more than :data:`UNIFORM_SLACK`, an untrained model's noise), with the median token's
    perplexity above it too, means the tokens scored are not the ones the model reads: a wrong
    tokenizer (another model's, of the same size) or the wrong model. The median keeps a right model
    that never saw a few tokens (a redacted one, on raw text) from being stopped. The stop is for a
    tokenizer given apart from the model (``tokenizer_source``: ``?tokenizer=DIR`` over HTTP, on any
    backend that records one); a model read with the tokenizer saved beside its weights is warned
    about instead: it cannot have another model's tokenizer, only have learnt little. Its report would find no leak where there may be many.
    Nothing is checked when the log-probabilities are unknown (a top-k-only model) or the vocabulary
    size is.

    Raises:
        ModelError: the perplexity, the vocabulary size, why and the fix (exit 2).
    """
    vocab = vocabulary_size(model)
    lp = np.asarray(logprobs)
    if vocab is None or lp.size == 0 or not np.isfinite(lp).all():
        return
    lp = np.asarray(lp, dtype=np.float64)
    perplexity = math.exp(min(-float(lp.mean()), 700.0))
    # subtle: the mean alone also stops a right model that never saw some tokens (a redacted or CRT
    # model on raw text gives each digit or name it never saw a log-probability near -50, and a few
    # of those lift the corpus perplexity above V: the quick demo's CRT model read 2,964). A wrong
    # tokenizer misreads nearly every token, so the typical (median) token is worse than uniform too.
    typical = math.exp(min(-float(np.median(lp)), 700.0))
    if perplexity > UNIFORM_SLACK * vocab and typical > UNIFORM_SLACK * vocab:
        name = getattr(model, "name", type(model).__name__)
        source = getattr(model, "tokenizer_source", None)
        if source is None:
            # a model read with the tokenizer saved beside its weights (no tokenizer given apart from
            # it) cannot have another model's tokenizer: it learnt nothing usable (an untrained model
            # with large random logits, a DP or CRT model whose noise swamped its few steps: the quick
            # demo's CRT model, 2,964 over 1,331 tokens), and its report is valid — said, not stopped
            print(
                f"warning: {name}: corpus perplexity {perplexity:,.0f} (typical token {typical:,.0f}) is above "
                f"its vocabulary size ({vocab:,} tokens): it predicts this corpus worse than uniform "
                "guessing, so it has learnt little of it; its report is read with its own tokenizer",
                file=sys.stderr,
            )
            return
        raise ModelError(
            f"{name}: corpus perplexity {perplexity:,.0f} is above the vocabulary size ({vocab:,} tokens, "
            f"limit {UNIFORM_SLACK:g} x), and so is the typical token's ({typical:,.0f}, the median): "
            "the model predicts this corpus worse than uniform guessing, so the audit is invalid (a "
            "leaking model would look clean). The tokenizer"
            + (f" ({source})" if source else "")
            + " is not the model's, or the model is not the one meant; give the model's own tokenizer "
            "folder (tokenizer=DIR for a model behind an API) or the model that was trained on the corpus"
        )
