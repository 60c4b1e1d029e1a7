"""The served model and what every route shares: its name and tier, its limits, its prompt checks,
the worker thread that runs it, and the small routes (``/v1/models``, ``/v1/models/{id}``,
``/tokenize``, ``/detokenize``)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lmleak.serve.errors import refuse
from lmleak.serve.fields import boolean, integer, is_int, kind_of, text
from lmleak.serve.limits import (
    MIN_MAX_TOKENS,
    ServeLimits,
    char_limit,
    max_new_tokens,
    max_token_chars,
    vocab_size,
)
from lmleak.serve.prompts import Prompts, check_ids
from lmleak.serve.scoring import Scoring
from lmleak.serve.tiers import logprobs_limit
from lmleak.serve.worker import ModelWorker


@dataclass
class Served:
    """One model behind the API (built once per app by :func:`lmleak.serve.app.build_app`)."""

    model: Any
    tier: str
    name: str
    limits: ServeLimits
    scoring: Scoring = field(init=False)
    prompts: Prompts = field(init=False)
    worker: ModelWorker = field(default_factory=ModelWorker)

    def __post_init__(self) -> None:
        self.tok = self.model.tokenizer
        self.max_length = int(self.model.max_length)
        self.scoring = Scoring(self.model)
        bound = char_limit(self.max_length, max_token_chars(self.tok))
        self.prompts = Prompts(self.tok, self.max_length, bound, bos_required=not self.scoring.fast)
        # one token decoded alone (vLLM's ``decoded_token``), cached: prompts repeat tokens
        self.piece: Any = functools.lru_cache(maxsize=1 << 16)(lambda i: self.tok.decode([i]))

    @property
    def top_limit(self) -> int:
        """The most log-probabilities per position this tier shows (on every route)."""
        return logprobs_limit(self.tier, self.limits.max_logprobs)

    # ------------------------------------------------------------------ shared pieces
    def check_model(self, body: dict[str, Any]) -> None:
        """Refuse a request naming another model than the one served (404, as vLLM)."""
        asked = body.get("model")
        if asked is not None and not isinstance(asked, str):
            refuse(400, f"model must be a string (got {kind_of(asked)})", param="model", code="invalid_type")
        if asked not in (None, self.name):
            self.unknown_model(asked)

    def unknown_model(self, asked: str) -> None:
        refuse(
            404,
            f"The model `{asked[:100]}` does not exist. Served: {self.name}",
            param="model",
            code="model_not_found",
        )

    def token_text(self, i: int, as_ids: bool) -> str:
        """A token as ``logprobs`` names it: its text, or ``token_id:N`` when asked for ids."""
        return f"token_id:{int(i)}" if as_ids else self.piece(int(i))

    def prompt_text(self, row: Sequence[int]) -> str:
        """The text of an id row, without the BOS lmleak put in front."""
        return self.tok.decode(row[1:] if row and row[0] == self.tok.bos_id else row)

    def max_tokens(self, body: dict[str, Any], *keys: str, default: int = 16) -> int:
        """The first of ``keys`` present, an integer between 0 and :func:`~lmleak.serve.limits.max_new_tokens`."""
        hi = max_new_tokens(self.limits, self.max_length)
        if self.limits.max_tokens is not None:
            why = " (lmleak serve --max-tokens)"
        elif hi == self.max_length:
            why = " (this model's context)"
        else:
            why = f" (the context is {self.max_length} tokens; up to {MIN_MAX_TOKENS} slide the window)"
        default = min(default, hi)
        for key in keys:
            if body.get(key) is not None:
                return integer(body, key, default=default, lo=0, hi=hi, why=why)
        return default

    @staticmethod
    def usage(rows: Sequence[Sequence[int]], completion: int) -> dict[str, int]:
        """The OpenAI ``usage`` block (the BOS lmleak puts before a text prompt is a prompt token)."""
        p = sum(len(r) for r in rows)
        return {"prompt_tokens": p, "completion_tokens": completion, "total_tokens": p + completion}

    # ------------------------------------------------------------------ GET /v1/models, tokenizer routes
    def card(self) -> dict[str, Any]:
        """The model card, with lmleak's tokenizer facts and the tier."""
        tok = self.tok
        lmleak = {
            "bos_id": tok.bos_id,
            "eos_id": tok.eos_id,
            "pad_id": tok.pad_id,
            "vocab_size": tok.vocab_size,
            "max_length": self.max_length,
            "tier": self.tier,
        }
        card = {"id": self.name, "object": "model", "created": 0, "owned_by": "lmleak"}
        return {**card, "max_model_len": self.max_length, "lmleak": lmleak}

    def models(self) -> dict[str, Any]:
        """``GET /v1/models``."""
        return {"object": "list", "data": [self.card()]}

    def model_card(self, model_id: str) -> dict[str, Any]:
        """``GET /v1/models/{id}``: the card, or 404 for another name."""
        if model_id != self.name:
            self.unknown_model(model_id)
        return self.card()

    def tokenize_request(self, body: dict[str, Any]) -> tuple[str, bool]:
        """The checked fields of ``/tokenize``: the prompt and ``add_special_tokens``."""
        self.check_model(body)
        prompt = text(body, "prompt")
        if prompt is None:
            refuse(400, "prompt must be a string", param="prompt", code="invalid_type")
        return prompt, boolean(body, "add_special_tokens", default=True)

    def tokenize(self, prompt: str, special: bool) -> dict[str, Any]:
        """``/tokenize``: ids of the prompt (BOS first unless ``add_special_tokens`` is false). Whole
        documents longer than the context are allowed here (clients window them); the body limit
        bounds the work."""
        ids = self.tok.encode(prompt)
        if special:
            ids = [self.tok.bos_id, *ids]
        return {"tokens": ids, "count": len(ids), "max_model_len": self.max_length}

    def detokenize_request(self, body: dict[str, Any]) -> list[int]:
        """The checked ``tokens`` of ``/detokenize``."""
        self.check_model(body)
        tokens = body.get("tokens", [])
        if not isinstance(tokens, list) or not all(is_int(t) for t in tokens):
            refuse(400, "tokens must be a list of token ids", param="tokens", code="invalid_type")
        check_ids(tokens, vocab_size(self.tok), "tokens")
        return list(tokens)

    def detokenize(self, tokens: list[int]) -> dict[str, Any]:
        """``/detokenize``: the text of the ids."""
        return {"prompt": self.tok.decode(tokens)}
