"""What ``lmleak serve`` is told (issue 34): :class:`ServeLimits`, the bounds on one request and on
the server's load, and :class:`ServeSettings`, those plus where and what it serves. ``lmleak serve``'s
options are generated from the fields (:func:`lmleak.cli.options.takes`) and
:func:`lmleak.serve.server.serve` reads the object; this module imports no web framework, so the CLI
can import it to build its options.

Example:
    >>> ServeSettings(tier="echo", max_n=4).max_n
    4
    >>> ServeSettings(port=70000)
    Traceback (most recent call last):
    ...
    lmleak.errors.ConfigError: field 'port': must be a whole number >= 0 and <= 65535, got 70000
"""

from __future__ import annotations

from dataclasses import dataclass

from lmleak.errors import ConfigError
from lmleak.settings import Settings, setting

MIB = 1 << 20
TIERS = ("prompt_logprobs", "echo", "chat", "text")


@dataclass(frozen=True)
class ServeLimits(Settings):
    """The per-request bounds (``--max-body --max-n --max-logprobs --max-prompts --deadline
    --max-tokens``) and the server's load bounds (``--read-timeout --max-connections --max-inflight``)
    (see :mod:`lmleak.serve.limits`)."""

    max_body_bytes: int = setting(
        MIB, help="Largest request body in bytes (413 above it).", option="--max-body", ge=1
    )
    max_n: int = setting(128, help="Largest n (and best_of) per request.", ge=1)  # the OpenAI API's own
    max_logprobs: int = setting(  # vLLM's default max_logprobs
        20, help="Most log-probabilities per position (the echo tier: 5).", ge=1
    )
    max_prompts: int = setting(256, help="Most prompts per request.", ge=1)
    deadline_s: float = setting(  # lmleak's HTTP client waits 300 s for an answer
        300.0, help="Seconds a request may take, waiting included (503 after).", option="--deadline", gt=0
    )
    max_tokens: int | None = setting(  # None: the model's context (see limits.max_new_tokens)
        None, help="Most tokens one request may generate (default: the context).", ge=1
    )
    read_timeout_s: float = setting(
        30.0,
        help="Seconds a request's headers and body may take to arrive (408 and closed after).",
        option="--read-timeout",
        gt=0,
    )
    max_connections: int = setting(512, help="Most open connections (429 beyond, at once).", ge=1)
    max_inflight: int = setting(
        64,
        help="Most requests in progress, body reading included (429 beyond; /health is never refused).",
        ge=1,
    )


@dataclass(frozen=True)
class ServeSettings(ServeLimits):
    """:class:`ServeLimits` and where and what ``lmleak serve`` serves; the API key is never in
    its ``repr``."""

    port: int = setting(8000, help="TCP port (0: any free port).", short="-p", ge=0, le=65535)
    host: str = setting(
        "127.0.0.1",
        help="Address to listen on (loopback by default; set --api-key before opening it to a network).",
    )
    tier: str = setting(
        "prompt_logprobs",
        help=f"What to serve: {', '.join(TIERS)} (prompt_logprobs: everything; "
        "the others restrict it, as a deployed API would).",
        choices=TIERS,
    )
    name: str | None = setting(
        None, help="The model name clients give (URL#NAME); default: the model's name."
    )
    dtype: str | None = setting(None, help="float32, bfloat16 or float16 (default: the model's).")
    batch_tokens: int | None = setting(None, help="Padded tokens per forward pass (bounds memory).", ge=1)
    allowed_hosts: tuple[str, ...] = setting(
        (),
        help="Also answer for this Host header: NAME (on the served port), NAME:PORT, or * for any "
        "(repeatable; localhost, 127.0.0.1 and [::1] always work).",
        option="--allowed-host",
    )
    # the command reads it itself: it also comes from LMLEAK_SERVE_KEY
    api_key: str | None = setting(None, help="The key clients must send.", compare=False, cli=False)

    def check(self) -> None:
        check_key(self.api_key)


def check_key(api_key: str | None) -> None:
    """Refuse an empty or non-ASCII-printable API key before the model is loaded."""
    if api_key is not None and (
        not api_key or not api_key.isascii() or not api_key.isprintable() or " " in api_key
    ):
        raise ConfigError(
            "the API key must be a non-empty string of printable ASCII without spaces",
            field="--api-key",
            hint="e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'",
        )
