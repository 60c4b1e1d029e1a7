"""What one request may ask of ``lmleak serve``, and the checks that hold it there before any work.

- the body is read up to ``max_body_bytes`` (1 MiB by default) and refused with 413 as soon as it is
  longer — from ``Content-Length`` before a byte is read, or while reading a chunked body — so a
  38 MB prompt never reaches the JSON parser;
- a prompt longer than :func:`char_limit` characters (the context times the longest token's text)
  cannot fit the context (see :func:`max_token_chars`), and is refused before the tokenizer sees it;
- ``n`` (and beam width) at most ``max_n``, log-probabilities at most ``max_logprobs`` per position
  (5 on the ``echo`` tier, :mod:`lmleak.serve.tiers`), at most ``max_prompts`` prompts per request,
  ``max_tokens`` at most the context (:func:`max_new_tokens`);
- every request ends within ``deadline_s`` seconds (503 after it; :mod:`lmleak.serve.worker`);
- its headers and body arrive within ``read_timeout_s`` (408 after it), at most ``max_connections``
  are open and ``max_inflight`` in progress (429 beyond; :mod:`lmleak.serve.shed`).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from lmleak.serve.errors import APIError, refuse
from lmleak.serve.fields import bad_text
from lmleak.serve.settings import ServeLimits

MIN_MAX_TOKENS = 256  # a model with a shorter context still generates this many, sliding its window
PARSE_INLINE_BYTES = 64 * 1024  # larger bodies are parsed in a worker thread, off the event loop


def max_new_tokens(limits: ServeLimits, context: int) -> int:
    """The most tokens one request may generate: ``--max-tokens``, by default the model's context —
    but at least :data:`MIN_MAX_TOKENS`, so a tiny test model (context 16) still answers a probe's
    budget, sliding its window as in-process generation does.

    >>> max_new_tokens(ServeLimits(), 2048), max_new_tokens(ServeLimits(), 16), max_new_tokens(ServeLimits(max_tokens=64), 2048)
    (2048, 256, 64)
    """
    return limits.max_tokens if limits.max_tokens is not None else max(context, MIN_MAX_TOKENS)


def too_large(limit: int) -> APIError:
    """The refusal of a body over ``limit`` bytes (413)."""
    return APIError(
        413,
        f"the request body is larger than this server accepts ({limit:,} bytes; lmleak serve --max-body)",
        code="request_too_large",
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refused with 413 once it passes ``limit`` bytes (checked while reading, so an
    endless or oversized body is never held in memory)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def parse_object(raw: bytes) -> dict[str, Any]:
    """A JSON object from ``raw`` (400 when it is not valid JSON or not an object, and 400 naming the
    field when a string in it is not valid Unicode: a lone surrogate, or a byte that is not UTF-8)."""
    try:
        encoding = json.detect_encoding(raw)
        # a byte that is not UTF-8 becomes a lone surrogate, found below with the field it is in
        body = json.loads(
            raw.decode(encoding, "surrogateescape" if encoding.startswith("utf-8") else "strict")
        )
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        refuse(400, "the request body is not valid JSON", code="invalid_json")
    if not isinstance(body, dict):
        refuse(400, "the request body must be a JSON object", code="invalid_json")
    bad = bad_text(body)
    if bad is not None:
        field, what, at = bad
        where = f"a key of {field}" if what == "key" and field else "a key" if what == "key" else field
        refuse(
            400,
            f"{where} is not valid text: a lone surrogate or a byte that is not UTF-8 at character {at}; "
            "send text as UTF-8 (escapes \\uD800-\\uDFFF only as pairs)",
            param=field,
            code="invalid_text",
        )
    return body


async def read_json(request: Request, limits: ServeLimits) -> dict[str, Any]:
    """:func:`read_body` then :func:`parse_object` (in a worker thread for large bodies)."""
    raw = await read_body(request, limits.max_body_bytes)
    if len(raw) > PARSE_INLINE_BYTES:
        return await run_in_threadpool(parse_object, raw)
    return parse_object(raw)


def max_token_chars(tok: Any) -> int:
    """The longest text any one token decodes to (at least 1).

    When decoding gives the text back (byte-level BPE, SentencePiece with byte fallback), every
    character of a prompt comes from some token, so a prompt of ``c`` characters needs at least
    ``c / max_token_chars`` tokens: one longer than ``context × max_token_chars`` cannot fit, and is
    refused before it is tokenised. (A tokenizer that maps a whole unknown word to one ``<unk>``, or
    drops runs of spaces, could fit such a prompt; the refusal says how to shorten it.) Computed once
    per served model."""
    vocab = vocab_size(tok)
    if vocab is None:
        return 0  # unknown: no bound (the body limit still holds)
    rows = [[i] for i in range(vocab)]
    many = getattr(tok, "decode_many", None)
    try:
        texts = many(rows) if many is not None else [tok.decode(r) for r in rows]
    except (IndexError, KeyError, ValueError, TypeError):  # a vocabulary with holes: one at a time
        texts = []
        for r in rows:
            try:
                texts.append(tok.decode(r))
            except (IndexError, KeyError, ValueError, TypeError):
                continue
    return max([1, *(len(t) for t in texts)])


def char_limit(max_length: int, longest_token: int) -> int:
    """The most characters a prompt of ``max_length`` tokens can have (see :func:`max_token_chars`;
    0: no bound, for a tokenizer whose vocabulary size is unknown).

    >>> char_limit(2048, 16), char_limit(2048, 0)
    (32768, 0)
    """
    return max_length * longest_token if longest_token > 0 else 0


def vocab_size(tok: Any) -> int | None:
    """The tokenizer's vocabulary size, or None when it does not say (a remote tokenizer of vLLM)."""
    size = getattr(tok, "vocab_size", None)
    return int(size) if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None
