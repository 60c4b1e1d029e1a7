"""lmleak.serve.fields: the typed readers refuse the wrong JSON kind and out-of-range values, naming the
field and never quoting the value."""

from __future__ import annotations

import pytest

from lmleak.serve.errors import APIError
from lmleak.serve.fields import (
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
