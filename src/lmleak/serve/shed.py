"""Shedding load: what ``lmleak serve`` does with slow, stalled and surplus clients.

A socket costs the server nothing until it sends; a stalled upload held forever costs its buffered
body (up to ``--max-body``) for as long as the client wants — 300 of them took the server from 420
to 733 MB and ``/health`` to 5.8 s (issue 33). So, below the routes:

- **a read deadline** (``--read-timeout``, 30 s): from the moment a connection opens — or, on a
  kept-alive one, from the first byte of its next request — the request's headers and its whole
  body must arrive within the deadline, else the server answers 408 (``request_timeout``) and
  closes the connection; a connection that never sends a byte is closed at the deadline too. The
  model's own time is not counted (the request's ``--deadline`` covers it), nor is a kept-alive
  connection's idle time (uvicorn closes it after 5 s);
- **a cap on open connections** (``--max-connections``, 512): one more is answered 429
  (``too_many_connections``, ``Retry-After: 1``) at once, before a byte of it is read, and closed
  (even ``/health``: the server is full). A client that had already sent its request may see the
  connection reset instead of the 429; lmleak's client retries either;
- **a cap on requests in progress** (``--max-inflight``, 64: reading their body, waiting for the
  model, or running): one more is answered 429 (``server_busy``, ``Retry-After: 1``) as soon as its
  headers arrive, before its body is read; the rest of its body is read and dropped, not kept.
  ``GET /health`` is never counted nor refused, so it answers at once while uploads stall;
- **memory back after aborted uploads**: a body is only ever held by a request in progress (so at
  most ``--max-inflight`` × ``--max-body`` bytes), and when an upload is cut off (the client left,
  or the deadline closed it) its buffers are freed and, where the C library allows it
  (glibc's ``malloc_trim``), the freed heap is handed back to the system.

The first three are HTTP's own answers to an overloaded server; lmleak's HTTP client retries a 429
after its ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import http
import json
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from lmleak.serve.errors import error_body, error_response

RETRY_AFTER_S = 1
TRIM_AFTER_S = 0.5  # freed memory is handed back this long after an aborted upload (one call per burst)
EXEMPT_PATHS = frozenset({"/health"})


def raw_error(status: int, message: str, code: str, *, retry_after: int | None = None) -> bytes:
    """An OpenAI error answer as the bytes of a whole HTTP/1.1 response that closes the connection
    (written straight to a socket whose request was never parsed, or only in part).

    >>> raw_error(408, "too slow", "request_timeout").split(b"\\r\\n")[0]
    b'HTTP/1.1 408 Request Timeout'
    """
    body = json.dumps(error_body(status, message, code=code), separators=(",", ":")).encode()
    head = [
        f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
    ]
    if retry_after is not None:
        head.append(f"retry-after: {retry_after}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def timed_out(read_timeout_s: float) -> bytes:
    return raw_error(
        408,
        f"the request's headers and body did not arrive within {read_timeout_s:g} s "
        "(lmleak serve --read-timeout); send the whole request at once",
        "request_timeout",
    )


def too_many_connections(max_connections: int) -> bytes:
    return raw_error(
        429,
        f"lmleak serve has {max_connections} connections open (--max-connections); retry later",
        "too_many_connections",
        retry_after=RETRY_AFTER_S,
    )


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` (None where the C library has none)."""
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


MALLOC_TRIM = _malloc_trim()


class SheddingProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with the read deadline and the connection cap (the module
    docstring); :func:`shedding_protocol` sets the two numbers."""

    read_timeout_s: float = 30.0
    max_connections: int = 512

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._timer: asyncio.TimerHandle | None = None
        self._received_one = False
        if len(self.connections) > self.max_connections:
            transport.write(too_many_connections(self.max_connections))
            transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():  # refused or timed out: what still arrives is dropped
            return
        super().data_received(data)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        """A stopping server waits for answers being sent, not for uploads still arriving."""
        if self._owed() and not self.transport.is_closing():
            if self.cycle is not None and not self.cycle.response_complete:
                self.cycle.disconnected = True
                self.cycle.message_event.set()
            self.transport.close()
            return
        super().shutdown()

    def _owed(self) -> bool:
        """Whether the client owes the server bytes of a request (headers or body)."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return True
        if state is h11.DONE or state is h11.MUST_CLOSE:
            self._received_one = True
            return False
        if state is h11.IDLE:  # before the first request, or a next one begun
            return not self._received_one or bool(self.conn.trailing_data[0])
        return False

    def _arm(self) -> None:
        if self.transport.is_closing():
            return
        if not self._owed():
            self._cancel()
        elif self._timer is None:
            self._timer = self.loop.call_later(self.read_timeout_s, self._expired)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or cycle.response_complete or not cycle.response_started:
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True  # the route stops waiting for the body and answers nobody
                cycle.message_event.set()
            self.transport.write(timed_out(self.read_timeout_s))
        self.transport.close()


def shedding_protocol(read_timeout_s: float, max_connections: int) -> type[SheddingProtocol]:
    """:class:`SheddingProtocol` with these limits (uvicorn's ``Config(http=...)`` takes a class)."""
    return type(
        "SheddingProtocol",
        (SheddingProtocol,),
        {"read_timeout_s": read_timeout_s, "max_connections": max_connections},
    )


@dataclass
class Load:
    """What :class:`Shed` counts (one per app, on ``app.state.load``): requests in progress now, the
    429s it answered, the uploads cut off, and the times it handed freed memory back."""

    max_inflight: int
    inflight: int = 0  # one event loop: no lock
    refused: int = 0
    aborted: int = 0
    trims: int = 0
    _trim: asyncio.TimerHandle | None = field(default=None, repr=False)

    def schedule_trim(self) -> None:
        """``malloc_trim(0)`` :data:`TRIM_AFTER_S` from now, unless one is already due."""
        if self._trim is None and MALLOC_TRIM is not None:
            self._trim = asyncio.get_running_loop().call_later(TRIM_AFTER_S, self._run_trim)

    def _run_trim(self) -> None:
        self._trim = None
        self.trims += 1
        # off the event loop: trimming a large heap takes milliseconds
        asyncio.get_running_loop().run_in_executor(None, MALLOC_TRIM, 0)


def busy(max_inflight: int) -> Any:
    """The 429 answered beyond ``--max-inflight``."""
    return error_response(
        429,
        f"lmleak serve is busy with {max_inflight} requests (--max-inflight); retry after {RETRY_AFTER_S} s",
        code="server_busy",
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


class Shed:
    """ASGI middleware: at most ``load.max_inflight`` requests in progress, 429 beyond (``/health``
    exempt); an upload cut off before its body ended has its memory handed back."""

    def __init__(self, app: Any, load: Load) -> None:
        self.app, self.load = app, load

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        load = self.load
        if scope["type"] != "http" or scope.get("path") in EXEMPT_PATHS:
            await self.app(scope, receive, send)
            return
        if load.inflight >= load.max_inflight:
            load.refused += 1
            await busy(load.max_inflight)(scope, receive, send)
            return
        body_done = aborted = False

        async def watched() -> Any:
            nonlocal body_done, aborted
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                body_done = True
            elif message["type"] == "http.disconnect" and not body_done:
                aborted = True
            return message

        load.inflight += 1
        try:
            await self.app(scope, watched, send)
        finally:
            load.inflight -= 1
            if aborted:  # the body's buffers are free now (the route's frames are gone)
                load.aborted += 1
                load.schedule_trim()
