"""Answers of an OpenAI-compatible server, checked before anything is scored, cached or reported.

A server can be broken, misconfigured or not the model it claims to be. lmleak reads its answers
through the functions here, which refuse what no model can answer:

- a log-probability that is not a number, is NaN or is above 0 (``LOGPROB_SLACK`` allows float
  rounding; ``-inf``, a token the model gives probability 0, is a valid answer);
- a rank that is not an integer >= 1;
- a length that does not match the request: as many choices as prompts, ``prompt_logprobs`` with one
  entry per prompt token, an echo covering every prompt token with the prompt's own tokens, token
  ids that are integers >= 0;
- a top-1 log-probability below the prompt token's own (the most likely token is at least as likely).

Each refusal is a :class:`BadAnswer` (a :class:`~lmleak.errors.ModelError`: one line, exit 2) that
names the server and the field, e.g.::

    http://127.0.0.1:8000/v1#smol: impossible answer: choices[0].prompt_logprobs[3]['17'].logprob = 5.0
    (a log-probability is <= 0); the server is broken or is not serving a language model's scores

:class:`~lmleak.models.http.HTTPClient` parses every answer before it writes it to its cache, so a
bad answer is never kept and never poisons a rerun.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lmleak.errors import ModelError

#: How far above 0 a log-probability may be (float32 rounding of a probability of 1).
LOGPROB_SLACK = 1e-5

Rows = list[tuple[np.ndarray, np.ndarray, np.ndarray]]


class BadAnswer(ModelError):
    """An answer no model can give (see the module docstring)."""


def bad(server: str, field: str, value: Any, why: str) -> BadAnswer:
    """The error for one impossible field of an answer.

    Example:
        >>> print(bad("http://h/v1#m", "choices[0].x", 5.0, "a log-probability is <= 0"))
        http://h/v1#m: impossible answer: choices[0].x = 5.0 (a log-probability is <= 0); the server is broken or is not serving a language model's scores
    """
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return BadAnswer(
        f"{server}: impossible answer: {field} = {shown} ({why}); the server is broken or is not "
        "serving a language model's scores"
    )


def logprob(value: Any, server: str, field: str) -> float:
    """A log-probability: a number <= 0 (up to :data:`LOGPROB_SLACK`), not NaN.

    Example:
        >>> logprob(-1.5, "s", "f"), logprob(float("-inf"), "s", "f")
        (-1.5, -inf)
        >>> logprob(5, "s", "f")
        Traceback (most recent call last):
        ...
        lmleak.models.http_answers.BadAnswer: s: impossible answer: f = 5 (a log-probability is <= 0); ...
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad(server, field, value, "a log-probability is a number")
    x = float(value)
    if math.isnan(x):
        raise bad(server, field, value, "a log-probability is a number, not NaN")
    if x > LOGPROB_SLACK:
        raise bad(server, field, value, "a log-probability is <= 0")
    return min(x, 0.0)


