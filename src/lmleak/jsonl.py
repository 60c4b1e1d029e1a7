"""The one JSONL reader: every side file, result file and synthetic data file goes through it, so a
bad line is reported the same way everywhere (``<file>:<line>: <reason>. Fix: ...``).

Every JSON input is parsed by :func:`loads` (here, the corpus loader, the subjects and ``me.json``
reader, ``holdout.json``), which adds three rules :func:`json.loads` lacks, each reported as a
:class:`JSONRuleError` (a :class:`json.JSONDecodeError`, so every reader names the file, the line and
the rule as it does for any bad JSON):

- **no duplicate keys**: ``{"user_id": "alice", "user_id": "bob"}`` is refused, never "the last wins"
  (which would make ``user_id`` whatever the last key says);
- **bounded nesting**: a row nested deeper than Python's parser can go (``[[[[...`` 100,000 deep) is
  refused in one line, not a ``RecursionError``;
- **no lone surrogates**: ``"\\ud800"`` without its pair is not text (it cannot be written as UTF-8);
  a string holding one is refused.

Corpora are read by :mod:`lmleak.data.loaders`, which adds per-row validation and
``skip_bad_rows`` on top of the same line rules. It sits at the bottom of the layers (beside
:mod:`lmleak.runs`) because models, data and the methods all read JSONL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lmleak.errors import DataFileError

HINT = "write one JSON object per line (JSONL)"
#: An escaped UTF-16 surrogate not in a pair: a high one not followed by a low one, or a low one alone.
_LONE_SURROGATE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


class JSONRuleError(json.JSONDecodeError):
    """JSON that parses but breaks one of :func:`loads`'s rules (``msg`` names the rule, ``hint`` the fix)."""

    def __init__(self, msg: str, doc: str, pos: int, hint: str) -> None:
        super().__init__(msg, doc, pos)
        self.hint = hint

    def __reduce__(self) -> Any:  # picklable (a Ray worker may raise it)
        return (type(self), (self.msg, self.doc, self.pos, self.hint))


def bad_json(e: json.JSONDecodeError, hint: str) -> tuple[str, str]:
    """``(reason, fix)`` of a line :func:`loads` refused: the rule broken, or "not valid JSON".

    Example:
        >>> try:
        ...     loads('{"a": 1, "a": 2}')
        ... except json.JSONDecodeError as e:
        ...     bad_json(e, "write JSON")
        ("duplicate key 'a' at column 10", "keep one 'a' per object")
    """
    if isinstance(e, JSONRuleError):
        return f"{e.msg} at column {e.colno}", e.hint
    return f"not valid JSON ({e.msg} at column {e.colno})", hint


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


class _Duplicate(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _deep_column(text: str, limit: int) -> int:
    """The 0-based index where the nesting of ``text`` first goes deeper than ``limit`` (brackets in
    strings ignored); only called after the parser gave up."""
    depth, in_str, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_str:
            escaped, in_str = (not escaped and ch == "\\"), in_str and (escaped or ch != '"')
            continue
        if ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return i
        elif ch in "]}":
            depth -= 1
    return 0


def _strings(obj: Any) -> Iterator[str]:
    """Every string (keys too) in a parsed JSON value, without recursion."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            yield x
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)


def loads(text: str) -> Any:
    """:func:`json.loads` with the module's three rules (duplicate keys, nesting, lone surrogates).

    Raises:
        json.JSONDecodeError: not JSON; :class:`JSONRuleError` (a subclass) for a broken rule.

    Example:
        >>> loads('{"user_id": "ann", "text": "hi"}')
        {'user_id': 'ann', 'text': 'hi'}
        >>> loads('{"user_id": "ann", "user_id": "bob"}')
        Traceback (most recent call last):
        ...
        lmleak.jsonl.JSONRuleError: duplicate key 'user_id': line 1 column 20 (char 19)
        >>> loads('{"text": "\\\\ud800"}')
        Traceback (most recent call last):
        ...
        lmleak.jsonl.JSONRuleError: a lone UTF-16 surrogate \\ud800 (half of a character: not text): line 1 column 11 (char 10)
    """
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates)
    except _Duplicate as e:
        quoted = json.dumps(e.key)
        first = text.find(quoted)
        pos = text.find(quoted, first + 1) if first >= 0 else -1
        raise JSONRuleError(
            f"duplicate key {e.key!r}", text, max(pos, 0), f"keep one {e.key!r} per object"
        ) from None
    except RecursionError:
        limit = 500  # a safe bound below the interpreter's; the parser failed somewhere deeper
        pos = _deep_column(text, limit)
        raise JSONRuleError(
            f"nested more than {limit} levels deep", text, pos, "flatten the row (a few levels suffice)"
        ) from None
    if "\\u" in text and any(_is_lone(s) for s in _strings(obj)):
        m = _LONE_SURROGATE.search(text)
        pos = m.start() if m else 0
        what = f"a lone UTF-16 surrogate {m.group(0)}" if m else "a lone UTF-16 surrogate"
        raise JSONRuleError(
            f"{what} (half of a character: not text)", text, pos, "write the whole character, or remove it"
        ) from None
    return obj


def _is_lone(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def iter_jsonl(path: str | Path, *, hint: str = HINT) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL file, streamed.

    Raises:
        DataFileError: the file is missing or unreadable, or a line is not UTF-8, not JSON, or not
            a JSON object; the message names the file and the line.

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "x.jsonl")
        >>> _ = open(p, "w").write('{"a": 1}\\n\\n{"a": 2}\\n[3]\\n')
        >>> rows = iter_jsonl(p)
        >>> next(rows), next(rows)
        ((1, {'a': 1}), (3, {'a': 2}))
        >>> try:
        ...     next(rows)
        ... except DataFileError as e:
        ...     print(str(e).split("x.jsonl")[1])
        :4: not a JSON object. Fix: write one JSON object per line (JSONL)
    """
    p = Path(path)
    if not p.is_file():
        raise DataFileError("file not found", path=p, hint=hint)
    try:
        fh = open(p, "rb")  # noqa: SIM115 - closed below; bytes so a bad line names its own number
    except OSError as e:
        raise DataFileError(f"cannot read the file: {e.strerror or e}", path=p, hint=hint) from None
    with fh:
        for n, raw in enumerate(fh, start=1):
            try:
                # the first line may start with a byte-order mark, which the corpus loader accepts too
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise DataFileError(
                    f"not UTF-8 text (byte {e.start})", path=p, line=n, hint="save the file as UTF-8"
                ) from None
            if not line.strip():
                continue
            try:
                obj = loads(line)
            except json.JSONDecodeError as e:
                reason, fix = bad_json(e, hint)
                raise DataFileError(reason, path=p, line=n, hint=fix) from None
            if not isinstance(obj, dict):
                raise DataFileError("not a JSON object", path=p, line=n, hint=hint)
            yield n, obj


def read_jsonl(path: str | Path, *, hint: str = HINT) -> list[dict[str, Any]]:
    """Every object of a JSONL file (see :func:`iter_jsonl` for the errors).

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "x.jsonl")
        >>> _ = open(p, "w").write('{"a": 1}\\n{"a": 2}\\n')
        >>> read_jsonl(p)
        [{'a': 1}, {'a': 2}]
    """
    return [obj for _, obj in iter_jsonl(path, hint=hint)]
