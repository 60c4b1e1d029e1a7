"""lmleak.jsonl: the one JSONL reader names the file and line of every bad line."""

from __future__ import annotations

import pytest

from lmleak.errors import DataFileError
from lmleak.jsonl import iter_jsonl, read_jsonl


def test_rows_keep_their_file_line_numbers_and_blank_lines_are_skipped(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1}\n\n   \n{"a": 2}\n', encoding="utf-8")
    assert list(iter_jsonl(p)) == [(1, {"a": 1}), (4, {"a": 2})]
    assert read_jsonl(p) == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        (b'{"a": 1}\n{"a": \n', 2, "not valid JSON"),
        (b'{"a": 1}\n\n[1, 2]\n', 3, "not a JSON object"),
        (b'{"a": 1}\n{"a": "\xff"}\n', 2, "not UTF-8"),
    ],
)
def test_a_bad_line_is_reported_with_file_and_line(tmp_path, content, line, reason):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(content)
    with pytest.raises(DataFileError) as e:
        read_jsonl(p, hint="fix it")
    assert (e.value.path, e.value.line) == (str(p), line)
    assert reason in e.value.reason and str(e.value).startswith(f"{p}:{line}: ")


def test_a_missing_file_names_the_file_and_the_hint(tmp_path):
    with pytest.raises(DataFileError, match=r"nope\.jsonl: file not found\. Fix: give canaries"):
        read_jsonl(tmp_path / "nope.jsonl", hint="give canaries")


def test_a_byte_order_mark_on_the_first_line_is_dropped(tmp_path):
    p = tmp_path / "members.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"text": "a"}\n{"text": "b"}\n')
    assert list(iter_jsonl(p)) == [(1, {"text": "a"}), (2, {"text": "b"})]
    p.write_bytes(b'{"text": "a"}\n\xef\xbb\xbf{"text": "b"}\n')  # only at the file's start
    with pytest.raises(DataFileError, match=":2: not valid JSON"):
        list(iter_jsonl(p))
