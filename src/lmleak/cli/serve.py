"""``lmleak serve``: an OpenAI-compatible HTTP server for any model lmleak loads (see :mod:`lmleak.serve`)."""

from __future__ import annotations

from typing import Annotated

import typer

from lmleak.cli.common import COUNT, COUNT0, POSITIVE, info, number

TIERS = ("prompt_logprobs", "echo", "chat", "text")


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("serve")(serve_cmd)


# long: a Typer command whose signature is its options
def serve_cmd(
    model: Annotated[
        str, typer.Argument(help="Model dir, HF dir, .gguf, smollm2-135m or fake:<corpus.jsonl>.")
    ],
    port: Annotated[
        int,
        typer.Option("--port", "-p", help="TCP port (0: any free port).", parser=number(int, ge=0, le=65535)),
    ] = 8000,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on (loopback by default; set --api-key before opening it to a network).",
        ),
    ] = "127.0.0.1",
    tier: Annotated[
        str,
        typer.Option(
            "--tier",
            help=f"What to serve: {', '.join(TIERS)} (prompt_logprobs: everything; "
            "the others restrict it, as a deployed API would).",
        ),
    ] = "prompt_logprobs",
    name: Annotated[
        str | None,
        typer.Option("--name", help="The model name clients give (URL#NAME); default: the model's name."),
    ] = None,
    dtype: Annotated[
        str | None, typer.Option("--dtype", help="float32, bfloat16 or float16 (default: the model's).")
    ] = None,
    batch_tokens: Annotated[
        int | None,
        typer.Option("--batch-tokens", help="Padded tokens per forward pass (bounds memory).", parser=COUNT),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="LMLEAK_SERVE_KEY",
            show_envvar=True,
            help="Require this key (Authorization: Bearer KEY); prefer the environment variable, "
            "which stays out of the process list. Clients read it from LMLEAK_API_KEY.",
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="Also answer for this Host header: NAME (on the served port), NAME:PORT, or * for any "
            "(repeatable; localhost, 127.0.0.1 and [::1] always work).",
        ),
    ] = None,
    max_body: Annotated[
        int, typer.Option("--max-body", help="Largest request body in bytes (413 above it).", parser=COUNT)
    ] = 1 << 20,
    max_n: Annotated[
        int, typer.Option("--max-n", help="Largest n (and best_of) per request.", parser=COUNT)
    ] = 128,
    max_logprobs: Annotated[
        int,
        typer.Option(
            "--max-logprobs", help="Most log-probabilities per position (the echo tier: 5).", parser=COUNT0
        ),
    ] = 20,
    max_prompts: Annotated[
        int, typer.Option("--max-prompts", help="Most prompts per request.", parser=COUNT)
    ] = 256,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens", help="Most tokens one request may generate (default: the context).", parser=COUNT
        ),
    ] = None,
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline", help="Seconds a request may take, waiting included (503 after).", parser=POSITIVE
        ),
    ] = 300.0,
    read_timeout: Annotated[
        float,
        typer.Option(
            "--read-timeout",
            help="Seconds a request's headers and body may take to arrive (408 and closed after).",
            parser=POSITIVE,
        ),
    ] = 30.0,
    max_connections: Annotated[
        int,
        typer.Option("--max-connections", help="Most open connections (429 beyond, at once).", parser=COUNT),
    ] = 512,
    max_inflight: Annotated[
        int,
        typer.Option(
            "--max-inflight",
            help="Most requests in progress, body reading included (429 beyond; /health is never refused).",
            parser=COUNT,
        ),
    ] = 64,
) -> None:
    """Serve MODEL with an OpenAI-compatible API (/v1/models, /v1/completions, /v1/chat/completions, /tokenize).

    Example: lmleak serve runs/model --port 8000 --tier echo

    Then audit it with --model 'http://127.0.0.1:8000/v1#model'. Ctrl-C (or SIGTERM) stops it,
    answering any request still running with 503.
    """
    # lazy: lmleak.serve imports fastapi and uvicorn, which `lmleak --help` must not load
    from lmleak.serve import ServeLimits, serve

    limits = ServeLimits(
        max_body_bytes=max_body,
        max_n=max_n,
        max_logprobs=max_logprobs,
        max_prompts=max_prompts,
        deadline_s=deadline,
        max_tokens=max_tokens,
        read_timeout_s=read_timeout,
        max_connections=max_connections,
        max_inflight=max_inflight,
    )
    serve(
        model,
        host=host,
        port=port,
        tier=tier,
        name=name,
        dtype=dtype,
        batch_tokens=batch_tokens,
        limits=limits,
        api_key=api_key,
        allowed_hosts=tuple(allowed_host or ()),
        echo=info,
    )
    info("lmleak serve stopped")
