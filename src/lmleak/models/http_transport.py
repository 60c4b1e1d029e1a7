"""A per-request deadline and a response-size cap for the HTTP client.

httpx's timeouts bound each network operation (connect, one read, one write): a server that
trickles one byte a second never trips a read timeout of 2 s, and a request can last for ever.
:class:`DeadlineTransport` bounds the whole request instead: inside :func:`deadline`, every connect,
read and write of the calling thread gets at most the time left until the deadline, so a request
ends (``httpx.ReadTimeout`` etc.) at ``connect + total`` seconds whatever the server does. It is
httpx's own transport with a network backend that shortens each operation's timeout (httpcore's
public ``NetworkBackend`` interface; httpx builds its pool without one, so the pool is rebuilt).

:func:`read_capped` reads a streamed response body and stops at a size cap, so a huge answer costs
at most the cap in memory.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

from lmleak.errors import ModelError

_local = threading.local()


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every network operation of this thread inside the block ends by ``seconds`` from now."""
    previous = getattr(_local, "at", None)
    _local.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.at = previous


def time_left() -> float | None:
    """Seconds until this thread's deadline (None: no deadline)."""
    at = getattr(_local, "at", None)
    return None if at is None else at - time.monotonic()


def _bounded(timeout: float | None, exc: type[Exception]) -> float | None:
    left = time_left()
    if left is None:
        return timeout
    if left <= 0:
        raise exc("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> Any:
        return _DeadlineStream(
            self.inner.start_tls(ssl_context, server_hostname, _bounded(timeout, httpcore.ConnectTimeout))
        )

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self.inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self.inner.connect_tcp(
            host, port, _bounded(timeout, httpcore.ConnectTimeout), local_address, socket_options
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        stream = self.inner.connect_unix_socket(
            path, _bounded(timeout, httpcore.ConnectTimeout), socket_options
        )
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's HTTP/1.1 transport whose operations respect :func:`deadline`."""

    def __init__(self, limits: httpx.Limits) -> None:
        super().__init__(limits=limits)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            network_backend=_DeadlineBackend(),
        )


def read_capped(response: httpx.Response, cap: int, url: str) -> bytes:
    """The body of a streamed response, refused (:class:`ModelError`) past ``cap`` bytes.

    Example:
        >>> r = httpx.Response(200, content=b"x" * 10)
        >>> read_capped(r, 10, "u")
        b'xxxxxxxxxx'
        >>> read_capped(httpx.Response(200, content=b"x" * 11), 10, "u")
        Traceback (most recent call last):
        ...
        lmleak.errors.ModelError: u: the server's answer is larger than 10 bytes (max_response_mb); ...
    """
    declared = response.headers.get("content-length", "")
    too_big = ModelError(
        f"{url}: the server's answer is larger than {cap:,} bytes (max_response_mb); a model's answer to one "
        "request is far smaller: check the server, or lower batch= (or raise max_response_mb=) in the model URL"
    )
    if declared.isdigit() and int(declared) > cap:
        raise too_big
    chunks, n = [], 0
    for chunk in response.iter_bytes():
        n += len(chunk)
        if n > cap:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)
