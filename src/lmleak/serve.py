"""``lmleak serve``: an OpenAI-compatible HTTP server for any model lmleak loads.

It lets a team (and CI) test the HTTP backend (:mod:`lmleak.models.http`) end to end, and it serves
all four access tiers; ``tier=`` restricts it to one, as a deployed API would be:

- ``prompt_logprobs`` (default; everything): ``POST /v1/completions`` with vLLM's ``prompt_logprobs:
  N`` answers ``choices[i].prompt_logprobs = [null, {token_id: {logprob, rank, decoded_token}}, ...]``
  (the prompt token and the top N at each position, ranks 1-based as vLLM counts them);
- ``echo``: legacy ``echo: true`` with ``logprobs <= 5`` (``tokens``, ``token_logprobs``,
  ``top_logprobs``, ``text_offset``; ``return_tokens_as_token_ids`` writes tokens as ``token_id:N``);
- ``chat``: ``POST /v1/chat/completions`` with ``logprobs: true, top_logprobs <= 20``;
- ``text``: text only (no log-probabilities anywhere).

Plus ``GET /v1/models`` (the card carries ``max_model_len`` and, under ``lmleak``, the tokenizer's
BOS / EOS / pad ids and vocabulary size) and vLLM's ``POST /tokenize`` / ``POST /detokenize``.

Text prompts get the model's BOS id prepended (lmleak's convention: every scored sequence starts
with it); token-id prompts are scored as given (a later sliding window starts mid-document), except
for a model without a torch forward pass, whose prompts must start with the BOS id. Chat messages are joined with newlines,
no chat template (the served models are base models). Model calls are serialised by a lock: a
request's prompts are batched by the model itself.
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from lmleak.errors import ConfigError
from lmleak.models.base import Capability
from lmleak.models.loading import load_model

TIERS = ("prompt_logprobs", "echo", "chat", "text")
ECHO_MAX_K = 5
MAX_LOGPROBS = 20  # vLLM's default max_logprobs


def _json(obj: Any) -> Response:
    """JSON without FastAPI's per-field encoder (which costs more than the model on long prompts)."""
    return Response(json.dumps(obj, separators=(",", ":")), media_type="application/json")


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _Refused(400, "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise _Refused(400, "the request body must be a JSON object")
    return body


class _Refused(Exception):
    def __init__(self, status: int, message: str, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


class Scoring:
    """Per-position log-probabilities of token-id rows, from one forward pass per batch where the model
    allows it (any :class:`~lmleak.models.torch_causal.TorchCausalLM`), else through the protocol."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.fast = all(hasattr(model, a) for a in ("_forward", "_pad", "_batches"))

    def rows(self, rows: Sequence[Sequence[int]], n: int) -> list[dict[str, np.ndarray]]:
        """For each row (starting with BOS), arrays over its positions 1..len-1 (``rank``, ``logprob``,
        ``top_ids`` (P, n), ``top_lps`` (P, n)) and the next-token prediction after the row
        (``next_ids``, ``next_lps``: top ``max(n, 1)``)."""
        return self._fast(rows, n) if self.fast else self._slow(rows, n)

    def _fast(self, rows: Sequence[Sequence[int]], n: int) -> list[dict[str, np.ndarray]]:
        import torch  # the model is a torch model on this path

        m = self.model
        out: list[dict[str, np.ndarray]] = [{} for _ in rows]
        with torch.inference_mode():
            for batch in m._batches([len(r) for r in rows]):
                ids, mask = m._pad([list(rows[i]) for i in batch])
                logp = torch.log_softmax(m._forward(ids, mask).float(), dim=-1)
                targets = ids[:, 1:].to(logp.device)
                head = logp[:, :-1]
                true_lp = head.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
                rank = (head > true_lp.unsqueeze(-1)).sum(-1) + 1
                top_v, top_i = torch.topk(logp, max(n, 1), dim=-1)
                for j, i in enumerate(batch):
                    length = len(rows[i])
                    out[i] = {
                        "rank": rank[j, : length - 1].cpu().numpy(),
                        "logprob": true_lp[j, : length - 1].cpu().numpy(),
                        "top_ids": top_i[j, : length - 1, :n].cpu().numpy(),
                        "top_lps": top_v[j, : length - 1, :n].cpu().numpy(),
                        "next_ids": top_i[j, length - 1].cpu().numpy(),
                        "next_lps": top_v[j, length - 1].cpu().numpy(),
                    }
        return out

    def _slow(self, rows: Sequence[Sequence[int]], n: int) -> list[dict[str, np.ndarray]]:
        m = self.model
        stats = m.token_stats([list(r[1:]) for r in rows])
        out = []
        for r, st in zip(rows, stats, strict=True):
            prefixes = [list(r[1:i]) for i in range(1, len(r) + 1)]
            preds = m.top_k(prefixes, max(n, 1))
            out.append(
                {
                    "rank": st.ranks,
                    "logprob": st.logprobs,
                    "top_ids": np.array([p[0][:n] for p in preds[:-1]]).reshape(len(r) - 1, n),
                    "top_lps": np.array([p[1][:n] for p in preds[:-1]]).reshape(len(r) - 1, n),
                    "next_ids": preds[-1][0],
                    "next_lps": preds[-1][1],
                }
            )
        return out


def _refuse(status: int, message: str, kind: str = "BadRequestError") -> NoReturn:
    raise _Refused(status, message, kind)


PROMPT_SHAPES = "prompt must be a string, a list of strings, a list of token ids or a list of such lists"


class _Endpoints:
    """What the routes of :func:`build_app` compute, one method per route (plain dicts in and out).

    One lock serialises the model: each request runs in a worker thread (see :func:`build_app`).
    """

    def __init__(self, model: Any, tier: str, served: str) -> None:
        self.model, self.tier, self.served = model, tier, served
        self.tok = model.tokenizer
        self.lock = threading.Lock()
        self.scoring = Scoring(model)
        # one token decoded alone (vLLM's ``decoded_token``), cached: prompts repeat tokens
        self.piece: Any = functools.lru_cache(maxsize=1 << 16)(lambda i: self.tok.decode([i]))

    # ------------------------------------------------------------------ shared pieces
    def check_model(self, body: dict[str, Any]) -> None:
        """Refuse a request naming another model than the one served (404, as vLLM)."""
        if body.get("model") not in (None, self.served):
            _refuse(
                404, f"The model `{body.get('model')}` does not exist. Served: {self.served}", "NotFoundError"
            )

    def token_text(self, i: int, as_ids: bool) -> str:
        """A token as ``logprobs`` names it: its text, or ``token_id:N`` when asked for ids."""
        return f"token_id:{int(i)}" if as_ids else self.piece(int(i))

    def as_rows(self, prompt: Any) -> tuple[list[list[int]], bool]:
        """Prompts as BOS-led id rows; True when they came as text."""
        tok = self.tok
        if isinstance(prompt, str):
            prompt = [prompt]
        if isinstance(prompt, list) and prompt and all(isinstance(x, int) for x in prompt):
            prompt = [prompt]
        if not isinstance(prompt, list) or not prompt:
            _refuse(400, PROMPT_SHAPES)
        rows, text = [], False
        for p in prompt:
            if isinstance(p, str):
                rows.append([tok.bos_id, *tok.encode(p)])
                text = True
            elif isinstance(p, list) and all(isinstance(x, int) for x in p):
                if not p or (p[0] != tok.bos_id and not self.scoring.fast):
                    _refuse(
                        400,
                        f"a token-id prompt must start with the BOS id {tok.bos_id} (this model scores "
                        "after its BOS only)",
                    )
                rows.append(list(p))
            else:
                _refuse(400, PROMPT_SHAPES)
        for r in rows:
            if len(r) > self.model.max_length:
                _refuse(
                    400,
                    f"This model's maximum context length is {self.model.max_length} tokens; the prompt has {len(r)}",
                )
        return rows, text

    @staticmethod
    def usage(rows: Sequence[Sequence[int]], completion: int) -> dict[str, int]:
        """The OpenAI ``usage`` block."""
        p = sum(len(r) for r in rows)
        return {"prompt_tokens": p, "completion_tokens": completion, "total_tokens": p + completion}

    def greedy_with_logprobs(
        self, row: list[int], steps: int, n: int, first: dict[str, np.ndarray] | None = None
    ) -> tuple[list[int], list[float], list[list[tuple[int, float]]]]:
        """Greedy continuation of ``row``, each step's chosen logprob and top-n (one pass per step; the
        first step reuses ``first``, the prompt's own pass, when given)."""
        cur, ids, lps, tops = list(row), [], [], []
        for step in range(steps):
            s = (
                first
                if step == 0 and first is not None
                else self.scoring.rows([cur[-self.model.max_length :]], n)[0]
            )
            t, lp = int(s["next_ids"][0]), float(s["next_lps"][0])
            if self.tok.eos_id is not None and t == self.tok.eos_id:
                break
            ids.append(t)
            lps.append(lp)
            tops.append(
                [(int(a), float(b)) for a, b in zip(s["next_ids"][:n], s["next_lps"][:n], strict=True)]
            )
            cur.append(t)
        return ids, lps, tops

    def generate(self, texts: list[str], body: dict[str, Any]) -> list[list[str]]:
        """The model's own generate with the request's sampling options."""
        n = int(body.get("n") or 1)
        temperature = float(body.get("temperature", 1.0) if body.get("temperature") is not None else 1.0)
        do_sample = temperature > 0 and not body.get("use_beam_search")
        beams = int(body.get("best_of") or n) if body.get("use_beam_search") else 1
        return self.model.generate(
            texts,
            max_new_tokens=int(body.get("max_tokens") or 16),
            num_beams=max(beams, n if not do_sample else 1),
            do_sample=do_sample,
            num_return_sequences=n,
            temperature=temperature or 1.0,
            top_k=body.get("top_k") if body.get("top_k") not in (None, -1, 0) else None,
            seed=body.get("seed"),
        )

    @staticmethod
    def greedy_only(body: dict[str, Any]) -> None:
        """Refuse sampling options where the server answers with logprobs (it decodes greedily)."""
        if int(body.get("n") or 1) != 1 or body.get("temperature") not in (None, 0, 0.0):
            _refuse(400, "with logprobs this server decodes greedily: use n=1 and temperature=0")

    # ------------------------------------------------------------------ GET /v1/models, tokenizer routes
    def models(self) -> dict[str, Any]:
        """The model card, with lmleak's tokenizer facts and the tier."""
        tok, max_length = self.tok, self.model.max_length
        lmleak = {
            "bos_id": tok.bos_id,
            "eos_id": tok.eos_id,
            "pad_id": tok.pad_id,
            "vocab_size": tok.vocab_size,
            "max_length": max_length,
            "tier": self.tier,
        }
        card = {"id": self.served, "object": "model", "created": 0, "owned_by": "lmleak"}
        return {"object": "list", "data": [{**card, "max_model_len": max_length, "lmleak": lmleak}]}

    def tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        """``/tokenize``: ids of the prompt (BOS first unless ``add_special_tokens`` is false)."""
        self.check_model(body)
        ids = self.tok.encode(str(body.get("prompt", "")))
        if body.get("add_special_tokens", True):
            ids = [self.tok.bos_id, *ids]
        return {"tokens": ids, "count": len(ids), "max_model_len": self.model.max_length}

    def detokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        """``/detokenize``: the text of the ids."""
        self.check_model(body)
        return {"prompt": self.tok.decode([int(t) for t in body.get("tokens", [])])}

    # ------------------------------------------------------------------ POST /v1/completions
    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        """``/v1/completions``: plain generation, or greedy decoding with prompt/choice logprobs."""
        self.check_model(body)
        prompt_n, k, echo = body.get("prompt_logprobs"), body.get("logprobs"), bool(body.get("echo"))
        self._check_completion_options(prompt_n, k, echo)
        rows, _ = self.as_rows(body.get("prompt"))
        max_tokens: Any = body.get("max_tokens")
        steps = int(max_tokens if max_tokens is not None else 16)
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        with self.lock:
            if prompt_n is None and k is None and not echo:  # plain text: the model's own generate
                choices = self._plain_choices(rows, body)
            else:
                self.greedy_only(body)
                scored = self.scoring.rows(rows, max(int(prompt_n or 0), int(k or 0)))
                choices = [
                    self._scored_choice(i, row, s, steps, prompt_n, k, echo, as_ids)
                    for i, (row, s) in enumerate(zip(rows, scored, strict=True))
                ]
            return {
                "id": f"cmpl-{time.time_ns()}",
                "object": "text_completion",
                "created": int(time.time()),
                "model": self.served,
                "choices": choices,
                "usage": self.usage(rows, 0),
            }

    def _check_completion_options(self, prompt_n: Any, k: Any, echo: bool) -> None:
        """Refuse what this tier does not grant, and out-of-range logprob counts."""
        tier = self.tier
        if prompt_n is not None and tier != "prompt_logprobs":
            _refuse(400, f"prompt_logprobs is not supported by this server (tier {tier})")
        if (k is not None or echo) and tier in ("chat", "text"):
            _refuse(
                400, f"logprobs and echo are not supported on /v1/completions by this server (tier {tier})"
            )
        limit = ECHO_MAX_K if tier == "echo" else MAX_LOGPROBS
        if k is not None and not 0 <= int(k) <= limit:
            _refuse(400, f"logprobs must be between 0 and {limit}")
        if prompt_n is not None and not 0 <= int(prompt_n) <= MAX_LOGPROBS:
            _refuse(400, f"prompt_logprobs must be between 0 and {MAX_LOGPROBS}")

    def _plain_choices(self, rows: list[list[int]], body: dict[str, Any]) -> list[dict[str, Any]]:
        """Choices of a request without logprobs: ``n`` generations per prompt."""
        tok = self.tok
        texts = [tok.decode(r[1:] if r[0] == tok.bos_id else r) for r in rows]
        outs = self.generate(texts, body)
        n = len(outs[0]) if outs else 1
        return [
            {"index": i * n + j, "text": t, "logprobs": None, "finish_reason": "length"}
            for i, o in enumerate(outs)
            for j, t in enumerate(o)
        ]

    def _scored_choice(
        self,
        i: int,
        row: list[int],
        s: dict[str, np.ndarray],
        steps: int,
        prompt_n: Any,
        k: Any,
        echo: bool,
        as_ids: bool,
    ) -> dict[str, Any]:
        """One choice decoded greedily from the prompt's scores ``s``, with the logprobs asked for."""
        gen, gen_lps, gen_tops = (
            self.greedy_with_logprobs(row, steps, max(int(k or 0), 1), s) if steps else ([], [], [])
        )
        c: dict[str, Any] = {"index": i, "text": self.tok.decode(gen), "finish_reason": "length"}
        if prompt_n is not None:
            c["prompt_logprobs"] = self._prompt_logprobs(row, s, int(prompt_n))
        if k is not None:
            c["logprobs"] = self._choice_logprobs(row, s, gen, gen_lps, gen_tops, int(k), echo, as_ids)
            if echo:
                c["text"] = self.tok.decode(row[1:]) + c["text"]
        else:
            c["logprobs"] = None
        return c

    def _prompt_logprobs(self, row: list[int], s: dict[str, np.ndarray], pn: int) -> list[Any]:
        """vLLM's ``prompt_logprobs``: None for the first token, then per position the top ``pn`` and
        the actual token, each with its logprob, rank and decoded text."""
        ti, tv = s["top_ids"][:, :pn].tolist(), s["top_lps"][:, :pn].tolist()
        ranks, lps = s["rank"].tolist(), s["logprob"].tolist()
        plp: list[Any] = [None]
        for p in range(len(row) - 1):
            d = {
                str(t): {"logprob": v, "rank": r + 1, "decoded_token": self.piece(t)}
                for r, (t, v) in enumerate(zip(ti[p], tv[p], strict=True))
            }
            d[str(row[p + 1])] = {
                "logprob": lps[p],
                "rank": ranks[p],
                "decoded_token": self.piece(row[p + 1]),
            }
            plp.append(d)
        return plp

    def _choice_logprobs(
        self,
        row: list[int],
        s: dict[str, np.ndarray],
        gen: list[int],
        gen_lps: list[float],
        gen_tops: list[list[tuple[int, float]]],
        k: int,
        echo: bool,
        as_ids: bool,
    ) -> dict[str, Any]:
        """The legacy ``logprobs`` block: the echoed prompt's tokens (with ``echo``) then the generated
        ones, each with its logprob and top ``k``."""
        toks: list[str] = []
        tlps: list[Any] = []
        tops: list[Any] = []
        if echo:
            toks = [self.token_text(t, as_ids) for t in row]
            tlps = [None, *(float(v) for v in s["logprob"])]
            tops = [
                None,
                *(
                    {self.token_text(t, as_ids): float(v) for t, v in zip(ti[:k], tv[:k], strict=True)}
                    for ti, tv in zip(s["top_ids"], s["top_lps"], strict=True)
                ),
            ]
        toks += [self.token_text(t, as_ids) for t in gen]
        tlps += gen_lps
        tops += [{self.token_text(t, as_ids): v for t, v in top[:k]} for top in gen_tops]
        return {
            "tokens": toks,
            "token_logprobs": tlps,
            "top_logprobs": tops,
            "text_offset": list(range(len(toks))),
        }

    # ------------------------------------------------------------------ POST /v1/chat/completions
    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """``/v1/chat/completions``: the messages' contents as one prompt; greedy with ``logprobs``."""
        self.check_model(body)
        messages: Any = body.get("messages")
        if not isinstance(messages, list) or not messages:
            _refuse(400, "messages must be a non-empty list")
        text = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        want = bool(body.get("logprobs"))
        k = int(body.get("top_logprobs") or 0)
        if want and self.tier == "text":
            _refuse(400, "logprobs are not supported by this server (tier text)")
        if not 0 <= k <= MAX_LOGPROBS:
            _refuse(400, f"top_logprobs must be between 0 and {MAX_LOGPROBS}")
        row = [self.tok.bos_id, *self.tok.encode(text)]
        steps = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        with self.lock:
            if want:
                self.greedy_only(body)
                choices = [self._chat_scored_choice(row, steps, k)]
            else:
                outs = self.generate([text], {**body, "max_tokens": steps})[0]
                choices = [
                    {
                        "index": j,
                        "message": {"role": "assistant", "content": t},
                        "logprobs": None,
                        "finish_reason": "length",
                    }
                    for j, t in enumerate(outs)
                ]
        return {
            "id": f"chatcmpl-{time.time_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served,
            "choices": choices,
            "usage": self.usage([row], 0),
        }

    def _chat_scored_choice(self, row: list[int], steps: int, k: int) -> dict[str, Any]:
        """The one greedy chat choice with each token's logprob and top ``k`` (chat's ``content`` list)."""
        decode = self.tok.decode
        gen, lps, tops = self.greedy_with_logprobs(row, steps, max(k, 1))
        content = [
            {
                "token": decode([t]),
                "logprob": lp,
                "bytes": list(decode([t]).encode()),
                "top_logprobs": [
                    {"token": decode([a]), "logprob": b, "bytes": list(decode([a]).encode())}
                    for a, b in top[:k]
                ],
            }
            for t, lp, top in zip(gen, lps, tops, strict=True)
        ]
        return {
            "index": 0,
            "message": {"role": "assistant", "content": decode(gen)},
            "logprobs": {"content": content},
            "finish_reason": "length",
        }


def build_app(model: Any, *, tier: str = "prompt_logprobs", name: str | None = None) -> FastAPI:
    """The FastAPI app serving ``model`` at ``tier`` (see the module docstring)."""
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
    served = name or model.name
    ends = _Endpoints(model, tier, served)
    app = FastAPI(title=f"lmleak serve: {served}", docs_url=None, redoc_url=None, openapi_url=None)

    @app.exception_handler(_Refused)
    async def _refused(request: Request, e: _Refused) -> JSONResponse:
        return JSONResponse(
            {"error": {"message": e.message, "type": e.kind, "code": e.status}}, status_code=e.status
        )

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return ends.models()

    @app.post("/tokenize")
    async def tokenize(request: Request) -> dict[str, Any]:
        return ends.tokenize(await _body(request))

    @app.post("/detokenize")
    async def detokenize(request: Request) -> dict[str, Any]:
        return ends.detokenize(await _body(request))

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        body = await _body(request)
        # the model and the JSON encoding run in a worker thread: the event loop keeps accepting requests
        return await run_in_threadpool(lambda: _json(ends.completions(body)))

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        body = await _body(request)
        return await run_in_threadpool(lambda: _json(ends.chat(body)))

    return app


class ServerThread:
    """``app`` served by uvicorn on ``host:port`` in a background thread (``port=0``: any free port).

    Used by the tests and the HTTP benchmark; ``lmleak serve`` runs uvicorn in the foreground.
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn  # the server loop is only needed when serving

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.host, self.port = host, self.sock.getsockname()[1]
        self.server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        )
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("lmleak serve did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@contextlib.contextmanager
def serving(
    model: Any,
    *,
    tier: str = "prompt_logprobs",
    name: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
) -> Iterator[ServerThread]:
    """Serve ``model`` in the background for the duration of the block."""
    st = ServerThread(build_app(model, tier=tier, name=name), host, port).start()
    try:
        yield st
    finally:
        st.stop()


def serve(
    spec: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    tier: str = "prompt_logprobs",
    name: str | None = None,
    dtype: str | None = None,
    batch_tokens: int | None = None,
    echo: Any = None,
) -> None:
    """Load ``spec`` and serve it in the foreground until interrupted (``lmleak serve``)."""
    import uvicorn  # the server loop is only needed when serving

    if tier not in TIERS:  # before loading the model
        raise ConfigError(f"unknown tier {tier!r}", field="--tier", hint=f"use one of {', '.join(TIERS)}")
    model = load_model(spec, dtype=dtype, batch_tokens=batch_tokens)
    app = build_app(model, tier=tier, name=name)
    if echo is not None:
        echo(
            f"serving {name or model.name} (tier {tier}) at http://{host}:{port}/v1 — "
            f"lmleak --model 'http://{host}:{port}/v1#{name or model.name}'"
        )
    uvicorn.run(app, host=host, port=port, log_level="warning")
