"""Running the app: in the foreground for ``lmleak serve`` (stops cleanly on the first Ctrl-C or
SIGTERM, even while a request runs), or in a background thread for tests and benchmarks."""

from __future__ import annotations

import contextlib
import errno
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

import uvicorn
from fastapi import FastAPI

from lmleak.errors import ConfigError
from lmleak.serve.app import build_app
from lmleak.serve.guard import Access
from lmleak.serve.settings import ServeLimits, ServeSettings, check_key
from lmleak.serve.shed import shedding_protocol

GRACE_S = 5  # how long a stopping server waits for answers already being sent


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready socket on ``host:port`` (``port=0``: any free port).

    Raises:
        ConfigError: the port is taken, needs privileges, or the host is no address of this machine
            (``lmleak serve`` said "Address already in use. Fix: check the path and its permissions").
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as e:
        sock.close()
        why = _BIND_ERRORS.get(e.errno or 0)
        if why is None:
            raise
        raise ConfigError(f"cannot listen on {host}:{port}: {why[0]}", field="--port", hint=why[1]) from None
    return sock


_BIND_ERRORS = {
    errno.EADDRINUSE: (
        "the port is in use (another server, or an lmleak serve still running)",
        "pick another --port, or --port 0 for any free one",
    ),
    errno.EACCES: ("this user may not open that port", "use a port above 1023, e.g. --port 8000"),
    errno.EADDRNOTAVAIL: ("the host is no address of this machine", "use --host 127.0.0.1 (the default)"),
}


def _config(app: FastAPI) -> uvicorn.Config:
    served = getattr(app.state, "served", None)
    limits = served.limits if served is not None else ServeLimits()
    return uvicorn.Config(
        app,
        http=shedding_protocol(limits.read_timeout_s, limits.max_connections),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=GRACE_S,
        server_header=False,
    )


def _stop_app(app: FastAPI) -> None:
    stop = getattr(app.state, "stop", None)
    if stop is not None:
        stop()


class _Foreground(uvicorn.Server):
    """uvicorn's server with lmleak's stop: the first SIGINT / SIGTERM answers every waiting and
    running request 503 at once (the model thread is told to stop) and closes the server; a second
    Ctrl-C drops the connections still open. The signal is not raised again afterwards, so the
    command ends normally."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_stop = on_stop

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
            return
        self.should_exit = True
        # not in the signal handler itself: stop() takes a lock the interrupted code may hold
        threading.Thread(target=self.on_stop, name="lmleak-serve-stop", daemon=True).start()


def run_foreground(app: FastAPI, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` until SIGINT / SIGTERM (see :class:`_Foreground`)."""
    server = _Foreground(_config(app), on_stop=lambda: _stop_app(app))
    try:
        server.run(sockets=[sock])
    finally:
        _stop_app(app)
        sock.close()


class ServerThread:
    """``app`` served by uvicorn on ``host:port`` in a background thread (``port=0``: any free port).

    Used by the tests and the HTTP benchmark; ``lmleak serve`` runs in the foreground."""

    def __init__(
        self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, sock: socket.socket | None = None
    ) -> None:
        self.app = app
        self.sock = sock if sock is not None else bind(host, port)
        self.host, self.port = host, self.sock.getsockname()[1]
        self.server = uvicorn.Server(_config(app))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"http://{host}:{self.port}/v1"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("lmleak serve did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        _stop_app(self.app)
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
    limits: ServeLimits | None = None,
    api_key: str | None = None,
    allowed_hosts: Sequence[str] = (),
) -> Iterator[ServerThread]:
    """Serve ``model`` in the background for the duration of the block."""
    check_key(api_key)
    sock = bind(host, port)
    access = Access(api_key, tuple(allowed_hosts), sock.getsockname()[1], host)
    try:
        app = build_app(model, tier=tier, name=name, limits=limits, access=access)
    except BaseException:
        sock.close()
        raise
    st = ServerThread(app, host, sock=sock).start()
    try:
        yield st
    finally:
        st.stop()


def serve(spec: str, settings: ServeSettings | None = None, *, echo: Any = None) -> None:
    """Load ``spec`` and serve it in the foreground until Ctrl-C / SIGTERM (``lmleak serve``); the
    settings (tier, port, API key, limits) were checked when they were built, before the model loads."""
    s = settings or ServeSettings()
    # lazy: loading a model imports torch; the server itself (and `import lmleak.serve`) does not need it
    from lmleak.models.loading import load_model

    sock = bind(s.host, s.port)  # a taken port is refused before the model loads
    port = sock.getsockname()[1]
    access = Access(s.api_key, s.allowed_hosts, port, s.host)
    try:
        model = load_model(spec, dtype=s.dtype, batch_tokens=s.batch_tokens)
        app = build_app(model, tier=s.tier, name=s.name, limits=s, access=access)
    except BaseException:
        sock.close()
        raise
    if echo is not None:
        served = s.name or model.name
        url = f"http://{'[' + s.host + ']' if ':' in s.host else s.host}:{port}/v1"
        echo(f"serving {served} (tier {s.tier}) at {url} — lmleak --model '{url}#{served}'")
        echo(
            "API key required (Authorization: Bearer …)"
            if s.api_key
            else "no API key: any program on this machine that can reach the port can query the model"
        )
        echo(
            f"limits: body {s.max_body_bytes:,} bytes, n <= {s.max_n}, logprobs <= {s.max_logprobs}, "
            f"{s.max_prompts} prompts per request, deadline {s.deadline_s:g} s, "
            f"read timeout {s.read_timeout_s:g} s, {s.max_connections} connections, "
            f"{s.max_inflight} requests in progress; Host: {', '.join(access.hosts())}; Ctrl-C stops"
        )
    run_foreground(app, sock)
