"""``lmleak eval``: a model's perplexity and top-k accuracy on a corpus, as one record.

The statistics themselves are :func:`lmleak.models.evaluation.evaluate_model`; this module loads the
model spec and the corpus (it sits above ``models`` and ``data``, which may not import each other).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lmleak.data.loaders import load_corpus
from lmleak.models.base import Capability, require, scoring_convention
from lmleak.models.evaluation import evaluate_model
from lmleak.models.loading import load_model
from lmleak.runs import atomic_write_json


def evaluate_on_corpus(
    model: str,
    corpus: str | Path,
    *,
    ks: tuple[int, ...] = (1, 3),
    out_path: str | Path | None = None,
) -> dict[str, Any]:
    """Load the model spec ``model`` and the corpus, and evaluate one on the other (teacher forcing).

    Args:
        model: a model spec :func:`lmleak.models.loading.load_model` reads; it needs per-token scores.
        corpus: the corpus to evaluate on (:func:`lmleak.data.loaders.load_corpus`).
        ks: the top-k accuracies to report.
        out_path: also write the record to this JSON file.

    Returns:
        ``{"model": model, "corpus": str(corpus), "bos_token_id", "scoring_convention", **metrics}``
        with the metrics of :func:`~lmleak.models.evaluation.evaluate_model` and the start token
        they were scored after (:func:`~lmleak.models.base.scoring_convention`).

    Raises:
        CapabilityError: the model grants no per-token scores (top-k or text only).
    """
    data = load_corpus(corpus)  # before the model loads: a bad corpus exits 2 at once
    lm = load_model(model)
    require(lm, Capability.SCORE, attack="eval")
    metrics = evaluate_model(lm, data, ks=tuple(ks))
    record: dict[str, Any] = {"model": model, "corpus": str(corpus), **scoring_convention(lm), **metrics}
    if out_path:
        atomic_write_json(out_path, record)
    return record
