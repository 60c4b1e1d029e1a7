"""``lmleak serve``: an OpenAI-compatible HTTP server for any model lmleak loads.

It lets a team (and CI) test the HTTP backend (:mod:`lmleak.models.http`) end to end, and it serves
all four access tiers (:mod:`lmleak.serve.tiers`); ``tier=`` restricts it to one, as a deployed API
would be. Routes: ``GET /v1/models`` (the card carries ``max_model_len`` and, under ``lmleak``, the
tokenizer's BOS / EOS / pad ids and vocabulary size), ``GET /v1/models/{id}``, ``POST
/v1/completions`` (:mod:`~lmleak.serve.completions`), ``POST /v1/chat/completions``
(:mod:`~lmleak.serve.chat`), vLLM's ``POST /tokenize`` / ``POST /detokenize``, and ``GET /health``.

It is meant to be as safe to leave running as llama.cpp's server: loopback by default, an optional
API key, a ``Host`` allow-list and JSON-only bodies (:mod:`~lmleak.serve.guard`); a body-size
limit, prompts held to the context before they are tokenised, capped ``n`` / ``logprobs`` /
``max_tokens`` (:mod:`~lmleak.serve.limits`); every field checked, with OpenAI-shaped 4xx errors
(:mod:`~lmleak.serve.errors`, :mod:`~lmleak.serve.fields`); one model thread with a deadline per
request and a clean stop on the first Ctrl-C / SIGTERM (:mod:`~lmleak.serve.worker`,
:mod:`~lmleak.serve.server`); a read deadline on headers and body, caps on open connections and on
requests in progress, memory handed back after aborted uploads (:mod:`~lmleak.serve.shed`);
``stream: true`` as server-sent events (:mod:`~lmleak.serve.stream`).

The modules, bottom up: ``errors`` → ``fields`` → ``limits`` → ``guard`` | ``tiers`` | ``scoring``
| ``worker`` | ``shed`` → ``decode`` → ``prompts`` → ``served`` → ``sampling`` → ``completions`` | ``chat`` →
``stream`` → ``app`` → ``server``; ``settings`` (what the CLI reads, no web framework) below them all.
"""

from lmleak._lazy import lazy_getattr

# lazy (PEP 562): the CLI imports lmleak.serve.settings to build its options, and these names pull
# in fastapi and uvicorn
_HOME = {
    "build_app": ".app",
    "Access": ".guard",
    "ServeLimits": ".settings",
    "ServeSettings": ".settings",
    "Scoring": ".scoring",
    "ServerThread": ".server",
    "serve": ".server",
    "serving": ".server",
    "ECHO_MAX_K": ".tiers",
    "MAX_LOGPROBS": ".tiers",
    "TIERS": ".tiers",
}


__getattr__ = lazy_getattr(__name__, _HOME)


__all__ = [
    "ECHO_MAX_K",
    "MAX_LOGPROBS",
    "TIERS",
    "Access",
    "Scoring",
    "ServeLimits",
    "ServeSettings",
    "ServerThread",
    "build_app",
    "serve",
    "serving",
]
