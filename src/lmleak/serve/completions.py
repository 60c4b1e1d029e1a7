"""``POST /v1/completions``: plain generation, or greedy decoding with the prompt's and the choice's
log-probabilities.

- vLLM's ``prompt_logprobs: N`` answers ``choices[i].prompt_logprobs = [null, {token_id: {logprob,
  rank, decoded_token}}, ...]`` (the prompt token and the top N at each position, ranks 1-based as
  vLLM counts them);
- legacy ``echo: true`` with ``logprobs: k`` answers ``tokens``, ``token_logprobs``,
  ``top_logprobs`` and ``text_offset`` over the prompt and the continuation
  (``return_tokens_as_token_ids`` writes tokens as ``token_id:N``);
- without either it is the model's own ``generate`` (:mod:`lmleak.serve.sampling`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lmleak.serve.decode import Choice, Greedy, finish_reason, greedy, split_at, text_offsets
from lmleak.serve.fields import boolean, optional_integer
from lmleak.serve.limits import vocab_size
from lmleak.serve.sampling import Sampling, generate, greedy_only, parse_sampling
from lmleak.serve.served import Served
from lmleak.serve.tiers import check_completion_grants


@dataclass(frozen=True)
class CompletionRequest:
    """The checked fields of a ``/v1/completions`` body (the prompt is tokenised separately)."""

    prompt: Any
    max_tokens: int
    sampling: Sampling
    logprobs: int | None = None
    prompt_logprobs: int | None = None
    echo: bool = False
    as_ids: bool = False

    @property
    def scored(self) -> bool:
        """Whether the answer carries log-probabilities or the echoed prompt (greedy decoding)."""
        return self.logprobs is not None or self.prompt_logprobs is not None or self.echo


def parse_completion(served: Served, body: dict[str, Any]) -> CompletionRequest:
    """Every field of ``body`` checked against its type, its range, the tier and the limits."""
    served.check_model(body)
    limit = served.top_limit
    why = f" (tier {served.tier})" if served.tier == "echo" else " (lmleak serve --max-logprobs)"
    prompt_n = optional_integer(body, "prompt_logprobs", lo=0, hi=served.limits.max_logprobs, why=why)
    k = optional_integer(body, "logprobs", lo=0, hi=limit, why=why)
    echo = boolean(body, "echo")
    check_completion_grants(served.tier, prompt_n, k, echo)
    req = CompletionRequest(
        prompt=body.get("prompt"),
        max_tokens=served.max_tokens(body, "max_tokens"),
        sampling=parse_sampling(body, served.limits, vocab_size(served.tok)),
        logprobs=k,
        prompt_logprobs=prompt_n,
        echo=echo,
        as_ids=boolean(body, "return_tokens_as_token_ids"),
    )
    if req.scored:
        greedy_only(body, req.sampling)
    return req


def complete(
    served: Served, req: CompletionRequest, rows: list[list[int]], check: Callable[[], None]
) -> list[Choice]:
    """The choices of a completion (runs on the model's worker thread)."""
    if not req.scored:
        texts = [served.prompt_text(r) for r in rows]
        n = req.sampling.n
        return [
            Choice(i * n + j, o.text, finish_reason(o.stopped), o.generated, [o.text] if o.text else [])
            for i, outs in enumerate(
                generate(served.model, served.tok, texts, req.sampling, req.max_tokens, check)
            )
            for j, o in enumerate(outs)
        ]
    k = req.logprobs or 0
    scored = served.scoring.rows(rows, max(req.prompt_logprobs or 0, k), check)
    choices = []
    for i, (row, s) in enumerate(zip(rows, scored, strict=True)):
        g = (
            greedy(
                served.scoring,
                served.tok,
                row,
                req.max_tokens,
                max(k, 1),
                stops=req.sampling.stops,
                first=s,
                check=check,
            )
            if req.max_tokens
            else Greedy()
        )
        choices.append(_scored_choice(served, req, i, row, s, g))
    return choices


def _scored_choice(
    served: Served, req: CompletionRequest, i: int, row: list[int], s: dict[str, np.ndarray], g: Greedy
) -> Choice:
    """One greedy choice with the log-probabilities asked for, its text split token by token."""
    decode, bos = served.tok.decode, served.tok.bos_id
    if req.echo:
        prompt_text = served.prompt_text(row)
        lead = [0] if row[0] == bos else []
        body = row[1:] if row[0] == bos else row
        offsets = (
            lead + text_offsets(decode, body) + [len(prompt_text) + o for o in text_offsets(decode, g.ids)]
        )
        text = prompt_text + g.text
    else:
        offsets, text = text_offsets(decode, g.ids), g.text
    c = Choice(i, text, finish_reason(g.stopped), g.generated, split_at(text, offsets))
    if req.prompt_logprobs is not None:
        c.prompt_logprobs = _prompt_logprobs(served, row, s, req.prompt_logprobs)
    if req.logprobs is not None:
        c.logprobs = _legacy_logprobs(served, row, s, g, req, offsets)
        c.token_logprobs = [
            {key: [c.logprobs[key][j]] for key in ("tokens", "token_logprobs", "top_logprobs", "text_offset")}
            for j in range(len(offsets))
        ]
    return c


def _prompt_logprobs(served: Served, row: list[int], s: dict[str, np.ndarray], pn: int) -> list[Any]:
    """vLLM's ``prompt_logprobs``: None for the first token, then per position the top ``pn`` and
    the actual token, each with its logprob, rank and decoded text."""
    ti, tv = s["top_ids"][:, :pn].tolist(), s["top_lps"][:, :pn].tolist()
    ranks, lps = s["rank"].tolist(), s["logprob"].tolist()
    piece = served.piece
    plp: list[Any] = [None]
    for p in range(len(row) - 1):
        d = {
            str(t): {"logprob": v, "rank": r + 1, "decoded_token": piece(t)}
            for r, (t, v) in enumerate(zip(ti[p], tv[p], strict=True))
        }
        d[str(row[p + 1])] = {"logprob": lps[p], "rank": ranks[p], "decoded_token": piece(row[p + 1])}
        plp.append(d)
    return plp


def _legacy_logprobs(
    served: Served,
    row: list[int],
    s: dict[str, np.ndarray],
    g: Greedy,
    req: CompletionRequest,
    offsets: list[int],
) -> dict[str, Any]:
    """The legacy ``logprobs`` block: the echoed prompt's tokens (with ``echo``) then the generated
    ones, each with its logprob, its top ``k`` and where its text begins in the choice's text."""
    k, as_ids = int(req.logprobs or 0), req.as_ids
    name = served.token_text
    toks: list[str] = []
    tlps: list[Any] = []
    tops: list[Any] = []
    if req.echo:
        toks = [name(t, as_ids) for t in row]
        tlps = [None, *(float(v) for v in s["logprob"])]
        tops = [
            None,
            *(
                {name(t, as_ids): float(v) for t, v in zip(ti[:k], tv[:k], strict=True)}
                for ti, tv in zip(s["top_ids"], s["top_lps"], strict=True)
            ),
        ]
    toks += [name(t, as_ids) for t in g.ids]
    tlps += g.logprobs
    tops += [{name(t, as_ids): v for t, v in top[:k]} for top in g.tops]
    return {"tokens": toks, "token_logprobs": tlps, "top_logprobs": tops, "text_offset": offsets}


def completion_body(served: Served, choices: list[Choice], rows: list[list[int]]) -> dict[str, Any]:
    """The ``text_completion`` answer."""
    out = []
    for c in choices:
        d: dict[str, Any] = {
            "index": c.index,
            "text": c.text,
            "logprobs": c.logprobs,
            "finish_reason": c.finish_reason,
        }
        if c.prompt_logprobs is not None:
            d["prompt_logprobs"] = c.prompt_logprobs
        out.append(d)
    return {
        "id": f"cmpl-{time.time_ns()}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": served.name,
        "choices": out,
        "usage": served.usage(rows, sum(c.generated for c in choices)),
    }
