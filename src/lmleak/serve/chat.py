"""``POST /v1/chat/completions``: the messages' contents as one prompt (:mod:`lmleak.serve.prompts`);
greedy decoding with ``logprobs: true`` (``top_logprobs`` up to the tier's limit), the model's own
``generate`` otherwise."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lmleak.serve.decode import Choice, finish_reason, greedy, split_at, text_offsets
from lmleak.serve.errors import refuse
from lmleak.serve.fields import boolean, optional_integer
from lmleak.serve.limits import vocab_size
from lmleak.serve.sampling import Sampling, generate, greedy_only, parse_sampling
from lmleak.serve.served import Served
from lmleak.serve.tiers import check_chat_grants


@dataclass(frozen=True)
class ChatRequest:
    """The checked fields of a ``/v1/chat/completions`` body."""

    text: str
    max_tokens: int
    sampling: Sampling
    logprobs: bool = False
    top_logprobs: int = 0


def parse_chat(served: Served, body: dict[str, Any]) -> ChatRequest:
    """Every field of ``body`` checked (the messages' text is tokenised separately)."""
    served.check_model(body)
    text = served.prompts.chat_text(body.get("messages"))
    want = boolean(body, "logprobs")
    check_chat_grants(served.tier, want)
    why = f" (tier {served.tier})" if served.tier == "echo" else " (lmleak serve --max-logprobs)"
    k = optional_integer(body, "top_logprobs", lo=0, hi=served.top_limit, why=why)
    if k is not None and not want:
        refuse(400, "top_logprobs needs logprobs: true", param="top_logprobs", code="invalid_value")
    req = ChatRequest(
        text=text,
        max_tokens=served.max_tokens(body, "max_completion_tokens", "max_tokens"),
        sampling=parse_sampling(body, served.limits, vocab_size(served.tok)),
        logprobs=want,
        top_logprobs=k or 0,
    )
    if want:
        greedy_only(body, req.sampling)
    return req


def chat(served: Served, req: ChatRequest, row: list[int], check: Callable[[], None]) -> list[Choice]:
    """The choices of a chat completion (runs on the model's worker thread)."""
    if not req.logprobs:
        outs = generate(served.model, served.tok, [req.text], req.sampling, req.max_tokens, check)[0]
        return [
            Choice(j, o.text, finish_reason(o.stopped), o.generated, [o.text] if o.text else [])
            for j, o in enumerate(outs)
        ]
    k, decode = req.top_logprobs, served.tok.decode
    g = greedy(
        served.scoring, served.tok, row, req.max_tokens, max(k, 1), stops=req.sampling.stops, check=check
    )
    content = [
        {
            "token": decode([t]),
            "logprob": lp,
            "bytes": list(decode([t]).encode()),
            "top_logprobs": [
                {"token": decode([a]), "logprob": b, "bytes": list(decode([a]).encode())} for a, b in top[:k]
            ],
        }
        for t, lp, top in zip(g.ids, g.logprobs, g.tops, strict=True)
    ]
    pieces = split_at(g.text, text_offsets(decode, g.ids))
    return [
        Choice(
            0,
            g.text,
            finish_reason(g.stopped),
            g.generated,
            pieces,
            logprobs={"content": content},
            token_logprobs=[{"content": [e]} for e in content],
        )
    ]


def chat_body(served: Served, choices: list[Choice], row: list[int]) -> dict[str, Any]:
    """The ``chat.completion`` answer."""
    return {
        "id": f"chatcmpl-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served.name,
        "choices": [
            {
                "index": c.index,
                "message": {"role": "assistant", "content": c.text},
                "logprobs": c.logprobs,
                "finish_reason": c.finish_reason,
            }
            for c in choices
        ],
        "usage": served.usage([row], sum(c.generated for c in choices)),
    }
