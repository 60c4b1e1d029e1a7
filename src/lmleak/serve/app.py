"""The FastAPI app: routes, each a thin shell around :mod:`lmleak.serve`'s checks and computations.

Every route reads its body through the size limit, checks every field before any work, tokenises
in a worker thread (never on the event loop), runs the model on the single model thread within the
request's deadline, and encodes the answer off the event loop. A refusal is an OpenAI error body;
an unexpected exception (a bug) is a 500 whose log line names only its type and route — never the
request's text, which may be the very data an audit protects.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from lmleak.serve.chat import chat, chat_body, parse_chat
from lmleak.serve.completions import complete, completion_body, parse_completion
from lmleak.serve.errors import APIError, error_response
from lmleak.serve.guard import Access, Guard
from lmleak.serve.limits import ServeLimits, read_json
from lmleak.serve.served import Served
from lmleak.serve.shed import Load, Shed
from lmleak.serve.stream import chat_events, completion_events, sse_response
from lmleak.serve.tiers import check_tier

log = logging.getLogger("lmleak.serve")


def _json(obj: Any) -> Response:
    """JSON without FastAPI's per-field encoder (which costs more than the model on long prompts)."""
    return Response(json.dumps(obj, separators=(",", ":")), media_type="application/json")


async def _answer(route: str, work: Callable[[], Awaitable[Response]]) -> Response:
    """``work()``, with a refusal as its OpenAI error and a bug as a 500 that logs its type only."""
    try:
        return await work()
    except APIError as e:
        return e.response()
    except ClientDisconnect:  # the client left while sending its body: nobody to answer, nothing to log
        return Response(status_code=400)
    except Exception as e:  # noqa: BLE001 - the type only: the message may quote the request
        log.error("lmleak serve: internal error (%s) on %s", type(e).__name__, route)
        return error_response(
            500, "internal error in lmleak serve (its log names the error type)", code="internal_error"
        )


def build_app(
    model: Any,
    *,
    tier: str = "prompt_logprobs",
    name: str | None = None,
    limits: ServeLimits | None = None,
    access: Access | None = None,
) -> FastAPI:
    """The FastAPI app serving ``model`` at ``tier`` (see :mod:`lmleak.serve`), within ``limits`` and
    to the callers ``access`` lets in (default: no key, loopback names on any port)."""
    check_tier(model, tier)
    limits = limits or ServeLimits()
    served = Served(model, tier, name or model.name, limits)
    app = FastAPI(title=f"lmleak serve: {served.name}", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.load = Load(limits.max_inflight)
    app.add_middleware(Shed, load=app.state.load)  # inside the Guard: a refused caller takes no slot
    app.add_middleware(Guard, access=access or Access(), max_body_bytes=limits.max_body_bytes)
    app.state.served = served
    app.state.stop = served.worker.stop

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, e: StarletteHTTPException) -> Response:
        message = {404: "no such route", 405: "method not allowed on this route"}.get(
            e.status_code, str(e.detail)
        )
        return error_response(e.status_code, message, code="not_found" if e.status_code == 404 else None)

    _routes(app, served)
    _generation_routes(app, served)
    return app


def _routes(app: FastAPI, served: Served) -> None:
    limits = served.limits

    @app.get("/health")
    async def health() -> Response:  # on the event loop: it never waits for a worker thread
        return _json({"status": "ok"})

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return served.models()

    @app.get("/v1/models/{model_id:path}")
    async def model_card(model_id: str) -> Response:
        return await _answer("/v1/models/{id}", lambda: _now(_json(served.model_card(model_id))))

    @app.post("/tokenize")
    async def tokenize(request: Request) -> Response:
        async def work() -> Response:
            prompt, special = served.tokenize_request(await read_json(request, limits))
            return await run_in_threadpool(lambda: _json(served.tokenize(prompt, special)))

        return await _answer("/tokenize", work)

    @app.post("/detokenize")
    async def detokenize(request: Request) -> Response:
        async def work() -> Response:
            tokens = served.detokenize_request(await read_json(request, limits))
            return await run_in_threadpool(lambda: _json(served.detokenize(tokens)))

        return await _answer("/detokenize", work)


def _generation_routes(app: FastAPI, served: Served) -> None:
    limits = served.limits

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        async def work() -> Response:
            deadline = time.monotonic() + limits.deadline_s
            req = parse_completion(served, await read_json(request, limits))
            rows, _ = await run_in_threadpool(served.prompts.rows, req.prompt, limits.max_prompts)
            choices = await served.worker.run(
                lambda check: complete(served, req, rows, check), deadline, limits.deadline_s
            )
            if req.sampling.stream:
                usage = served.usage(rows, sum(c.generated for c in choices))
                return sse_response(
                    await run_in_threadpool(
                        completion_events, served.name, choices, usage, req.sampling.include_usage
                    )
                )
            return await run_in_threadpool(lambda: _json(completion_body(served, choices, rows)))

        return await _answer("/v1/completions", work)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        async def work() -> Response:
            deadline = time.monotonic() + limits.deadline_s
            req = parse_chat(served, await read_json(request, limits))
            row = await run_in_threadpool(served.prompts.text_row, req.text, "messages")
            choices = await served.worker.run(
                lambda check: chat(served, req, row, check), deadline, limits.deadline_s
            )
            if req.sampling.stream:
                usage = served.usage([row], sum(c.generated for c in choices))
                return sse_response(
                    await run_in_threadpool(
                        chat_events, served.name, choices, usage, req.sampling.include_usage
                    )
                )
            return await run_in_threadpool(lambda: _json(chat_body(served, choices, row)))

        return await _answer("/v1/chat/completions", work)


async def _now(response: Response) -> Response:
    return response
