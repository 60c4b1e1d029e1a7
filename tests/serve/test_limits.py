"""lmleak.serve.limits: the body-size limit (declared and chunked), JSON parsing, the limits' own checks
and the character bound's longest token."""

from __future__ import annotations

import json

import pytest

from lmleak.errors import ConfigError
from lmleak.serve.errors import APIError
from lmleak.serve.limits import ServeLimits, char_limit, max_token_chars, parse_object
from tests.serve.tiny import client, openai_error


def test_a_declared_body_over_the_limit_is_refused_with_413(model):
    c = client(model, limits=ServeLimits(max_body_bytes=1000))
    body = json.dumps({"prompt": "a " * 1000}).encode()
    r = c.post("/v1/completions", content=body, headers={"content-type": "application/json"})
    assert "1,000 bytes" in openai_error(r, 413, code="request_too_large")["message"]


def test_a_chunked_body_is_cut_off_while_reading(model):
    c = client(model, limits=ServeLimits(max_body_bytes=1000))

    def chunks():
        yield b'{"prompt": "'
        for _ in range(10_000):  # 1 MB in all, if the server read it
            yield b"a" * 100
        yield b'"}'

    r = c.post("/v1/completions", content=chunks(), headers={"content-type": "application/json"})
    openai_error(r, 413, code="request_too_large")
    small = c.post("/v1/completions", json={"prompt": "hi", "max_tokens": 1})
    assert small.status_code == 200


def test_parse_object_refuses_what_is_not_a_json_object():
    for raw in (b"[1, 2", b"\xff\xfe", b"[" * 100_000):
        with pytest.raises(APIError, match="not valid JSON"):
            parse_object(raw)
    with pytest.raises(APIError, match="must be a JSON object"):
        parse_object(b"[1, 2]")
    assert parse_object(b'{"a": 1}') == {"a": 1}


def test_a_large_body_is_parsed_off_the_event_loop_and_still_checked(model):
    c = client(model)
    r = c.post(
        "/v1/completions", content=b"[" + b"1," * 50_000 + b"1]", headers={"content-type": "application/json"}
    )
    openai_error(r, 400, code="invalid_json")


@pytest.mark.parametrize(
    "kw",
    [
        {"max_body_bytes": 0},
        {"max_n": -1},
        {"max_logprobs": True},
        {"max_prompts": 1.5},
        {"deadline_s": 0},
        {"deadline_s": float("nan")},
        {"deadline_s": float("inf")},
    ],
)
def test_limits_refuse_nonsense(kw):
    with pytest.raises(ConfigError):
        ServeLimits(**kw)


@pytest.mark.parametrize("which", ["model", "bpe_model"])
def test_max_token_chars_is_the_longest_decoded_token(which, request):
    tok = request.getfixturevalue(which).tokenizer
    assert max_token_chars(tok) == max(len(tok.decode([i])) for i in range(tok.vocab_size))
    assert char_limit(32, max_token_chars(tok)) == 32 * max_token_chars(tok)


def test_max_tokens_is_capped_by_the_limit(model):
    c = client(model, limits=ServeLimits(max_tokens=8))
    err = openai_error(
        c.post("/v1/completions", json={"prompt": "hi", "max_tokens": 9}), 400, param="max_tokens"
    )
    assert "--max-tokens" in err["message"]
    ok = c.post("/v1/completions", json={"prompt": "hi", "max_tokens": 8, "logprobs": 0, "temperature": 0})
    assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] <= 8


BAD_TEXT = [  # (raw body, the field named): escaped and raw surrogates, bytes that are not UTF-8
    (b'{"prompt": "hi \\ud800 there", "max_tokens": 1}', "prompt"),
    (b'{"prompt": "hi \xed\xa0\x80", "max_tokens": 1}', "prompt"),  # a surrogate encoded as UTF-8
    (b'{"prompt": "hi \xff", "max_tokens": 1}', "prompt"),
    (b'{"prompt": "caf\xc3", "max_tokens": 1}', "prompt"),  # a sequence cut short
    (b'{"prompt": ["ok", "\\udc80"], "max_tokens": 1}', "prompt[1]"),
    (b'{"prompt": "hi", "stop": ["ok", "\\ud800"], "max_tokens": 1}', "stop[1]"),
    (b'{"model": "\\ud800", "prompt": "hi"}', "model"),
    (b'{"messages": [{"role": "user", "content": "\\ud83d"}], "max_tokens": 1}', "messages[0].content"),
    (
        b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "\\udfff"}]}]}',
        "messages[0].content[0].text",
    ),
    (b'{"\\ud800": 1, "prompt": "hi"}', None),
]


@pytest.mark.parametrize("raw,field", BAD_TEXT)
@pytest.mark.parametrize("route", ["/v1/completions", "/v1/chat/completions", "/tokenize"])
def test_text_that_is_not_unicode_is_400_naming_the_field_never_500(model, raw, field, route):
    c = client(model)
    r = c.post(route, content=raw, headers={"content-type": "application/json"})
    err = openai_error(r, 400, param=field, code="invalid_text")
    assert "\n" not in err["message"] and "lone surrogate" in err["message"]
    assert err["message"].startswith(f"{field} is not valid text" if field else "a key is not valid text")


def test_valid_non_ascii_text_and_surrogate_pairs_still_pass(model):
    c = client(model)
    for raw in (b'{"prompt": "caf\xc3\xa9 \\ud83d\\ude00", "max_tokens": 1}', '{"prompt": "日本"}'.encode()):
        r = c.post("/v1/completions", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text
    utf16 = json.dumps({"prompt": "hi", "max_tokens": 1}).encode("utf-16")  # JSON's detected encodings stay
    assert (
        c.post("/v1/completions", content=utf16, headers={"content-type": "application/json"}).status_code
        == 200
    )
