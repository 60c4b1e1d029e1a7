"""Refusals in the OpenAI error shape: every 4xx / 5xx body is
``{"error": {"message", "type", "param", "code"}}``.

``message`` says what was wrong and how to fix it, never quoting the request's text (a prompt can
hold the very data an audit protects); ``param`` names the request field (``max_tokens``,
``messages[0].content``) or is ``null``; ``code`` is a short machine-readable reason
(``context_length_exceeded``, ``invalid_api_key`` …) as the OpenAI API uses it; ``type`` follows the
status (``invalid_request_error`` for 400/413/415, ``authentication_error`` for 401,
``not_found_error`` for 404, ``rate_limit_error`` for 429, ``server_error`` for 5xx), as llama.cpp's
server names them.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from starlette.responses import Response

TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
}


def error_body(
    status: int, message: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """The OpenAI error object for ``status``.

    >>> error_body(400, "n must be at least 1", param="n", code="out_of_range")
    {'error': {'message': 'n must be at least 1', 'type': 'invalid_request_error', 'param': 'n', 'code': 'out_of_range'}}
    """
    kind = TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_response(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """:func:`error_body` as a JSON response."""
    body = json.dumps(error_body(status, message, param=param, code=code), separators=(",", ":"))
    return Response(body, status_code=status, media_type="application/json", headers=headers)


class APIError(Exception):
    """A request the server refuses: the status, a message for the user and the field at fault."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.headers = headers

    def response(self) -> Response:
        return error_response(
            self.status, self.message, param=self.param, code=self.code, headers=self.headers
        )


def refuse(status: int, message: str, *, param: str | None = None, code: str | None = None) -> NoReturn:
    """Raise :class:`APIError` (the route's handler turns it into the OpenAI error body)."""
    raise APIError(status, message, param=param, code=code)
