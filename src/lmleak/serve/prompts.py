"""Prompts as token-id rows, held to the context before and after tokenising.

Text prompts get the model's BOS id prepended (lmleak's convention: every scored sequence starts
with it); token-id prompts are scored as given (a later sliding window starts mid-document), except
for a model without a torch forward pass, whose prompts must start with the BOS id. A text longer
than :func:`lmleak.serve.limits.char_limit` characters is refused before it is tokenised; after
tokenising, a row longer than the context is refused. Chat messages are joined with newlines (no
chat template: the served models are base models); a message's content is a string or an array of
``{"type": "text", "text": ...}`` parts, joined with newlines (other part types are refused).
"""

from __future__ import annotations

from typing import Any

from lmleak.serve.errors import refuse
from lmleak.serve.fields import is_int, kind_of
from lmleak.serve.limits import vocab_size

PROMPT_SHAPES = "prompt must be a string, a list of strings, a list of token ids or a list of such lists"
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def check_ids(ids: list[int], vocab: int | None, param: str) -> None:
    """Refuse token ids outside the vocabulary (negative ones when its size is unknown)."""
    top = vocab - 1 if vocab is not None else None
    if any(t < 0 or (top is not None and t > top) for t in ids):
        refuse(
            400,
            f"token ids must be between 0 and {top}" if top is not None else "token ids must not be negative",
            param=param,
            code="out_of_range",
        )


def _too_long(n_tokens: int | None, max_length: int, param: str, chars: int | None = None) -> None:
    got = (
        f"the prompt has {n_tokens} tokens"
        if n_tokens is not None
        else f"the prompt has {chars:,} characters"
    )
    refuse(
        400,
        f"This model's maximum context length is {max_length} tokens; {got} (at most {max_length} tokens fit)",
        param=param,
        code="context_length_exceeded",
    )


class Prompts:
    """Turns request prompts into BOS-led id rows for one served model."""

    def __init__(self, tok: Any, max_length: int, char_limit: int, bos_required: bool) -> None:
        self.tok, self.max_length, self.char_limit = tok, max_length, char_limit
        self.bos_required = bos_required  # a model scored through the protocol: id rows start with BOS

    def text_row(self, text: str, param: str) -> list[int]:
        """``[BOS, *encode(text)]``, refused when it cannot or does not fit the context."""
        if self.char_limit and len(text) > self.char_limit:
            _too_long(None, self.max_length, param, chars=len(text))
        row = [self.tok.bos_id, *self.tok.encode(text)]
        if len(row) > self.max_length:
            _too_long(len(row), self.max_length, param)
        return row

    def id_row(self, ids: list[int], param: str) -> list[int]:
        """A token-id prompt, checked against the vocabulary, the context and the BOS rule."""
        if not ids:
            refuse(400, "a token-id prompt must not be empty", param=param, code="invalid_value")
        check_ids(ids, vocab_size(self.tok), param)
        if self.bos_required and ids[0] != self.tok.bos_id:
            refuse(
                400,
                f"a token-id prompt must start with the BOS id {self.tok.bos_id} (this model scores after its BOS only)",
                param=param,
                code="invalid_value",
            )
        if len(ids) > self.max_length:
            _too_long(len(ids), self.max_length, param)
        return list(ids)

    def rows(self, prompt: Any, max_prompts: int) -> tuple[list[list[int]], bool]:
        """The request's ``prompt`` as id rows; True when they came as text."""
        if isinstance(prompt, str):
            prompt = [prompt]
        elif isinstance(prompt, list) and prompt and all(is_int(x) for x in prompt):
            prompt = [prompt]
        if not isinstance(prompt, list) or not prompt:
            refuse(400, PROMPT_SHAPES, param="prompt", code="invalid_type")
        if len(prompt) > max_prompts:
            refuse(
                400,
                f"at most {max_prompts} prompts per request (lmleak serve --max-prompts)",
                param="prompt",
                code="out_of_range",
            )
        rows, text = [], False
        for i, p in enumerate(prompt):
            param = f"prompt[{i}]" if len(prompt) > 1 else "prompt"
            if isinstance(p, str):
                rows.append(self.text_row(p, param))
                text = True
            elif isinstance(p, list) and all(is_int(x) for x in p):
                rows.append(self.id_row(p, param))
            else:
                refuse(400, PROMPT_SHAPES, param=param, code="invalid_type")
        return rows, text

    def chat_text(self, messages: Any) -> str:
        """The messages' contents joined with newlines (a role, a string or text-part content each)."""
        if not isinstance(messages, list) or not messages:
            refuse(400, "messages must be a non-empty list", param="messages", code="invalid_type")
        texts = []
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                refuse(
                    400,
                    f"messages[{i}] must be an object (got {kind_of(m)})",
                    param=f"messages[{i}]",
                    code="invalid_type",
                )
            role = m.get("role")
            if role is not None and role not in ROLES:
                refuse(
                    400,
                    f"messages[{i}].role must be one of {', '.join(sorted(ROLES))}",
                    param=f"messages[{i}].role",
                    code="invalid_value",
                )
            texts.append(self._content(m.get("content"), f"messages[{i}].content"))
        return "\n".join(texts)

    @staticmethod
    def _content(content: Any, param: str) -> str:
        if content is None or isinstance(content, str):
            return content or ""
        if not isinstance(content, list):
            refuse(
                400,
                f"{param} must be a string or an array of content parts",
                param=param,
                code="invalid_type",
            )
        parts = []
        for j, part in enumerate(content):
            where = f"{param}[{j}]"
            if not isinstance(part, dict) or part.get("type") != "text":
                kind = (
                    part.get("type") if isinstance(part, dict) and isinstance(part.get("type"), str) else None
                )
                what = f"{kind!r} parts" if kind else "parts that are not text"
                refuse(
                    400,
                    f"{where}: this server reads text only ({what} are not supported; "
                    'send {"type": "text", "text": ...})',
                    param=where,
                    code="unsupported_content",
                )
            if not isinstance(part.get("text"), str):
                refuse(400, f"{where}.text must be a string", param=f"{where}.text", code="invalid_type")
            parts.append(part["text"])
        return "\n".join(parts)
