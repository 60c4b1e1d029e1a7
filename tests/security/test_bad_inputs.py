"""Bad data and model files fail closed (issue 16, item 9): through the real CLI, each gives exit
status 2, one line that names the file (and line/field where there is one) and the fix, no
traceback, and no run directory.

The corpus side feeds ``lmleak report`` malformed JSONL/CSV/Parquet, wrong encodings, empty and
huge fields, NUL characters, missing and extra columns; the model side feeds it random-bytes and
truncated safetensors (bare, in an lmleak folder, in a Hugging Face folder), a ``.gguf`` that is
not one, a pickle checkpoint without ``--allow-pickle`` and broken model descriptions. Inputs that
are unusual but valid (a UTF-8 BOM, a 300 kB CSV field, extra columns in the header) must load.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.loaders import load_corpus
from lmleak.errors import CorpusError

ROWS = [
    {"user_id": "u1", "doc_id": "d1", "text": "hello my name is ada and my phone is 555 0100"},
    {"user_id": "u2", "doc_id": "d2", "text": "thank you very much for the call today"},
    {"user_id": "u1", "doc_id": "d3", "text": "please call me back at 555 0199 thank you"},
]
WIDE = {"COLUMNS": "400"}  # rich wraps at the terminal width; one line means one line


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _csv(rows, header=("user_id", "doc_id", "text")) -> bytes:
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    for r in rows:
        w.writerow(r)
    return buf.getvalue().encode()


def _parquet(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path)


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    root = tmp_path_factory.mktemp("good")
    corpus = root / "corpus.jsonl"
    corpus.write_bytes(_jsonl(ROWS))
    return corpus


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    texts = [r["text"] for r in ROWS]
    tok = build_tokenizer(texts, kind="word", vocab_size=100)
    module = new_small_gpt(len(tok), SmallGPTConfig(n_positions=32, n_embd=16, n_layer=1, n_head=2), seed=0)
    return save_small_model(module, tok, tmp_path_factory.mktemp("model") / "m")


def _fails_closed(args: list[str], run: Path, *names: str) -> str:
    res = CliRunner().invoke(app, args, env=WIDE)
    out = res.output.strip()
    assert res.exit_code == 2, out
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in out
    assert out.startswith("error:") and "\n" not in out, out  # one line
    for name in names:
        assert name in out, (name, out)
    assert not run.exists(), "a failed command left output behind"
    return out


# ------------------------------------------------------------------ corpus side
def _bad_corpora(root: Path) -> dict[str, tuple[Path, list[str]]]:
    """name -> (corpus file, strings its error must contain)."""
    cases: dict[str, tuple[Path, list[str]]] = {}

    def add(name: str, suffix: str, data: bytes, *expect: str) -> None:
        p = root / f"{name}{suffix}"
        p.write_bytes(data)
        cases[name] = (p, [p.name, *expect])

    add("invalid-json", ".jsonl", _jsonl(ROWS[:1]) + b'{"user_id": "u9", "text": \n', ":2:", "invalid JSON")
    add(
        "latin1",
        ".jsonl",
        _jsonl(ROWS[:1]) + '{"user_id": "u9", "text": "café"}\n'.encode("latin-1"),
        ":2:",
        "UTF-8",
    )
    add("utf16-bom", ".jsonl", _jsonl(ROWS).decode().encode("utf-16"), ":1:", "UTF-16")
    add("utf16-csv", ".csv", _csv([list(r.values()) for r in ROWS]).decode().encode("utf-16"), "UTF-16")
    add("latin1-csv", ".csv", _csv([["u1", "d1", "café"]]).decode().encode("latin-1"), "UTF-8")
    add("empty-text", ".jsonl", _jsonl([*ROWS, {"user_id": "u3", "text": "  "}]), ":4:", "'text'", "empty")
    add("empty-user", ".jsonl", _jsonl([{"user_id": "", "text": "hi"}]), ":1:", "'user_id'")
    add("empty-file", ".jsonl", b"", "no documents")
    add("blank-lines", ".jsonl", b"\n\n  \n", "no documents")
    add("nul-escaped", ".jsonl", _jsonl([{"user_id": "u1", "text": "a\x00b"}]), ":1:", "'text'", "NUL")
    add("nul-raw", ".jsonl", b'{"user_id": "u1", "text": "a\x00b"}\n', ":1:")
    add("nul-csv", ".csv", _csv([["u1", "d1", "a\x00b"]]), ":2:", "NUL")
    add("huge-user-id", ".jsonl", _jsonl([{"user_id": "u" * 100_000, "text": "hi"}]), ":1:", "'user_id'")
    add("not-an-object", ".jsonl", b'["u1", "hello"]\n', ":1:", "object")
    add("text-not-string", ".jsonl", _jsonl([{"user_id": "u1", "text": 5}]), ":1:", "'text'", "string")
    add(
        "missing-text-column",
        ".csv",
        _csv([["u1", "d1", "x"]], header=("user_id", "doc_id", "body")),
        "'text'",
        "body",
    )
    add("extra-field-in-row", ".csv", _csv([["u1", "d1", "hi", "surplus"]]), ":2:", "fields")
    add("duplicate-doc-id", ".jsonl", _jsonl([ROWS[0], ROWS[0]]), ":2:", "duplicate")
    # issue 33: a duplicate key, a row nested 100,000 deep, a lone surrogate: the line and the rule
    dup = b'{"user_id": "alice", "text": "hi there", "user_id": "bob"}\n'
    add("duplicate-key", ".jsonl", _jsonl(ROWS[:1]) + dup, ":2:", "duplicate key 'user_id'", "keep one")
    add(
        "nested-100000", ".jsonl", _jsonl(ROWS[:1]) + b"[" * 100_000 + b"]" * 100_000 + b"\n", ":2:", "nested"
    )
    lone = b'{"user_id": "u9", "text": "half \\ud800 a character"}\n'
    add("lone-surrogate", ".jsonl", _jsonl(ROWS[:2]) + lone, ":3:", "lone UTF-16 surrogate \\ud800")
    add("csv-no-header", ".csv", b"", "empty")
    add("unknown-extension", ".txt", b"hello\n", "extension")
    add("parquet-random", ".parquet", os.urandom(256), "Parquet")
    good_pq = root / "_good.parquet"
    _parquet(good_pq, pa.Table.from_pylist(ROWS * 200))
    data = good_pq.read_bytes()
    add("parquet-truncated", ".parquet", data[: len(data) // 2], "Parquet")
    add("parquet-footer-only", ".parquet", data[:4] + data[-8:], "Parquet")
    p = root / "parquet-missing-user.parquet"
    _parquet(p, pa.table({"text": ["a", "b"]}))
    cases["parquet-missing-user"] = (p, [p.name, "'user_id'"])
    p = root / "parquet-int-text.parquet"
    _parquet(p, pa.table({"user_id": ["u1"], "text": [7]}))
    cases["parquet-int-text"] = (p, [p.name, "'text'"])
    return cases


CORPUS_CASES = [
    "invalid-json", "latin1", "utf16-bom", "utf16-csv", "latin1-csv", "empty-text", "empty-user", "empty-file",
    "blank-lines", "nul-escaped", "nul-raw", "nul-csv", "huge-user-id", "not-an-object", "text-not-string",
    "missing-text-column", "extra-field-in-row", "duplicate-doc-id", "csv-no-header", "unknown-extension",
    "parquet-random", "parquet-truncated", "parquet-footer-only", "parquet-missing-user", "parquet-int-text",
    "duplicate-key", "nested-100000", "lone-surrogate",
]  # fmt: skip


@pytest.fixture(scope="module")
def bad_corpora(tmp_path_factory):
    return _bad_corpora(tmp_path_factory.mktemp("bad-corpora"))


@pytest.mark.parametrize("case", CORPUS_CASES)
def test_bad_corpus_fails_closed(bad_corpora, good, tmp_path, case):
    path, expect = bad_corpora[case]
    run = tmp_path / "run"
    _fails_closed(
        ["report", "--model", f"fake:{good}", "--corpus", str(path), "--out", str(run), "--quiet"],
        run,
        *expect,
    )


def test_every_bad_corpus_case_is_tested(bad_corpora):
    assert sorted(bad_corpora) == sorted(CORPUS_CASES)


@pytest.mark.parametrize(
    "name, data",
    [
        ("utf8-bom.jsonl", b"\xef\xbb\xbf" + _jsonl(ROWS)),
        ("utf8-bom.csv", b"\xef\xbb\xbf" + _csv([list(r.values()) for r in ROWS])),
        ("huge-field.csv", _csv([["u1", "d-long", "word " * 60_000], *[list(r.values()) for r in ROWS]])),
        (
            "extra-header-column.csv",
            _csv([[*r.values(), "x"] for r in ROWS], header=("user_id", "doc_id", "text", "label")),
        ),
        ("crlf.jsonl", _jsonl(ROWS).replace(b"\n", b"\r\n")),
    ],
)
def test_unusual_but_valid_corpora_load(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    corpus = load_corpus(p)
    assert len(corpus) >= len(ROWS)
    assert {d.user_id for d in corpus} >= {"u1", "u2"}


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.binary(max_size=300), ext=st.sampled_from([".jsonl", ".csv", ".parquet"]))
def test_arbitrary_bytes_load_or_raise_a_corpus_error(tmp_path, data, ext):
    p = tmp_path / f"fuzz{ext}"
    p.write_bytes(data)
    try:
        corpus = load_corpus(p)
    except CorpusError as e:
        assert p.name in str(e) and "\n" not in str(e)
    else:
        assert all(d.text.strip() and "\x00" not in d.text for d in corpus)


# ------------------------------------------------------------------ model side
def _bad_models(root: Path, small: Path) -> dict[str, tuple[Path, list[str], list[str]]]:
    """name -> (model spec path, strings the error must contain, extra CLI args)."""
    import shutil

    cases: dict[str, tuple[Path, list[str], list[str]]] = {}
    weights = (small / "model.safetensors").read_bytes()

    def folder(name: str, mutate) -> Path:
        d = root / name
        shutil.copytree(small, d)
        mutate(d)
        return d

    p = root / "random.safetensors"
    p.write_bytes(os.urandom(4096))
    cases["bare-random-safetensors"] = (p, [p.name], [])
    d = folder(
        "lmleak-random-weights", lambda d: (d / "model.safetensors").write_bytes(os.urandom(len(weights)))
    )
    cases["lmleak-random-weights"] = (d, [d.name, "safetensors"], [])
    d = folder(
        "lmleak-truncated", lambda d: (d / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    )
    cases["lmleak-truncated"] = (d, [d.name, "safetensors"], [])
    d = folder("lmleak-no-weights", lambda d: (d / "model.safetensors").unlink())
    cases["lmleak-no-weights"] = (d, [d.name, "model.safetensors"], [])
    d = folder("lmleak-bad-manifest", lambda d: (d / "lmleak_model.json").write_text("{not json"))
    cases["lmleak-bad-manifest"] = (d, [d.name, "JSON"], [])

    def hf_truncated(d: Path) -> None:
        (d / "lmleak_model.json").unlink()
        (d / "model.safetensors").write_bytes(weights[: len(weights) // 3])

    d = folder("hf-truncated", hf_truncated)
    cases["hf-truncated"] = (d, [d.name], [])

    def hf_pickle(d: Path) -> None:
        import torch

        (d / "lmleak_model.json").unlink()
        (d / "model.safetensors").unlink()
        torch.save({"w": torch.zeros(1)}, d / "pytorch_model.bin")

    d = folder("hf-pickle", hf_pickle)
    cases["hf-pickle"] = (d, [d.name, "--allow-pickle"], [])
    p = root / "fake.gguf"
    p.write_bytes(b"GGUF" + os.urandom(512))
    cases["not-a-gguf"] = (p, [p.name, "GGUF"], [])
    p = root / "text.gguf"
    p.write_text("this is not a model\n")
    cases["text-gguf"] = (p, [p.name, "GGUF"], [])
    p = root / "model.pt"
    import torch

    torch.save({"w": torch.zeros(1)}, p)
    cases["bare-pickle"] = (p, [p.name], [])
    d = root / "empty-folder"
    d.mkdir()
    cases["empty-folder"] = (d, [d.name, "not a model"], [])
    return cases


MODEL_CASES = [
    "bare-random-safetensors", "lmleak-random-weights", "lmleak-truncated", "lmleak-no-weights",
    "lmleak-bad-manifest", "hf-truncated", "hf-pickle", "not-a-gguf", "text-gguf", "bare-pickle", "empty-folder",
]  # fmt: skip


@pytest.fixture(scope="module")
def bad_models(tmp_path_factory, small_model):
    return _bad_models(tmp_path_factory.mktemp("bad-models"), Path(small_model))


def test_the_intact_model_loads(small_model, good, tmp_path):
    res = CliRunner().invoke(
        app,
        [
            "report",
            "--model",
            str(small_model),
            "--corpus",
            str(good),
            "--out",
            str(tmp_path / "run"),
            "--quiet",
        ],
        env=WIDE,
    )
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("case", MODEL_CASES)
def test_bad_model_fails_closed(bad_models, good, tmp_path, case):
    path, expect, extra = bad_models[case]
    run = tmp_path / "run"
    _fails_closed(
        ["report", "--model", str(path), "--corpus", str(good), "--out", str(run), "--quiet", *extra],
        run,
        *expect,
    )


def test_every_bad_model_case_is_tested(bad_models):
    assert sorted(bad_models) == sorted(MODEL_CASES)
