"""Typed readers for the fields of a request body: each returns the value or refuses with a 400 that
names the field (``param``) and the rule, never the value itself.

JSON booleans are not integers here (``"n": true`` is refused, although Python's ``bool`` is an
``int``), and integers must be integers (``"max_tokens": 1e9`` is a float and refused).

>>> integer({"n": 2}, "n", default=1, lo=1, hi=128)
2
>>> integer({}, "n", default=1, lo=1, hi=128)
1
>>> number({"temperature": 0}, "temperature", default=1.0, lo=0.0, hi=2.0)
0.0
>>> stops({"stop": "\\n"})
('\\n',)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from lmleak.serve.errors import refuse

MAX_STOPS = 4  # the OpenAI API's limit on stop sequences


_KINDS = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (list, "an array"),
)


def kind_of(value: Any) -> str:
    """The JSON kind of ``value`` (for messages: the type, never the value)."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    return next((name for t, name in _KINDS if isinstance(value, t)), type(value).__name__)


def _wrong_type(key: str, want: str, value: Any) -> None:
    refuse(400, f"{key} must be {want} (got {kind_of(value)})", param=key, code="invalid_type")


def is_int(value: Any) -> bool:
    """A JSON integer (``true``/``false`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def integer(body: Mapping[str, Any], key: str, *, default: int, lo: int, hi: int, why: str = "") -> int:
    """``body[key]`` as an integer in ``[lo, hi]`` (``default`` when absent or null)."""
    value = body.get(key)
    if value is None:
        return default
    if not is_int(value):
        _wrong_type(key, "an integer", value)
    if not lo <= value <= hi:
        refuse(400, f"{key} must be between {lo} and {hi}{why}", param=key, code="out_of_range")
    return int(value)


def optional_integer(body: Mapping[str, Any], key: str, *, lo: int, hi: int, why: str = "") -> int | None:
    """:func:`integer`, or None when the field is absent or null."""
    if body.get(key) is None:
        return None
    return integer(body, key, default=lo, lo=lo, hi=hi, why=why)


def number(body: Mapping[str, Any], key: str, *, default: float, lo: float, hi: float) -> float:
    """``body[key]`` as a finite number in ``[lo, hi]``."""
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _wrong_type(key, "a number", value)
    if not (math.isfinite(value) and lo <= value <= hi):
        refuse(400, f"{key} must be a number between {lo:g} and {hi:g}", param=key, code="out_of_range")
    return float(value)


def boolean(body: Mapping[str, Any], key: str, *, default: bool = False) -> bool:
    """``body[key]`` as a JSON boolean."""
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        _wrong_type(key, "true or false", value)
    return bool(value)


def text(body: Mapping[str, Any], key: str) -> str | None:
    """``body[key]`` as a string (None when absent or null)."""
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        _wrong_type(key, "a string", value)
    return value


def stops(body: Mapping[str, Any]) -> tuple[str, ...]:
    """``stop``: null, a string or an array of up to four non-empty strings."""
    value = body.get("stop")
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        _wrong_type("stop", "a string or an array of strings", value)
    if len(items) > MAX_STOPS:
        refuse(400, f"stop takes at most {MAX_STOPS} sequences", param="stop", code="out_of_range")
    if any(not s for s in items):
        refuse(400, "stop sequences must not be empty", param="stop", code="invalid_value")
    return tuple(items)


def defaults_only(body: Mapping[str, Any], fields: Mapping[str, Any]) -> None:
    """Refuse sampling options this server does not implement unless they hold their neutral value
    (``top_p: 1``, ``presence_penalty: 0`` …): an option is never silently ignored."""
    for key, neutral in fields.items():
        value = body.get(key)
        if value is None or value == neutral and not isinstance(value, bool):
            continue
        refuse(
            400,
            f"{key} is not supported by lmleak serve (leave it out, or set it to {neutral!r})",
            param=key,
            code="unsupported_parameter",
        )


def stream_options(body: Mapping[str, Any], streaming: bool) -> bool:
    """``stream_options.include_usage`` (only with ``stream: true``, as the OpenAI API requires)."""
    value = body.get("stream_options")
    if value is None:
        return False
    if not streaming:
        refuse(
            400,
            "stream_options is only allowed with stream: true",
            param="stream_options",
            code="invalid_value",
        )
    if not isinstance(value, dict):
        _wrong_type("stream_options", "an object", value)
    return boolean(value, "include_usage")


def _bad_at(s: str) -> int | None:
    """The index of the first character of ``s`` UTF-8 cannot encode (a lone surrogate), or None."""
    if s.isascii():
        return None
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        return int(e.start)
    return None


def bad_text(body: Any) -> tuple[str | None, str, int] | None:
    """The first string of a parsed JSON body (or key) that is not valid Unicode text: ``(field, what,
    character)``, or None. A lone surrogate (``"\\ud800"``) or a byte that is not UTF-8 (read with
    ``surrogateescape``, so it is one) cannot be tokenised or encoded back. ``field`` names the place
    as the refusals do (``messages[0].content``; None for a key of the body itself).

    >>> bad_text({"prompt": ["ok", "a\\udc80"]}), bad_text({"stop": ["x"], "n": 1})
    (('prompt[1]', 'value', 1), None)
    """
    stack: list[tuple[str | None, Any]] = [(None, body)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            at = _bad_at(value)
            if at is not None:
                return path, "value", at
        elif isinstance(value, dict):
            items = list(value.items())
            for key, _ in items:
                at = _bad_at(key)
                if at is not None:
                    return path, "key", at
            stack.extend((f"{path}.{k}" if path else k, v) for k, v in reversed(items))
        elif isinstance(value, list):
            stack.extend((f"{path or ''}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None
