"""Decoding as the OpenAI API defines its outputs: stop sequences, ``finish_reason``, token counts and
character offsets.

- ``finish_reason`` is ``"stop"`` when a stop sequence or the end-of-sequence token ended the
  text, ``"length"`` when ``max_tokens`` did;
- a stop sequence is not part of the returned text (the text ends where it begins), and decoding
  stops at the token that completed it;
- ``text_offset[i]`` is the character position in the choice's ``text`` where token ``i``'s text
  begins: ``text[offset[i]:offset[i + 1]]`` is token ``i``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lmleak.serve.scoring import Scoring


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to the earliest stop sequence, and whether one was found.

    >>> cut_at_stop("call 555 0100 now", ["0100", " now"])
    ('call 555 ', True)
    >>> cut_at_stop("hello", ["x"])
    ('hello', False)
    """
    found = [i for i in (text.find(s) for s in stops) if i >= 0]
    return (text[: min(found)], True) if found else (text, False)


def finish_reason(stopped: bool) -> str:
    """OpenAI's ``finish_reason``: ``stop`` (a stop sequence or EOS ended it) or ``length``."""
    return "stop" if stopped else "length"


def text_offsets(decode: Callable[[Sequence[int]], str], ids: Sequence[int]) -> list[int]:
    """Where each token's text begins in ``decode(ids)``, in characters: offset ``i`` is the length
    of the text decoded from the tokens before token ``i`` (the definition).

    Computed in one pass: the text each token adds is read in the context of the token before it
    (``decode([a, b])`` minus ``decode([a])``, which keeps the space a word tokenizer or SentencePiece
    puts before a word) and accepted only where the whole text continues with exactly that text;
    anywhere else (a character split over two tokens, a decoder that rewrites earlier text) the
    prefix is decoded whole.

    >>> words = ["", "my", "name"]
    >>> text_offsets(lambda ids: " ".join(words[i] for i in ids), [1, 2, 1])
    [0, 2, 7]
    """
    ids = list(ids)
    full = decode(ids) if ids else ""
    out, pos = [], 0
    for i in range(len(ids)):
        out.append(pos)
        if i == 0:
            piece: str | None = decode(ids[:1])
        else:
            before, both = decode(ids[i - 1 : i]), decode(ids[i - 1 : i + 1])
            piece = both[len(before) :] if both.startswith(before) else None
        if piece is not None and "\ufffd" not in piece and full.startswith(piece, pos):
            pos += len(piece)
        else:
            pos = len(decode(ids[: i + 1]))
    return out


@dataclass
class Greedy:
    """A greedy continuation: the tokens kept, each one's logprob and top-n, and how it ended."""

    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    tops: list[list[tuple[int, float]]] = field(default_factory=list)
    text: str = ""
    stopped: bool = False  # a stop sequence or EOS ended it
    generated: int = 0  # tokens generated (counted in usage), the one that completed a stop included


def greedy(
    scoring: Scoring,
    tok: Any,
    row: list[int],
    steps: int,
    n: int,
    *,
    stops: Sequence[str] = (),
    first: dict[str, np.ndarray] | None = None,
    check: Callable[[], None] = lambda: None,
) -> Greedy:
    """Greedy continuation of ``row`` for up to ``steps`` tokens with each step's top ``n``: one forward
    pass per step (the first reuses ``first``, the prompt's own pass, when given). A prompt longer
    than the context slides: the newest ``max_length`` tokens (after the BOS where the model scores
    only after it) are scored."""
    model = scoring.model
    max_length, eos = model.max_length, tok.eos_id
    out, cur = Greedy(), list(row)
    for step in range(steps):
        check()
        if step == 0 and first is not None:
            s = first
        else:
            window = cur if len(cur) <= max_length else _window(cur, max_length, tok.bos_id, scoring.fast)
            s = scoring.rows([window], n, check)[0]
        t, lp = int(s["next_ids"][0]), float(s["next_lps"][0])
        out.generated += 1
        if eos is not None and t == eos:
            out.stopped = True
            break
        out.ids.append(t)
        out.logprobs.append(lp)
        out.tops.append(
            [(int(a), float(b)) for a, b in zip(s["next_ids"][:n], s["next_lps"][:n], strict=True)]
        )
        cur.append(t)
        if stops:
            text, hit = cut_at_stop(tok.decode(out.ids), stops)
            if hit:
                out.stopped, out.text = True, text
                _keep_tokens_of(out, tok, text)
                return out
    out.text = tok.decode(out.ids)
    return out


def _window(cur: list[int], max_length: int, bos: int, fast: bool) -> list[int]:
    return cur[-max_length:] if fast else [bos, *cur[-(max_length - 1) :]]


def _keep_tokens_of(out: Greedy, tok: Any, text: str) -> None:
    """Drop the tokens that lie wholly inside the cut-off stop sequence (their text is not returned)."""
    offsets = text_offsets(tok.decode, out.ids)
    keep = sum(1 for o in offsets if o < len(text)) if text else 0
    del out.ids[keep:], out.logprobs[keep:], out.tops[keep:]


@dataclass
class Sampled:
    """One text from the model's own ``generate`` (sampling or beam search), cut at a stop sequence."""

    text: str
    stopped: bool
    generated: int


def from_generate(tok: Any, text: str, max_tokens: int, stops: Sequence[str]) -> Sampled:
    """How a ``generate`` output ended: the model's ``generate`` returns text (EOS removed), so the
    tokens it took are counted by tokenising that text again; fewer than ``max_tokens`` means an
    EOS ended it. (Re-tokenising can merge two generated tokens into one; the count is then one low,
    and a text that ran to ``max_tokens`` would read as ``stop``. The greedy path with logprobs
    counts the tokens themselves.)"""
    generated = len(tok.encode(text)) if text else 0
    cut, hit = cut_at_stop(text, stops)
    return Sampled(cut, hit or generated < max_tokens, generated)


@dataclass
class Choice:
    """One choice of an answer, before it is written as JSON or as stream chunks.

    ``pieces`` split ``text`` at token boundaries (``"".join(pieces) == text``) and, when
    ``token_logprobs`` is set, align one to one with its entries, so a stream can send each token
    with its own log-probabilities."""

    index: int
    text: str
    finish_reason: str
    generated: int
    pieces: list[str]
    logprobs: Any = None  # the answer's whole logprobs block (completions) or content list (chat)
    token_logprobs: list[Any] | None = None  # per piece: what a stream chunk carries as its logprobs
    prompt_logprobs: list[Any] | None = None


def split_at(text: str, offsets: Sequence[int]) -> list[str]:
    """``text`` cut at ``offsets`` (one piece per offset; the last runs to the end).

    >>> split_at("my name", [0, 2])
    ['my', ' name']
    """
    if not offsets:
        return [text] if text else []
    ends = [*offsets[1:], len(text)]
    return [text[a:b] for a, b in zip(offsets, ends, strict=True)]
