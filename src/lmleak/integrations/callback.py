"""A ``transformers.TrainerCallback`` that runs the leakage report's metrics at every epoch end.

Paper 001 (§6.1, Fig. 5) runs the tab attack on a snapshot of the model after every epoch to see
leakage grow with training. :class:`LeakageCallback` does that without saving checkpoints: at each
epoch end it builds the token ledger of the live model over a fixed sample of the training data,
derives S, the unique-sequence count and top-k accuracy (the same code as ``lmleak report``), and
logs them (``state.log_history`` and, optionally, one JSON file per epoch).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from lmleak.data.corpus import Corpus
from lmleak.ledger.ledger import Ledger, score_documents
from lmleak.models.tokenizer import HFTokenizer
from lmleak.models.torch_causal import TorchCausalLM
from lmleak.report.leakage import ReportSettings, analyse, build_index
from lmleak.runs import atomic_write_json


class LeakageCallback(TrainerCallback):  # type: ignore[misc]
    """Leakage metrics of the model being trained, once per epoch.

    Args:
        corpus: the training data (or a part of it); users matter, since "unique" means one user.
        k: top-k of the tab attack.
        sample_documents: documents scored per epoch (seeded sample; None: all).
        out_dir: if given, ``leakage-epoch-N.json`` is written there each epoch.
        max_length: the model's window for scoring (default: its config's positions, at most 1024).
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        k: int = 1,
        sample_documents: int | None = 200,
        seed: int = 0,
        out_dir: str | Path | None = None,
        max_length: int | None = None,
    ) -> None:
        docs = list(corpus)
        if sample_documents is not None and len(docs) > sample_documents:
            docs = random.Random(seed).sample(docs, sample_documents)
        self.corpus = Corpus(docs)
        self.k = k
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.max_length = max_length
        self.history: list[dict[str, Any]] = []

    def _metrics(self, model: Any, tokenizer: Any) -> dict[str, Any]:
        cfg: Any = getattr(model, "config", None)
        positions: Any = getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", 1024)
        max_length = self.max_length or min(int(positions), 1024)
        was_training = model.training
        lm = TorchCausalLM(model, HFTokenizer(tokenizer), name="training", max_length=max_length)
        try:
            ids = [lm.tokenizer.encode(d.text) for d in self.corpus]
            stats = score_documents(lm, ids)
        finally:
            model.train(was_training)
        ledger = Ledger.from_stats(
            [d.doc_id for d in self.corpus], [d.user_id for d in self.corpus], ids, stats
        )
        _, _, by_k = analyse(ledger, build_index(ledger), lm.tokenizer, ReportSettings(k=(self.k,)))
        m = by_k[str(self.k)]
        return {
            key: m.get(key)
            for key in ("num_sequences", "unique_sequences", "top_k_accuracy", "perplexity")
            if key in m
        }

    def on_epoch_end(
        self,
        args: Any,
        state: Any,
        control: Any,
        model: Any = None,
        processing_class: Any = None,
        tokenizer: Any = None,
        **kwargs: Any,
    ) -> Any:
        tok = processing_class if processing_class is not None else tokenizer
        if model is None or tok is None:
            raise ValueError(
                "LeakageCallback needs the Trainer's model and tokenizer (pass processing_class=tokenizer)"
            )
        metrics = {
            "epoch": float(state.epoch or len(self.history) + 1),
            "k": self.k,
            **self._metrics(model, tok),
        }
        self.history.append(metrics)
        state.log_history.append(
            {f"leakage/{key}": v for key, v in metrics.items()} | {"step": state.global_step}
        )
        if self.out_dir is not None:
            atomic_write_json(self.out_dir / f"leakage-epoch-{len(self.history)}.json", metrics)
        return control
