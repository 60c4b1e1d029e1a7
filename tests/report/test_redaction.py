"""The redaction whitelist and key sources (lmleak.report.redaction), without a model."""

from __future__ import annotations

import hashlib
import hmac

import pandas as pd
import pytest

from lmleak.errors import ConfigError
from lmleak.report.redaction import KEY_ENV, Redactor, redact_table, redactor_from


def test_unknown_and_text_columns_are_dropped_numbers_and_labels_kept():
    df = pd.DataFrame(
        {
            "user_id": ["u1", "u2"],
            "sequence_id": ["ab", "cd"],
            "text": ["my pin 1234", "call 555-0100"],
            "a_new_text_column": ["Megan Chang", "x"],
            "contexts": [["hello"], ["there"]],
            "user_ids": [["u1"], ["u2"]],
            "start": [3, 4],
            "perplexity": [1.5, 2.0],
            "unique": [True, False],
            "pii_types": [["PHONE"], []],
            "context_lengths": [[1, 2], [3]],
        }
    )
    out = redact_table(df, Redactor(b"k" * 32, "test"))
    assert list(out.columns) == [
        "user_id",
        "sequence_id",
        "start",
        "perplexity",
        "unique",
        "pii_types",
        "context_lengths",
    ]
    # the slow obvious oracle: HMAC-SHA256 of "column:value" by hand
    expect = hmac.new(b"k" * 32, b"user_id:u1", hashlib.sha256).hexdigest()[:32]
    assert out["user_id"][0] == expect
    assert out["sequence_id"][0] != Redactor(b"k" * 32, "t").hash(
        "ab", kind="user_id"
    )  # ids keyed per column


def test_key_sources(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    assert redactor_from(None).source == "random, discarded"
    assert redactor_from(None).key != redactor_from(None).key
    monkeypatch.setenv(KEY_ENV, "e" * 20)
    assert redactor_from(None).key == b"e" * 20
    monkeypatch.setenv(KEY_ENV, "short")
    with pytest.raises(ConfigError, match=KEY_ENV):
        redactor_from(None)
    key = tmp_path / "k"
    key.write_text("f" * 32 + "\n")
    assert redactor_from(key).key == b"f" * 32  # the file wins over the environment, newline stripped
    with pytest.raises(ConfigError, match="cannot read"):
        redactor_from(tmp_path / "missing")
    with pytest.raises(ConfigError, match="inside the run"):
        redactor_from(key, run_dir=tmp_path)
    r = redactor_from(key)
    assert "f" * 8 not in repr(r) and "f" * 8 not in str(r.describe())
