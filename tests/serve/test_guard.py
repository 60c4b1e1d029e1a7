"""lmleak.serve.guard: the Host allow-list, the API key (constant-time compare), JSON-only bodies and the
declared body size, each checked before any route runs."""

from __future__ import annotations

import pytest

from lmleak.serve.guard import Access, presented_key, split_host
from lmleak.serve.limits import ServeLimits
from tests.serve.tiny import client, openai_error


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("localhost:8000", True),
        ("127.0.0.1:8000", True),
        ("[::1]:8000", True),
        ("LOCALHOST:8000", True),
        ("localhost:8001", False),  # another port: another service's origin
        ("localhost", False),  # port 80
        ("evil.example:8000", False),  # DNS rebinding: the attacker's name
        ("127.0.0.1.evil.example:8000", False),
        ("localhost:8000@evil.example", False),
        ("", False),
        ("[::1", False),
    ],
)
def test_host_allow_list_defaults_to_loopback_on_the_served_port(header, ok):
    assert Access(port=8000).host_allowed(header) is ok


def test_allowed_hosts_add_names_with_or_without_a_port():
    a = Access(port=8000, allowed_hosts=("box.example.org", "proxy.example.org:443"), bind_host="10.0.0.5")
    assert a.host_allowed("box.example.org:8000") and not a.host_allowed("box.example.org:9000")
    assert a.host_allowed("proxy.example.org:443") and not a.host_allowed("proxy.example.org:8000")
    assert a.host_allowed("10.0.0.5:8000")  # the bound address
    assert Access(port=8000, bind_host="0.0.0.0").hosts() == ("localhost", "127.0.0.1", "[::1]")
    assert Access(port=8000, bind_host="127.0.0.1").hosts() == ("localhost", "127.0.0.1", "[::1]")
    assert Access(port=8000, bind_host="::1").hosts() == ("localhost", "127.0.0.1", "[::1]")
    assert Access(port=8000, allowed_hosts=("*",)).host_allowed("anything.example:1")
    assert Access(port=None).host_allowed("localhost:1234")  # no socket: any port


def test_split_host():
    assert split_host("[::1]:8000") == ("[::1]", 8000)
    assert split_host("a:99999") == ("", None)


def test_key_is_compared_whole_and_absent_keys_fail():
    a = Access(api_key="s3cret-key")
    assert a.key_ok("s3cret-key")
    for wrong in ("s3cret-kez", "s3cret-key ", "s3cret", "", None):
        assert not a.key_ok(wrong)
    assert Access().key_ok(None)
    assert presented_key({"authorization": ["Bearer abc"]}) == "abc"
    assert presented_key({"authorization": ["Basic abc"], "x-api-key": ["xyz"]}) == "xyz"
    assert presented_key({}) is None


def test_requests_without_the_key_get_401_and_with_it_200(model):
    c = client(model, access=Access(api_key="k-123"))
    err = openai_error(c.get("/v1/models"), 401, code="invalid_api_key")
    assert "k-123" not in err["message"]
    assert c.get("/v1/models", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/v1/models", headers={"Authorization": "Bearer k-123"}).status_code == 200
    assert c.get("/v1/models", headers={"X-Api-Key": "k-123"}).status_code == 200
    r = c.post(
        "/v1/completions", json={"prompt": "hi", "max_tokens": 1}, headers={"Authorization": "Bearer k-123"}
    )
    assert r.status_code == 200
    assert c.get("/health").json() == {"status": "ok"}  # the health check needs no key


def test_a_foreign_host_header_is_refused_before_the_key_and_the_route(model):
    c = client(model, access=Access(port=8000))
    r = c.post("/v1/completions", json={"prompt": "hi"}, headers={"Host": "evil.example:8000"})
    err = openai_error(r, 400, code="invalid_host")
    assert "--allowed-host" in err["message"] and "evil" not in err["message"]
    assert c.get("/v1/models", headers={"Host": "localhost:8000"}).status_code == 200


@pytest.mark.parametrize(
    "ctype", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_only_json_bodies_are_read(model, ctype):
    headers = {"content-type": ctype} if ctype else {}
    r = client(model).post("/v1/completions", content=b'{"prompt": "hi"}', headers=headers)
    openai_error(r, 415, code="unsupported_media_type")
    ok = client(model).post(
        "/v1/completions",
        content=b'{"prompt": "hi", "max_tokens": 1}',
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert ok.status_code == 200


def test_the_declared_size_is_refused_before_the_route(model):
    c = client(model, limits=ServeLimits(max_body_bytes=100))
    r = c.post(
        "/tokenize", content=b"{}", headers={"content-type": "application/json", "content-length": "101"}
    )
    openai_error(r, 413)
