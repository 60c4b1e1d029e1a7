"""The spec of a model behind an HTTP API and its options: ``http://HOST:PORT/v1?OPTION=VALUE#MODEL``.

:func:`parse_spec` reads a spec into ``(base_url, model, HTTPOptions)``, every numeric option checked
against :data:`OPTION_RANGES`; :func:`use_http_options` sets defaults for the specs loaded inside a
block (the CLI's ``--max-requests``, ``--tokenizer``, ``--cache-dir``), the spec's own query winning.
The API key comes from :data:`API_KEY_ENVS` only (:func:`api_key`), never from the spec. What the
options mean: :mod:`lmleak.models.http` and docs/http.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from lmleak.errors import ModelError

TIERS = ("prompt_logprobs", "echo", "chat", "text")
CHAT_MAX_K = 20  # the chat API's cap on top_logprobs
API_KEY_ENVS = ("LMLEAK_API_KEY", "OPENAI_API_KEY")
#: The shortest window a scoring request can have: the start token and one scored token.
MIN_MAX_LENGTH = 2


def is_http_spec(spec: Any) -> bool:
    """Whether a model spec names an HTTP endpoint.

    Example:
        >>> is_http_spec("http://127.0.0.1:8000/v1#smol"), is_http_spec("models/smol")
        (True, False)
    """
    return isinstance(spec, str) and spec.startswith(("http://", "https://"))


@dataclass(frozen=True)
class HTTPOptions:
    """How to talk to the server. Every field can be set in the spec's query (``?concurrency=4``)."""

    tier: str | None = None  # None: detect
    tokenizer: str | None = None  # a local tokenizer (model folder); None: the server's /tokenize
    concurrency: int = 4  # requests in flight
    batch: int = 8  # prompts per request
    retries: int = 4  # tries after the first on 429 / 5xx / timeouts
    backoff: float = 0.5  # seconds before the first retry; doubles each time
    timeout: float = 300.0  # seconds for a whole request (connect, send, every read), not per read
    connect_timeout: float = 10.0  # seconds to connect
    max_response_mb: float = 64.0  # larger answers are refused
    max_requests: int | None = None
    cache: str | None = None  # cache dir; None: inside the run being written; "off": no cache
    max_length: int | None = None  # longest input (BOS included); default: the server's max_model_len
    top_n: int = CHAT_MAX_K  # how many next-token log-probs next_logprobs asks for


#: (lowest, highest) accepted value of each numeric option (None: unbounded); checked by parse_spec.
OPTION_RANGES: dict[str, tuple[float, float | None]] = {
    "concurrency": (1, 256),
    "batch": (1, None),
    "retries": (0, 100),
    "backoff": (0, 3600),
    "timeout": (0.001, None),
    "connect_timeout": (0.001, None),
    "max_response_mb": (0.001, None),
    "max_requests": (0, None),
    "max_length": (MIN_MAX_LENGTH, None),
    "top_n": (1, None),
}


_DEFAULTS: contextvars.ContextVar[tuple[tuple[str, Any], ...]] = contextvars.ContextVar(
    "lmleak_http_defaults", default=()
)


@contextlib.contextmanager
def use_http_options(**defaults: Any) -> Iterator[None]:
    """Defaults for HTTP models loaded inside the block (the CLI's ``--max-requests``, ``--tokenizer``);
    the spec's own query still wins. ``None`` values are ignored."""
    merged = {**dict(_DEFAULTS.get()), **{k: v for k, v in defaults.items() if v is not None}}
    token = _DEFAULTS.set(tuple(merged.items()))
    try:
        yield
    finally:
        _DEFAULTS.reset(token)


def parse_spec(spec: str) -> tuple[str, str, HTTPOptions]:
    """``(base_url, model, options)`` of an HTTP spec.

    Example:
        >>> base, model, opts = parse_spec("http://127.0.0.1:8000/v1?tier=echo&batch=4#smol")
        >>> base, model, opts.tier, opts.batch
        ('http://127.0.0.1:8000/v1', 'smol', 'echo', 4)
    """
    url, _, model = spec.partition("#")
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        raise ModelError(
            f"{parts.hostname}: credentials in the model URL are refused (they would be written "
            "into the run); put the API key in LMLEAK_API_KEY or OPENAI_API_KEY"
        )
    if not model:
        raise ModelError(
            f"{spec!r} names no model; write URL#MODEL, e.g. http://127.0.0.1:8000/v1#my-model "
            "(GET URL/models lists the names the server serves)"
        )
    names = {f.name: f for f in fields(HTTPOptions)}
    kw: dict[str, Any] = {k: v for k, v in _DEFAULTS.get() if k in names}
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if key not in names:
            raise ModelError(f"{spec!r}: unknown option {key!r} in the query; use one of {', '.join(names)}")
        kw[key] = value
    for key, value in list(kw.items()):
        kw[key] = _option_value(spec, key, value, str(names[key].type))
    opts = HTTPOptions(**kw)
    if opts.tier is not None and opts.tier not in TIERS:
        raise ModelError(
            f"{spec!r}: unknown tier {opts.tier!r}; use one of {', '.join(TIERS)} (or leave it out to detect)"
        )
    if opts.cache == "":
        raise ModelError(f"{spec!r}: option cache= is empty; give a folder, or cache=off")
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    return base, model, opts


def _option_value(spec: str, key: str, value: Any, kind: str) -> Any:
    """One query option as its type, checked against :data:`OPTION_RANGES` (finite, in range).

    Example:
        >>> _option_value("s", "batch", "4", "int")
        4
        >>> _option_value("s", "timeout", "nan", "float")
        Traceback (most recent call last):
        ...
        lmleak.errors.ModelError: 's': option timeout='nan' must be a finite number >= 0.001
    """
    if value is None or ("int" not in kind and "float" not in kind):
        return value
    lo, hi = OPTION_RANGES.get(key, (-math.inf, None))
    want = f"{'an integer' if 'int' in kind else 'a finite number'} >= {lo:g}" + (
        f" and <= {hi:g}" if hi is not None else ""
    )
    try:
        number = int(value) if "int" in kind else float(value)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"{spec!r}: option {key}={value!r} must be {want}") from None
    if not math.isfinite(number) or number < lo or (hi is not None and number > hi):
        raise ModelError(f"{spec!r}: option {key}={value!r} must be {want}")
    return number


def api_key() -> str | None:
    """The API key from the first of :data:`API_KEY_ENVS` that is set (None: no key)."""
    for env in API_KEY_ENVS:
        if os.environ.get(env):
            return os.environ[env]
    return None
