"""Adapters from Hugging Face tokenizers to lmleak's :class:`~lmleak.models.base.TextTokenizer`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class HFTokenizer:
    """Wrap a ``transformers`` tokenizer: no special tokens on encode, a guaranteed BOS and pad id.

    Models without a BOS token use their EOS as the start token (GPT-2 convention); models without
    a pad token pad with the start token (padding is always masked out).
    """

    def __init__(self, hf_tokenizer: Any) -> None:
        self.hf = hf_tokenizer
        bos = hf_tokenizer.bos_token_id
        eos = hf_tokenizer.eos_token_id
        if bos is None:
            bos = eos
        if bos is None:
            raise ValueError("tokenizer has neither a BOS nor an EOS token; lmleak needs a start token")
        self.bos_id: int = int(bos)
        self.eos_id: int | None = None if eos is None else int(eos)
        pad = hf_tokenizer.pad_token_id
        self.pad_id: int = int(pad) if pad is not None else self.bos_id
        self.vocab_size: int = len(hf_tokenizer)

    def encode(self, text: str) -> list[int]:
        return list(self.hf.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return str(
            self.hf.decode(
                [int(i) for i in ids], skip_special_tokens=False, clean_up_tokenization_spaces=False
            )
        )

    def decode_many(self, rows: Sequence[Sequence[int]]) -> list[str]:
        """``[decode(r) for r in rows]`` in one call of the Rust backend (4x faster on 128-token rows)."""
        backend = getattr(self.hf, "backend_tokenizer", None)
        if backend is None or getattr(self.hf, "clean_up_tokenization_spaces", False):
            return [self.decode(r) for r in rows]
        return list(backend.decode_batch([[int(i) for i in r] for r in rows], skip_special_tokens=False))

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return list(self.hf.convert_ids_to_tokens([int(i) for i in ids]))
