"""holdout.json: written sorted, read back, the older train.json record, and bad files refused."""

from __future__ import annotations

import json

import pytest

from lmleak.data.holdout import HOLDOUT_FILE, Holdout, read_holdout, write_holdout
from lmleak.errors import DataFileError


def test_round_trip_sorts_the_users(tmp_path):
    write_holdout(tmp_path, Holdout(users=("u9", "u10", "u2"), fraction=0.25, seed=4, corpus="c.jsonl"))
    assert json.loads((tmp_path / HOLDOUT_FILE).read_text())["held_out_users"] == ["u10", "u2", "u9"]
    assert read_holdout(tmp_path) == Holdout(("u10", "u2", "u9"), 0.25, 4, "c.jsonl")


def test_older_models_record_the_users_in_train_json(tmp_path):
    (tmp_path / "train.json").write_text(
        json.dumps({"val_users": ["b", "a"], "config": {"val_fraction": 0.1, "seed": 7}})
    )
    assert read_holdout(tmp_path) == Holdout(("a", "b"), 0.1, 7, None)
    (tmp_path / "train.json").write_text(json.dumps({"config": {}}))
    assert read_holdout(tmp_path) is None


def test_no_record_for_a_file_a_name_or_none(tmp_path):
    f = tmp_path / "model.gguf"
    f.write_bytes(b"x")
    assert (
        read_holdout(f) is None and read_holdout(None) is None and read_holdout(tmp_path / "absent") is None
    )


@pytest.mark.parametrize(
    "content,message",
    [
        ("{", "not valid JSON"),
        ("[1]", "expected a JSON object"),
        ('{"held_out_users": [1, 2]}', "user id strings"),
    ],
)
def test_a_damaged_holdout_file_is_refused(tmp_path, content, message):
    (tmp_path / HOLDOUT_FILE).write_text(content)
    with pytest.raises(DataFileError, match=message):
        read_holdout(tmp_path)


def test_an_older_record_never_holds_out_a_trained_user(tmp_path):
    """A validation corpus that reused the training ids (the demo's second population) named trained people."""
    (tmp_path / "train.json").write_text(
        json.dumps({"train_users": ["u1", "u2"], "val_users": ["u2", "u3"], "config": {"seed": 1}})
    )
    assert read_holdout(tmp_path) == Holdout(("u3",), 0.0, 1, None)
