"""lmleak.serve.fields: the typed readers refuse the wrong JSON kind and out-of-range values, naming the
field and never quoting the value."""

from __future__ import annotations

import json

import pytest

from lmleak.serve.errors import APIError
from lmleak.serve.fields import (
    bad_text,
    boolean,
    defaults_only,
    integer,
    kind_of,
    number,
    optional_integer,
    stops,
    stream_options,
    text,
)


def _refused(fn, *args, **kw) -> APIError:
    with pytest.raises(APIError) as e:
        fn(*args, **kw)
    assert e.value.status == 400
    return e.value


def test_integer_refuses_booleans_floats_strings_and_out_of_range():
    for value, code in (
        (True, "invalid_type"),
        (2.0, "invalid_type"),
        ("2", "invalid_type"),
        (0, "out_of_range"),
        (129, "out_of_range"),
    ):
        e = _refused(integer, {"n": value}, "n", default=1, lo=1, hi=128)
        assert e.param == "n" and e.code == code and repr(value) not in e.message.replace("(got", "")
    assert integer({"n": None}, "n", default=1, lo=1, hi=128) == 1
    assert optional_integer({}, "k", lo=0, hi=5) is None and optional_integer({"k": 0}, "k", lo=0, hi=5) == 0


def test_number_refuses_nan_and_inf_and_kinds():
    for value in (float("nan"), float("inf"), -1, 3, "1", True):
        _refused(number, {"t": value}, "t", default=1.0, lo=0.0, hi=2.0)
    assert number({"t": 1}, "t", default=1.0, lo=0.0, hi=2.0) == 1.0


def test_boolean_text_stops_and_stream_options():
    assert boolean({"b": True}, "b") is True and boolean({}, "b", default=True) is True
    _refused(boolean, {"b": 1}, "b")
    assert text({"s": "x"}, "s") == "x" and text({}, "s") is None
    _refused(text, {"s": 1}, "s")
    assert stops({"stop": ["a", "b"]}) == ("a", "b") and stops({}) == ()
    assert _refused(stops, {"stop": [1]}).code == "invalid_type"
    assert stream_options({"stream_options": {"include_usage": True}}, True) is True
    assert _refused(stream_options, {"stream_options": []}, True).code == "invalid_type"


def test_defaults_only_lets_neutral_values_through():
    defaults_only(
        {"top_p": 1, "presence_penalty": 0.0, "logit_bias": {}},
        {"top_p": 1, "presence_penalty": 0, "logit_bias": {}},
    )
    assert _refused(defaults_only, {"top_p": 0.9}, {"top_p": 1}).code == "unsupported_parameter"
    assert _refused(defaults_only, {"logit_bias": {"5": 100}}, {"logit_bias": {}}).param == "logit_bias"
    _refused(defaults_only, {"presence_penalty": False}, {"presence_penalty": 0})


def test_kind_of_names_json_kinds():
    assert [kind_of(v) for v in (None, True, 1, 1.5, "s", [], {})] == [
        "null",
        "a boolean",
        "an integer",
        "a number",
        "a string",
        "an array",
        "an object",
    ]


def _bad_text_oracle(body, path=None):
    """The obvious walk: every string (and key), depth first in order, checked char by char."""
    if isinstance(body, str):
        bad = [i for i, c in enumerate(body) if 0xD800 <= ord(c) <= 0xDFFF]
        return (path, "value", bad[0]) if bad else None
    if isinstance(body, dict):
        for k in body:
            bad = [i for i, c in enumerate(k) if 0xD800 <= ord(c) <= 0xDFFF]
            if bad:
                return (path, "key", bad[0])
        for k, v in body.items():
            found = _bad_text_oracle(v, f"{path}.{k}" if path else k)
            if found:
                return found
    if isinstance(body, list):
        for i, v in enumerate(body):
            found = _bad_text_oracle(v, f"{path or ''}[{i}]")
            if found:
                return found
    return None


def test_bad_text_names_the_first_field_a_lone_surrogate_is_in_as_the_obvious_walk_does():
    import random

    rng = random.Random(7)
    alphabet = ["a", "é", "日", "\U0001f600", "\ud800", "\udfff", "\udc80", " "]

    def leaf():
        return "".join(rng.choice(alphabet) if rng.random() < 0.15 else "x" for _ in range(rng.randint(0, 6)))

    def tree(depth):
        r = rng.random()
        if depth == 0 or r < 0.3:
            return rng.choice([leaf(), 1, None, True, 2.5])
        if r < 0.65:
            return [tree(depth - 1) for _ in range(rng.randint(0, 3))]
        return {leaf() if rng.random() < 0.2 else f"k{i}": tree(depth - 1) for i in range(rng.randint(0, 3))}

    found = 0
    for _ in range(400):
        body = {"prompt": tree(4), "messages": tree(3)}
        assert bad_text(body) == _bad_text_oracle(body), body
        found += bad_text(body) is not None
    assert 50 < found < 350  # both outcomes were exercised
    assert (
        bad_text(json.loads(r'{"messages": [{"content": "ok \ud83d\ude00"}]}')) is None
    )  # JSON joins a pair
    assert bad_text({"messages": [{"role": "user", "content": "ok \ud83d"}]}) == (
        "messages[0].content",
        "value",
        3,
    )
