"""lmleak.serve.errors: every refusal has the OpenAI error shape, its status and its headers."""

from __future__ import annotations

import json

import pytest

from lmleak.serve.errors import APIError, error_body, refuse


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (404, "not_found_error"),
        (413, "invalid_request_error"),
        (415, "invalid_request_error"),
        (500, "server_error"),
        (503, "server_error"),
        (418, "invalid_request_error"),
    ],
)
def test_error_body_shape(status, kind):
    body = error_body(status, "m", param="p", code="c")
    assert body == {"error": {"message": "m", "type": kind, "param": "p", "code": "c"}}


def test_api_error_response_carries_status_body_and_headers():
    r = APIError(401, "key", code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"}).response()
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert json.loads(r.body)["error"]["code"] == "invalid_api_key"
    with pytest.raises(APIError) as e:
        refuse(400, "bad n", param="n")
    assert (e.value.status, e.value.param, e.value.code) == (400, "n", None)
