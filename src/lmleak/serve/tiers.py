"""The four access tiers ``lmleak serve`` can impersonate, and what each grants on every route.

- ``prompt_logprobs``: everything — vLLM's ``prompt_logprobs``, ``echo`` + ``logprobs``, chat logprobs;
- ``echo``: legacy ``echo`` + ``logprobs <= 5``, and chat ``top_logprobs <= 5`` (the same limit on
  every route: an echo API never shows more than the top 5 anywhere);
- ``chat``: log-probabilities on ``/v1/chat/completions`` only (``top_logprobs`` up to the server's
  ``--max-logprobs``); ``/v1/completions`` answers text;
- ``text``: text only, no log-probabilities anywhere.
"""

from __future__ import annotations

from typing import Any

from lmleak.errors import ConfigError
from lmleak.models.base import Capability
from lmleak.serve.errors import refuse
from lmleak.serve.settings import TIERS, ServeLimits

ECHO_MAX_K = 5  # the legacy OpenAI completions API's own limit on logprobs
MAX_LOGPROBS = ServeLimits().max_logprobs  # vLLM's default (lmleak serve --max-logprobs)


def check_tier(model: Any, tier: str) -> None:
    """Refuse an unknown tier, or one that needs scores from a model that gives none."""
    if tier not in TIERS:
        raise ConfigError(f"unknown tier {tier!r}", field="--tier", hint=f"use one of {', '.join(TIERS)}")
    caps: frozenset[Any] = getattr(model, "capabilities", frozenset())
    if tier != "text" and Capability.SCORE not in caps:
        raise ConfigError(
            f"tier {tier!r} needs a model with scores; {model.name} grants "
            f"{', '.join(sorted(c.value for c in caps))}",
            field="--tier",
            hint="use --tier text",
        )


def logprobs_limit(tier: str, max_logprobs: int) -> int:
    """The most log-probabilities per position this tier shows, on any route.

    >>> logprobs_limit("echo", 20), logprobs_limit("prompt_logprobs", 20)
    (5, 20)
    """
    return min(ECHO_MAX_K, max_logprobs) if tier == "echo" else max_logprobs


def check_completion_grants(tier: str, prompt_n: int | None, k: int | None, echo: bool) -> None:
    """Refuse on ``/v1/completions`` what this tier does not grant (the counts are range-checked
    by the request parser, against :func:`logprobs_limit`)."""
    if prompt_n is not None and tier != "prompt_logprobs":
        refuse(
            400,
            f"prompt_logprobs is not supported by this server (tier {tier})",
            param="prompt_logprobs",
            code="not_supported_by_tier",
        )
    if (k is not None or echo) and tier in ("chat", "text"):
        refuse(
            400,
            f"logprobs and echo are not supported on /v1/completions by this server (tier {tier})",
            param="logprobs" if k is not None else "echo",
            code="not_supported_by_tier",
        )


def check_chat_grants(tier: str, logprobs: bool) -> None:
    """Refuse chat log-probabilities on the ``text`` tier."""
    if logprobs and tier == "text":
        refuse(
            400,
            "logprobs are not supported by this server (tier text)",
            param="logprobs",
            code="not_supported_by_tier",
        )
