"""The encoded sequences of one training run, the same for a small model and a fine-tune: :class:`RunData`.

:func:`crt_split_words` is paper 002's public/private split (or the caller's) with its word counts;
:func:`encode_run` turns the training text (for ``crt``: D_pri, with D_pub beside it) and the
held-out text into chunks (:func:`lmleak.train.plain.encode_chunks`), resolves the privacy unit of
a DP mode on the corpus the private sequences come from (who owns which, :mod:`lmleak.train.units`)
and, for ``sdp``, the per-token mask of sensitive positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lmleak.data.corpus import Corpus
from lmleak.train.plain import Chunks, encode_chunks
from lmleak.train.sensitive import crt_split_for, sensitive_token_mask
from lmleak.train.units import Units, resolve_privacy_unit


@dataclass
class RunData:
    """The encoded sequences of one run: private (or all) training, CRT public, validation."""

    mode: str
    batch_size: int
    train: Chunks
    public: Chunks | None = None
    val: Chunks | None = None
    sensitive: Any = None  # sdp: the per-token mask of sensitive positions
    split_stats: dict[str, Any] | None = None  # crt: paper 002's split statistics
    unit: str = "sequence"  # DP modes: the privacy unit, why, and who owns each private sequence
    unit_reason: str = ""
    units: Units | None = None


def crt_split_words(
    corpus: Corpus, config: Any, public: Corpus | None, private: Corpus | None
) -> tuple[Corpus, Corpus, dict[str, Any]]:
    """(D_pub, D_pri, statistics): paper 002's split of ``corpus`` (or the given one) with the words
    on each side."""
    public, private, stats = crt_split_for(corpus, config, public, private)
    stats.setdefault("public_words", sum(len(t.split()) for t in public.texts()))
    stats.setdefault("private_words", sum(len(t.split()) for t in private.texts()))
    return public, private, stats


def encode_run(
    config: Any,
    tokenizer: Any,
    train_corpus: Corpus,
    val: Corpus | None,
    split: tuple[Corpus, Corpus, dict[str, Any]] | None = None,
) -> RunData:
    """Encode one run's text (module docstring); ``split`` is :func:`crt_split_words`' (``crt``
    only: the tokenizer of a small model is learnt on D_pub, before encoding). ``config`` is a :class:`~lmleak.train.config.TrainConfig` or
    ``FinetuneConfig``."""
    mode, seq_len = config.mode, config.seq_len
    if mode == "crt":
        assert split is not None, "crt encodes the split it was trained on (crt_split_words)"
        pub, pri, stats = split
        data = RunData(mode, config.batch_size, encode_chunks(pri.texts(), tokenizer, seq_len))
        data.public, data.split_stats, owners = encode_chunks(pub.texts(), tokenizer, seq_len), stats, pri
    else:
        data = RunData(mode, config.batch_size, encode_chunks(train_corpus.texts(), tokenizer, seq_len))
        owners = train_corpus
    if mode != "nodp":
        unit, data.unit_reason = resolve_privacy_unit(config.privacy_unit, mode, owners.users)
        data.unit = unit or "sequence"
        data.units = Units.of_corpus(data.train, owners)
    if mode == "sdp":
        data.sensitive = sensitive_token_mask(train_corpus, tokenizer, config)
    data.val = encode_chunks(val.texts(), tokenizer, seq_len) if val is not None and len(val) else None
    return data
