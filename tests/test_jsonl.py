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


# ---------------------------------------------------------------------- issue 33: rules json.loads lacks
DUP = '{"text": "hello", "user_id": "alice", "user_id": "bob"}'
DEEP = "[" * 100_000 + "]" * 100_000
LONE = '{"text": "half \\ud83d a character", "user_id": "alice"}'
RULES = [(DUP, "duplicate key 'user_id'", "keep one 'user_id'"), (DEEP, "nested more than", "flatten"),
         (LONE, "lone UTF-16 surrogate \\ud83d", "write the whole character")]  # fmt: skip


def _readers():
    """Every reader of a JSON input: (name, file name, read(path), the file's first good line)."""
    from lmleak.attacks.exposure import read_canaries
    from lmleak.attacks.mia_texts import read_texts, read_texts_and_users
    from lmleak.data.loaders import load_corpus
    from lmleak.probe.subjects import read_subjects

    good = {"text": "hi there", "user_id": "u1", "secret": "123", "prefix": "my pin is", "name": "Ann Lee"}
    return [
        ("corpus", "corpus.jsonl", load_corpus, good),
        ("members", "members.jsonl", read_texts, good),
        ("non-members", "non_members.jsonl", read_texts_and_users, good),
        ("canaries", "canaries.jsonl", read_canaries, good),
        ("subjects", "subjects.jsonl", read_subjects, {"name": "Ann Lee", "phone": "(555) 555-0100"}),
    ]


@pytest.mark.parametrize("row, rule, fix", RULES, ids=["duplicate-key", "nested-100000", "lone-surrogate"])
@pytest.mark.parametrize("reader", range(5), ids=[r[0] for r in _readers()])
def test_every_json_input_refuses_a_broken_rule_naming_file_line_and_rule(tmp_path, reader, row, rule, fix):
    """A duplicate key (the last would win: user_id 'bob'), a row nested 100,000 deep, a lone surrogate:
    each reader of a JSON input says file:line, the rule and the fix (an LmleakError: exit 2), never
    "unexpected ... (a bug)" and never "the last key wins"."""
    import json

    from lmleak.errors import InputError

    _, name, read, good = _readers()[reader]
    p = tmp_path / name
    p.write_text(json.dumps(good) + "\n" + row + "\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        read(p)
    assert str(e.value).startswith(f"{p}:2: "), str(e.value)
    assert rule in str(e.value) and fix in str(e.value)


@pytest.mark.parametrize("row, rule, fix", RULES, ids=["duplicate-key", "nested-100000", "lone-surrogate"])
def test_me_json_and_holdout_json_refuse_a_broken_rule(tmp_path, row, rule, fix):
    """One pretty-printed object (me.json) and a model's holdout.json: the same rules, the line named."""
    from lmleak.data.holdout import read_holdout
    from lmleak.probe.subjects import read_subjects

    me = tmp_path / "me.json"
    me.write_text('{\n  "name": "Ann Lee",\n  "name": "Bob Ray"\n}\n' if row is DUP else row + "\n")
    with pytest.raises(DataFileError) as e:
        read_subjects(me)
    if row is DUP:
        assert str(e.value).startswith(f"{me}:3: duplicate key 'name'"), str(e.value)
    else:
        assert rule in str(e.value) and str(e.value).startswith(f"{me}:1: ")
    model = tmp_path / "model"
    model.mkdir()
    held = '{"held_out_users": ["u1"], "held_out_users": ["u2"]}' if row is DUP else row
    (model / "holdout.json").write_text(held + "\n")
    with pytest.raises(DataFileError) as e:
        read_holdout(model)
    assert str(e.value).startswith(f"{model / 'holdout.json'}:1: ")
    assert ("keep one 'held_out_users'" if row is DUP else fix) in str(e.value)


def test_valid_surrogate_pairs_and_escapes_still_load():
    """A surrogate *pair* (an emoji written as two escapes), an escaped backslash before 'ud800', and
    nesting of 200 levels are valid and load as before."""
    from lmleak.jsonl import loads

    assert loads('{"t": "\\ud83d\\ude00"}') == {"t": "\U0001f600"}
    assert loads('{"t": "\\\\ud800"}') == {"t": "\\ud800"}
    assert loads("[" * 200 + "]" * 200) == eval("[" * 200 + "]" * 200)
