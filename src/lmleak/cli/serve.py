"""``lmleak serve``: an OpenAI-compatible HTTP server for any model lmleak loads (see :mod:`lmleak.serve`)."""

from __future__ import annotations

from typing import Annotated

import typer

from lmleak.cli.common import info
from lmleak.cli.options import replace_settings, takes
from lmleak.serve.settings import ServeSettings


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("serve")(serve_cmd)


@takes(settings=ServeSettings)
def serve_cmd(
    model: Annotated[
        str, typer.Argument(help="Model dir, HF dir, .gguf, smollm2-135m or fake:<corpus.jsonl>.")
    ],
    settings: ServeSettings,
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
) -> None:
    """Serve MODEL with an OpenAI-compatible API (/v1/models, /v1/completions, /v1/chat/completions, /tokenize).

    Example: lmleak serve runs/model --port 8000 --tier echo

    Then audit it with --model 'http://127.0.0.1:8000/v1#model'. Ctrl-C (or SIGTERM) stops it,
    answering any request still running with 503.
    """
    # lazy: lmleak.serve.server imports fastapi and uvicorn, which `lmleak --help` must not load
    from lmleak.serve.server import serve

    serve(model, replace_settings(settings, api_key=api_key), echo=info)
    info("lmleak serve stopped")