def rank(value: Any, server: str, field: str) -> int:
    """A rank: an integer >= 1 (1: the most likely token).

    Example:
        >>> rank(3, "s", "f"), rank(2.0, "s", "f")
        (3, 2)
        >>> rank(0, "s", "f")
        Traceback (most recent call last):
        ...
        lmleak.models.http_answers.BadAnswer: s: impossible answer: f = 0 (a rank is an integer >= 1); ...
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not float(value).is_integer():
        raise bad(server, field, value, "a rank is an integer >= 1")
    if value < 1:
        raise bad(server, field, value, "a rank is an integer >= 1")
    return int(value)


def token_ids(values: Any, server: str, field: str) -> list[int]:
    """A list of token ids (integers >= 0).

    Example:
        >>> token_ids([1, 2], "s", "tokens")
        [1, 2]
    """
    if not isinstance(values, list):
        raise bad(server, field, values, "a list of token ids")
    out = []
    for i, t in enumerate(values):
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            raise bad(server, f"{field}[{i}]", t, "a token id is an integer >= 0")
        out.append(t)
    return out


def choices(answer: Any, n: int, server: str) -> list[dict[str, Any]]:
    """The ``choices`` of a completions answer, in index order; exactly ``n`` of them.

    Example:
        >>> [c["text"] for c in choices({"choices": [{"index": 1, "text": "b"}, {"index": 0, "text": "a"}]}, 2, "s")]
        ['a', 'b']
    """
    got = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(got, list) or not all(isinstance(c, dict) for c in got):
        raise bad(server, "choices", got, "a list of choices")
    if len(got) != n:
        raise bad(server, "choices", f"{len(got)} choices", f"{n} were asked for")
    ordered = sorted(got, key=lambda c: c.get("index", 0) if isinstance(c.get("index", 0), int) else -1)
    if [c.get("index", i) for i, c in enumerate(ordered)] != list(range(n)):
        raise bad(server, "choices[].index", [c.get("index") for c in got], f"the indices 0..{n - 1}")
    return ordered


def prompt_logprob_rows(rows: Sequence[Sequence[int]], answer: Any, server: str) -> Rows:
    """(ranks, logprobs, top-1 logprobs) of every prompt token after the first, from vLLM's
    ``prompt_logprobs`` answer (``[null, {"<id>": {"logprob", "rank"}}, ...]`` per prompt)."""
    out = []
    for c, (row, choice) in enumerate(zip(rows, choices(answer, len(rows), server), strict=True)):
        entries = choice.get("prompt_logprobs")
        field = f"choices[{c}].prompt_logprobs"
        if not isinstance(entries, list) or len(entries) != len(row):
            shown = f"{len(entries)} entries" if isinstance(entries, list) else entries
            raise bad(server, field, shown, f"one entry per prompt token: {len(row)}")
        n = len(row) - 1
        r, lp, t = np.empty(n, np.int32), np.empty(n, np.float32), np.empty(n, np.float32)
        for i in range(n):
            d = entries[i + 1]
            where = f"{field}[{i + 1}]"
            if not isinstance(d, dict) or not d:
                raise bad(server, where, d, "the prompt token's logprob and rank")
            true = d.get(str(row[i + 1]))
            if not isinstance(true, dict):
                raise bad(server, where, sorted(d)[:5], f"it lacks the prompt token {row[i + 1]}")
            key = f"{where}[{str(row[i + 1])!r}]"
            r[i] = rank(true.get("rank"), server, f"{key}.rank")
            lp[i] = logprob(true.get("logprob"), server, f"{key}.logprob")
            t[i] = max(
                logprob(v.get("logprob") if isinstance(v, dict) else v, server, f"{where}[{k!r}].logprob")
                for k, v in d.items()
            )
        out.append((r, lp, t))
    return out


def token_id(key: str, encode: Callable[[str], list[int]]) -> int | None:
    """A token of a logprobs answer as an id: ``token_id:N`` (``return_tokens_as_token_ids``), a bare id
    (vLLM's prompt_logprobs keys), or a decoded string that encodes to exactly one token.

    Example:
        >>> token_id("token_id:42", lambda s: []), token_id("7", lambda s: []), token_id("ab", lambda s: [1, 2])
        (42, 7, None)
    """
    if key.startswith("token_id:") and key[9:].isdigit():
        return int(key[9:])
    if key.isdigit():
        return int(key)
    ids = encode(key)
    return ids[0] if len(ids) == 1 else None


def top_entries(top: Any, server: str, field: str, encode: Callable[[str], list[int]]) -> dict[int, float]:
    """A ``top_logprobs`` entry (token -> logprob) as token id -> checked logprob."""
    if top is None:
        return {}
    if not isinstance(top, dict):
        raise bad(server, field, top, "a map of tokens to log-probabilities")
    out: dict[int, float] = {}
    for key, v in top.items():
        tid = token_id(str(key), encode)
        x = logprob(v, server, f"{field}[{key!r}]")
        if tid is not None:
            out[tid] = x
    return out


def echo_rows(
    rows: Sequence[Sequence[int]], answer: Any, server: str, encode: Callable[[str], list[int]], k: int
) -> Rows:
    """(ranks up to ``k``, ``k + 1`` outside the top k; logprobs; top-1 logprobs) of every prompt token
    after the first, from a legacy ``echo`` + ``logprobs`` answer."""
    out = []
    for c, (row, choice) in enumerate(zip(rows, choices(answer, len(rows), server), strict=True)):
        field = f"choices[{c}].logprobs"
        info = choice.get("logprobs")
        if not isinstance(info, dict):
            raise bad(server, field, info, "the echoed prompt's log-probabilities")
        tops = _at_least(info.get("top_logprobs"), len(row), server, f"{field}.top_logprobs")
        token_lps = _at_least(info.get("token_logprobs"), len(row), server, f"{field}.token_logprobs")
        _check_echoed_tokens(row, info.get("tokens"), server, f"{field}.tokens")
        n = len(row) - 1
        r, lp, t = np.full(n, k + 1, np.int32), np.empty(n, np.float32), np.full(n, np.nan, np.float32)
        for i in range(n):
            true_lp = logprob(token_lps[i + 1], server, f"{field}.token_logprobs[{i + 1}]")
            top = top_entries(tops[i + 1], server, f"{field}.top_logprobs[{i + 1}]", encode)
            lp[i] = true_lp
            if top:
                t[i] = max(top.values())
                if len(top) >= k and t[i] < true_lp - LOGPROB_SLACK:
                    raise bad(
                        server, f"{field}.top_logprobs[{i + 1}]", float(t[i]),
                        f"the top-1 log-probability is at least the prompt token's own, {true_lp}",
                    )  # fmt: skip
            if row[i + 1] in top:  # the ledger's rank: 1 + how many are strictly more likely
                r[i] = 1 + sum(v > true_lp for v in top.values())
        out.append((r, lp, t))
    return out


def _at_least(values: Any, n: int, server: str, field: str) -> list[Any]:
    """A list of at least ``n`` entries (one per prompt token)."""
    if not isinstance(values, list) or len(values) < n:
        shown = f"{len(values)} entries" if isinstance(values, list) else values
        raise bad(server, field, shown, f"at least one per prompt token: {n}")
    return values


def _check_echoed_tokens(row: Sequence[int], tokens: Any, server: str, field: str) -> None:
    """The echoed tokens, where the server gives them as ids (``token_id:N``), are the prompt's."""
    if not isinstance(tokens, list):
        return
    for i, (want, got) in enumerate(zip(row[1:], tokens[1 : len(row)], strict=False), start=1):
        if isinstance(got, str) and got.startswith("token_id:") and got != f"token_id:{want}":
            raise bad(server, f"{field}[{i}]", got, f"the echoed prompt token is token_id:{want}")


def top_k_rows(
    answer: Any, n: int, k: int, server: str, encode: Callable[[str], list[int]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The top ``k`` (ids, logprobs) of the first generated position of each of ``n`` prompts, by
    logprob then id (the ledger's order)."""
    res = []
    for c, choice in enumerate(choices(answer, n, server)):
        info = choice.get("logprobs")
        tops = info.get("top_logprobs") if isinstance(info, dict) else None
        if not isinstance(tops, list) or not tops:
            raise bad(
                server, f"choices[{c}].logprobs.top_logprobs", tops, "the next token's top log-probabilities"
            )
        top = top_entries(tops[0], server, f"choices[{c}].logprobs.top_logprobs[0]", encode)
        pairs = sorted(top.items(), key=lambda p: (-p[1], p[0]))[:k]
        res.append(
            (
                np.array([p[0] for p in pairs], dtype=np.int64),
                np.array([p[1] for p in pairs], dtype=np.float32),
            )
        )
    return res


def texts(answer: Any, n: int, server: str, *, chat: bool = False) -> list[str]:
    """The generated texts of ``n`` choices (``message.content`` on the chat API)."""
    out = []
    for c, choice in enumerate(choices(answer, n, server)):
        if chat:
            msg = choice.get("message")
            value = msg.get("content") if isinstance(msg, dict) else None
            field = f"choices[{c}].message.content"
        else:
            value, field = choice.get("text"), f"choices[{c}].text"
        if not isinstance(value, str):
            raise bad(server, field, value, "the generated text")
        out.append(value)
    return out


def chat_logprobs(answer: Any, server: str) -> list[float]:
    """The log-probabilities a chat answer gives for its generated tokens and their top alternatives,
    in answer order (the fingerprint probe of a ``chat`` server)."""
    (choice,) = choices(answer, 1, server)
    info = choice.get("logprobs")
    content = info.get("content") if isinstance(info, dict) else None
    if not isinstance(content, list):
        raise bad(server, "choices[0].logprobs.content", content, "the generated tokens' log-probabilities")
    out = []
    for i, tok in enumerate(content):
        field = f"choices[0].logprobs.content[{i}]"
        if not isinstance(tok, dict):
            raise bad(server, field, tok, "a generated token's log-probability")
        out.append(logprob(tok.get("logprob"), server, f"{field}.logprob"))
        for j, alt in enumerate(tok.get("top_logprobs") or []):
            value = alt.get("logprob") if isinstance(alt, dict) else alt
            out.append(logprob(value, server, f"{field}.top_logprobs[{j}].logprob"))
    return out
