"""``lmleak serve``: an OpenAI-compatible HTTP server for any model lmleak loads (see :mod:`lmleak.serve`)."""

from __future__ import annotations

from typing import Annotated

import typer

from lmleak.cli.common import COUNT, info, number

TIERS = ("prompt_logprobs", "echo", "chat", "text")


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("serve")(serve_cmd)


def serve_cmd(
    model: Annotated[
        str, typer.Argument(help="Model dir, HF dir, .gguf, smollm2-135m or fake:<corpus.jsonl>.")
    ],
    port: Annotated[
        int, typer.Option("--port", "-p", help="TCP port.", parser=number(int, ge=1, le=65535))
    ] = 8000,
    host: Annotated[
        str,
        typer.Option(
            "--host", help="Address to listen on (loopback by default; the server has no authentication)."
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
) -> None:
    """Serve MODEL with an OpenAI-compatible API (/v1/models, /v1/completions, /v1/chat/completions, /tokenize)."""
    # lazy: lmleak.serve imports fastapi and torch, which `lmleak --help` must not load
    from lmleak.serve import serve

    serve(
        model,
        host=host,
        port=port,
        tier=tier,
        name=name,
        dtype=dtype,
        batch_tokens=batch_tokens,
        echo=info,
    )
