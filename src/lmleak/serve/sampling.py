"""The sampling options both generation routes share, and the plain (text-only) path through the
model's own ``generate``: sampling with ``temperature > 0``, beam search with vLLM's
``use_beam_search`` + ``best_of``, greedy decoding (``temperature: 0``) otherwise."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lmleak.serve.decode import Sampled, from_generate
from lmleak.serve.errors import refuse
from lmleak.serve.fields import (
    boolean,
    defaults_only,
    integer,
    number,
    optional_integer,
    stops,
    stream_options,
)
from lmleak.serve.limits import ServeLimits

# options of the OpenAI API this server does not implement: refused unless they hold their neutral value
NEUTRAL = {"top_p": 1, "presence_penalty": 0, "frequency_penalty": 0, "logit_bias": {}, "suffix": ""}
GENERATE_CHUNK = 8  # prompts per call of the model's generate (the deadline is checked between calls)


@dataclass(frozen=True)
class Sampling:
    """The checked sampling fields of a request."""

    n: int = 1
    best_of: int = 1
    temperature: float = 1.0
    top_k: int | None = None
    seed: int | None = None
    beam: bool = False
    stops: tuple[str, ...] = ()
    stream: bool = False
    include_usage: bool = False

    @property
    def greedy(self) -> bool:
        """One greedy answer: what a request with log-probabilities must ask for."""
        return self.n == 1 and self.temperature == 0 and not self.beam


def parse_sampling(body: dict[str, Any], limits: ServeLimits, vocab_size: int | None) -> Sampling:
    """The sampling fields of ``body``, each checked (400 naming the field otherwise)."""
    defaults_only(body, NEUTRAL)
    n = integer(body, "n", default=1, lo=1, hi=limits.max_n, why=" (lmleak serve --max-n)")
    beam = boolean(body, "use_beam_search")
    best_of = integer(body, "best_of", default=n, lo=1, hi=limits.max_n, why=" (lmleak serve --max-n)")
    if best_of < n:
        refuse(400, "best_of must be at least n", param="best_of", code="out_of_range")
    if best_of > n and not beam:  # never silently ignored
        refuse(
            400,
            "best_of > n needs use_beam_search: true (this server does not rank sampled candidates)",
            param="best_of",
            code="unsupported_parameter",
        )
    top_k = integer(body, "top_k", default=-1, lo=-1, hi=vocab_size if vocab_size is not None else 2**31 - 1)
    stream = boolean(body, "stream")
    return Sampling(
        n=n,
        best_of=best_of,
        temperature=number(body, "temperature", default=1.0, lo=0.0, hi=2.0),
        top_k=None if top_k in (-1, 0) else top_k,
        seed=optional_integer(body, "seed", lo=0, hi=2**63 - 1),
        beam=beam,
        stops=stops(body),
        stream=stream,
        include_usage=stream_options(body, stream),
    )


def greedy_only(body: dict[str, Any], sampling: Sampling) -> None:
    """Refuse sampling options where the server answers with logprobs (it decodes greedily)."""
    temperature = body.get("temperature")
    if sampling.n != 1 or sampling.beam or temperature not in (None, 0, 0.0):
        refuse(
            400,
            "with logprobs this server decodes greedily: use n=1 and temperature=0",
            param="n" if sampling.n != 1 else "temperature",
            code="unsupported_parameter",
        )


def generate(
    model: Any, tok: Any, texts: list[str], sampling: Sampling, max_tokens: int, check: Callable[[], None]
) -> list[list[Sampled]]:
    """``sampling.n`` continuations of each text from the model's own ``generate``, in chunks of
    :data:`GENERATE_CHUNK` prompts (``check`` between them), each cut at the stop sequences."""
    if max_tokens == 0:
        return [[Sampled("", False, 0) for _ in range(sampling.n)] for _ in texts]
    do_sample = sampling.temperature > 0 and not sampling.beam
    beams = sampling.best_of if sampling.beam else 1
    out: list[list[Sampled]] = []
    for start in range(0, len(texts), GENERATE_CHUNK):
        check()
        outs = model.generate(
            texts[start : start + GENERATE_CHUNK],
            max_new_tokens=max_tokens,
            num_beams=max(beams, sampling.n if not do_sample else 1),
            do_sample=do_sample,
            num_return_sequences=sampling.n,
            temperature=sampling.temperature or 1.0,
            top_k=sampling.top_k,
            seed=sampling.seed,
        )
        out += [[from_generate(tok, t, max_tokens, sampling.stops) for t in o] for o in outs]
    return out
