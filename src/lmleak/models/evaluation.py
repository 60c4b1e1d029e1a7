"""Model quality on a corpus from teacher-forced statistics: perplexity and top-k accuracy."""

from __future__ import annotations

from typing import Any

import numpy as np

from lmleak.models.base import count_words
from lmleak.progress import track


def evaluate_model(
    model: Any, corpus: Any, *, ks: tuple[int, ...] = (1, 3), batch_docs: int = 64
) -> dict[str, float]:
    """Perplexity per token and per whitespace word, and top-k next-token accuracy.

    Every token of every document is predicted from BOS plus the tokens before it (one pass per
    document through ``model.token_stats``). Per-word perplexity divides the total negative
    log-likelihood by the number of whitespace words, so models with different tokenizers compare.
    """

    nll, tokens, words = 0.0, 0, 0
    hits = dict.fromkeys(ks, 0)
    docs = list(corpus)
    for s in track(range(0, len(docs), batch_docs), description="scoring"):
        batch = docs[s : s + batch_docs]
        stats = model.token_stats([model.tokenizer.encode(d.text) for d in batch])
        for d, st in zip(batch, stats, strict=True):
            nll -= float(np.sum(st.logprobs, dtype=np.float64))
            tokens += len(st)
            words += count_words(d.text)
            for k in ks:
                hits[k] += int(np.sum(st.ranks <= k))
    out = {
        "perplexity": float(np.exp(nll / max(tokens, 1))),
        "perplexity_per_word": float(np.exp(nll / max(words, 1))),
        "tokens": float(tokens),
        "words": float(words),
    }
    out.update({f"top{k}_accuracy": hits[k] / max(tokens, 1) for k in ks})
    return out
