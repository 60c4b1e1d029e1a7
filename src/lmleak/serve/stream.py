"""``stream: true``: the answer as server-sent events, as the OpenAI API and its clients read them.

Each event is one line ``data: {chunk}`` and a blank line; the stream ends with ``data: [DONE]``.
A choice is sent token by token (``text`` pieces on ``/v1/completions``, ``delta.content`` on chat,
each with its own log-probabilities when asked), then a chunk with its ``finish_reason``; with
``stream_options: {"include_usage": true}`` every chunk carries ``"usage": null`` and a last chunk
with no choices carries the usage. The model runs to the end of the answer before the first chunk
is sent (one request at a time holds the model anyway), so a refused or failed request is an
ordinary HTTP error, never a stream cut short.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import StreamingResponse

from lmleak.serve.decode import Choice

DONE = b"data: [DONE]\n\n"


def event(obj: Any) -> bytes:
    """One server-sent event carrying ``obj`` as JSON."""
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _head(prefix: str, kind: str, name: str) -> dict[str, Any]:
    return {"id": f"{prefix}-{time.time_ns()}", "object": kind, "created": int(time.time()), "model": name}


def _chunks(head: dict[str, Any], choices: list[dict[str, Any]], usage: dict[str, int] | None) -> list[bytes]:
    extra = {"usage": None} if usage is not None else {}
    out = [event({**head, "choices": [c], **extra}) for c in choices]
    if usage is not None:
        out.append(event({**head, "choices": [], "usage": usage}))
    return [*out, DONE]


def completion_events(
    name: str, choices: list[Choice], usage: dict[str, int], include_usage: bool
) -> list[bytes]:
    """The events of a streamed ``/v1/completions`` answer."""
    head = _head("cmpl", "text_completion", name)
    parts: list[dict[str, Any]] = []
    for c in choices:
        for i, piece in enumerate(c.pieces or ([""] if c.prompt_logprobs is not None else [])):
            d: dict[str, Any] = {
                "index": c.index,
                "text": piece,
                "logprobs": c.token_logprobs[i] if c.token_logprobs else None,
                "finish_reason": None,
            }
            if i == 0 and c.prompt_logprobs is not None:
                d["prompt_logprobs"] = c.prompt_logprobs
            parts.append(d)
        parts.append({"index": c.index, "text": "", "logprobs": None, "finish_reason": c.finish_reason})
    return _chunks(head, parts, usage if include_usage else None)


def chat_events(name: str, choices: list[Choice], usage: dict[str, int], include_usage: bool) -> list[bytes]:
    """The events of a streamed ``/v1/chat/completions`` answer."""
    head = _head("chatcmpl", "chat.completion.chunk", name)
    parts: list[dict[str, Any]] = []
    for c in choices:
        parts.append(
            {
                "index": c.index,
                "delta": {"role": "assistant", "content": ""},
                "logprobs": None,
                "finish_reason": None,
            }
        )
        for i, piece in enumerate(c.pieces):
            lp = c.token_logprobs[i] if c.token_logprobs else None
            parts.append(
                {"index": c.index, "delta": {"content": piece}, "logprobs": lp, "finish_reason": None}
            )
        parts.append({"index": c.index, "delta": {}, "logprobs": None, "finish_reason": c.finish_reason})
    return _chunks(head, parts, usage if include_usage else None)


def sse_response(events: list[bytes]) -> StreamingResponse:
    """The events as a ``text/event-stream`` response."""

    async def send() -> AsyncIterator[bytes]:
        for e in events:
            yield e

    return StreamingResponse(
        send(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
