"""Reading the small side files (canaries, member lists, subjects): one place for the errors."""

from __future__ import annotations

from pathlib import Path

from lmleak.errors import DataFileError


def read_side_file(path: str | Path, *, hint: str) -> str:
    """The UTF-8 text of a side file, or a :class:`DataFileError` naming it and the fix.

    Example:
        >>> read_side_file("/no/such/canaries.jsonl", hint="give canaries.jsonl")
        Traceback (most recent call last):
        ...
        lmleak.errors.DataFileError: /no/such/canaries.jsonl: file not found. Fix: give canaries.jsonl
    """
    p = Path(path)
    if not p.is_file():
        raise DataFileError("file not found", path=p, hint=hint)
    try:
        # a byte-order mark (Notepad's "UTF-8 with BOM") is not text: the corpus loader drops it too
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataFileError(
            f"not UTF-8 text (byte {e.start})", path=p, hint="save the file as UTF-8"
        ) from None
    except OSError as e:
        raise DataFileError(f"cannot read the file: {e.strerror or e}", path=p, hint=hint) from None
