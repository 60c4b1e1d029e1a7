"""The one JSONL reader: every side file, result file and synthetic data file goes through it, so a
bad line is reported the same way everywhere (``<file>:<line>: <reason>. Fix: ...``).

Corpora are read by :mod:`lmleak.data.loaders`, which adds per-row validation and
``skip_bad_rows`` on top of the same line rules. It sits at the bottom of the layers (beside
:mod:`lmleak.runs`) because models, data and the methods all read JSONL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lmleak.errors import DataFileError

HINT = "write one JSON object per line (JSONL)"


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
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataFileError(
                    f"not valid JSON ({e.msg} at column {e.colno})", path=p, line=n, hint=hint
                ) from None
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
