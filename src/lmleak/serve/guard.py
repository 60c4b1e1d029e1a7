"""Who may talk to ``lmleak serve``: checks on every request before any route runs (an ASGI middleware).

1. **Host allow-list.** A web page in the user's browser can make it send requests to
   ``127.0.0.1`` — and, through DNS rebinding, under a name the attacker controls. The browser then
   sends that name in ``Host``; the server answers only for ``localhost``, ``127.0.0.1`` and
   ``[::1]`` on its own port, the address it was bound to, and the names given with
   ``--allowed-host`` (``NAME`` on the served port, ``NAME:PORT`` exactly, ``*`` for any host).
2. **API key** (``--api-key`` or ``LMLEAK_SERVE_KEY``): ``Authorization: Bearer KEY`` or
   ``X-Api-Key: KEY``, compared in constant time (:func:`hmac.compare_digest` of the SHA-256 digests,
   so neither the key's characters nor its length show in the timing). ``/health`` needs no key.
3. **JSON only.** A ``POST`` must say ``Content-Type: application/json`` (415 otherwise): a page can
   post ``text/plain`` to any address without asking, but JSON needs a CORS preflight, which this
   server never grants.
4. **Body size.** A declared ``Content-Length`` over the limit is refused (413) before a byte of the
   body is read; a chunked body is cut off while reading (:func:`lmleak.serve.limits.read_body`).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from lmleak.serve.errors import APIError
from lmleak.serve.limits import too_large

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
WILDCARD_BINDS = ("0.0.0.0", "::", "[::]", "")
PUBLIC_PATHS = frozenset({"/health"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


def split_host(value: str) -> tuple[str, int | None]:
    """``(hostname, port)`` of a ``Host`` value or an allow-list entry; ``("", None)`` when malformed.

    >>> split_host("LocalHost:8000"), split_host("[::1]:80"), split_host("example.org")
    (('localhost', 8000), ('[::1]', 80), ('example.org', None))
    >>> split_host("::1:8000"), split_host("a:b")
    (('', None), ('', None))
    """
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        host, rest = (value[: end + 1], value[end + 1 :]) if end > 0 else ("", "")
    else:
        host, sep, port = value.partition(":")
        rest = f":{port}" if sep else ""
    if not host or any(c in host for c in "/@ \\"):
        return "", None
    if not rest:
        return host, None
    if rest.startswith(":") and rest[1:].isdigit() and int(rest[1:]) < 65536:
        return host, int(rest[1:])
    return "", None


@dataclass(frozen=True)
class Access:
    """Who may talk to the server: the API key (None: no key) and the hosts it answers for."""

    api_key: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    port: int | None = None  # the served port (None: any port, e.g. an app tested without a socket)
    bind_host: str | None = None  # the address it listens on (added to the allow-list unless a wildcard)

    def hosts(self) -> tuple[str, ...]:
        """Every allow-list entry: the loopback names, the bound address, ``--allowed-host``."""
        extra = []
        if self.bind_host is not None and self.bind_host not in WILDCARD_BINDS:
            bind = (
                f"[{self.bind_host}]"
                if ":" in self.bind_host and not self.bind_host.startswith("[")
                else self.bind_host
            )
            extra.append(bind)
        return tuple(dict.fromkeys((*LOOPBACK_HOSTS, *extra, *self.allowed_hosts)))

    def host_allowed(self, header: str) -> bool:
        """Whether a request's ``Host`` value is on the allow-list (no port in the header: 80)."""
        entries = self.hosts()
        if "*" in entries:
            return True
        host, port = split_host(header)
        if not host:
            return False
        port = 80 if port is None else port
        for entry in entries:
            name, fixed = split_host(entry)
            if name != host:
                continue
            if fixed is not None and fixed == port:
                return True
            if fixed is None and (self.port is None or self.port == port):
                return True
        return False

    def key_ok(self, given: str | None) -> bool:
        """Whether ``given`` is the key (always true without one), in constant time."""
        if self.api_key is None:
            return True
        a = hashlib.sha256((given or "").encode()).digest()
        b = hashlib.sha256(self.api_key.encode()).digest()
        return hmac.compare_digest(a, b) and given is not None


def presented_key(headers: dict[str, list[str]]) -> str | None:
    """The key a request presents: ``Authorization: Bearer KEY`` or ``X-Api-Key: KEY``."""
    for value in headers.get("authorization", []):
        scheme, _, token = value.strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    keys = headers.get("x-api-key", [])
    return keys[0].strip() if keys else None


def _headers(scope: Scope) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in scope.get("headers", []):
        out.setdefault(k.decode("latin-1").lower(), []).append(v.decode("latin-1"))
    return out


def check_request(scope: Scope, access: Access, max_body_bytes: int) -> APIError | None:
    """The refusal for this request's headers, or None when it may go on to its route."""
    headers = _headers(scope)
    hosts = headers.get("host", [])
    if len(hosts) != 1 or not access.host_allowed(hosts[0]):
        port = f" on port {access.port}" if access.port is not None else ""
        return APIError(
            400,
            f"this server answers only for {', '.join(access.hosts())}{port} in the Host header; "
            "to reach it under another name start it with --allowed-host NAME",
            code="invalid_host",
        )
    if scope.get("path") not in PUBLIC_PATHS and not access.key_ok(presented_key(headers)):
        return APIError(
            401,
            "a valid API key is required: send Authorization: Bearer KEY with the key lmleak serve was "
            "started with (--api-key or LMLEAK_SERVE_KEY)",
            code="invalid_api_key",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if scope.get("method") in BODY_METHODS:
        kinds = headers.get("content-type", [])
        media = kinds[0].split(";", 1)[0].strip().lower() if len(kinds) == 1 else ""
        if media != "application/json":
            return APIError(
                415,
                "the request body must be JSON, sent with Content-Type: application/json",
                code="unsupported_media_type",
            )
        declared = headers.get("content-length", [])
        if declared and declared[0].strip().isdigit() and int(declared[0]) > max_body_bytes:
            return too_large(max_body_bytes)
    return None


class Guard:
    """ASGI middleware applying :func:`check_request` to every HTTP request."""

    def __init__(self, app: ASGIApp, access: Access, max_body_bytes: int) -> None:
        self.app, self.access, self.max_body_bytes = app, access, max_body_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refusal = check_request(scope, self.access, self.max_body_bytes)
            if refusal is not None:
                await refusal.response()(scope, receive, send)
                return
        await self.app(scope, receive, send)
