"""Side files: text back, or a DataFileError naming the file and the fix."""

from __future__ import annotations

import pytest

from lmleak.data.sidefiles import read_side_file
from lmleak.errors import DataFileError


def test_text_or_an_error_naming_the_file(tmp_path):
    ok = tmp_path / "canaries.jsonl"
    ok.write_text('{"secret": "café"}\n', encoding="utf-8")
    assert read_side_file(ok, hint="h") == '{"secret": "café"}\n'
    with pytest.raises(DataFileError, match="file not found. Fix: give members") as e:
        read_side_file(tmp_path / "members.txt", hint="give members")
    assert "members.txt" in str(e.value)
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"caf\xe9")
    with pytest.raises(DataFileError, match=r"not UTF-8 text \(byte 3\)"):
        read_side_file(bad, hint="h")
    with pytest.raises(DataFileError, match="file not found"):
        read_side_file(tmp_path, hint="h")  # a folder is not a side file


def test_a_byte_order_mark_is_dropped_as_the_corpus_loader_drops_it(tmp_path):
    """Notepad saves "UTF-8 with BOM": a side file saved so kept U+FEFF in its first line (a JSON
    side file was refused as 'Unexpected UTF-8 BOM') while the corpus loaded."""
    from lmleak.data.loaders import load_corpus

    p = tmp_path / "me.json"
    p.write_bytes(b"\xef\xbb\xbf" + '{"name": "田中 明美"}\n'.encode())
    assert read_side_file(p, hint="h") == '{"name": "田中 明美"}\n'
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(b"\xef\xbb\xbf" + b'{"user_id": "u1", "text": "hello"}\n')
    assert [d.text for d in load_corpus(corpus)] == ["hello"]  # the loader this matches
