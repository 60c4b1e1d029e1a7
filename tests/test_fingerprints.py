"""Provenance fingerprints, checked against hashlib over the same bytes: the fast fingerprint sees
one changed byte in a weight file's first or last MiB, its size and its safetensors header; the full
one equals the files' SHA-256; the corpus hash is the file's SHA-256."""

from __future__ import annotations

import hashlib
import json
import os
import struct

import pytest

from lmleak.fingerprints import (
    MIB,
    corpus_record,
    files_fingerprint,
    head_tail_sha256,
    model_files,
    model_record,
    run_provenance,
    safetensors_header_sha256,
    sha256_file,
    use_full_hash,
)


def _weights(path, n=5 * MIB, seed=7):
    data = bytearray(hashlib.sha256(str(seed).encode()).digest() * (n // 32 + 1))[:n]
    path.write_bytes(bytes(data))
    return data


def _flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a new mtime even on a coarse clock


def test_head_tail_hash_equals_hashlib_over_the_first_and_last_mib(tmp_path):
    p = tmp_path / "model.bin"
    data = _weights(p)
    assert head_tail_sha256(p) == hashlib.sha256(bytes(data[:MIB]) + bytes(data[-MIB:])).hexdigest()
    small = tmp_path / "small.bin"
    small.write_bytes(bytes(data[: MIB + 10]))  # at most 2 MiB: hashed whole, nothing twice
    assert (
        head_tail_sha256(small) == hashlib.sha256(bytes(data[: MIB + 10])).hexdigest() == sha256_file(small)
    )


@pytest.mark.parametrize(
    ("offset", "seen"), [(0, True), (MIB - 1, True), (5 * MIB - 1, True), (4 * MIB, True), (2 * MIB, False)]
)
def test_the_fast_fingerprint_sees_one_byte_in_the_first_or_last_mib_only(tmp_path, offset, seen):
    d = tmp_path / "m"
    d.mkdir()
    _weights(d / "model.bin")
    before = files_fingerprint(d)["fingerprint"]
    _flip(d / "model.bin", offset)
    assert (files_fingerprint(d)["fingerprint"] != before) is seen
    # the full fingerprint sees every byte
    with use_full_hash():
        full = files_fingerprint(d)
    assert (
        full["hash"] == "full"
        and full["files"][0]["sha256"] == hashlib.sha256((d / "model.bin").read_bytes()).hexdigest()
    )


def test_the_fast_fingerprint_sees_size_added_and_removed_files(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    _weights(d / "model.bin")
    (d / "config.json").write_text("{}")
    fp = files_fingerprint(d)["fingerprint"]
    with open(d / "model.bin", "ab") as f:
        f.write(b"\0")
    fp2 = files_fingerprint(d)["fingerprint"]
    (d / "tokenizer.json").write_text("{}")
    fp3 = files_fingerprint(d)["fingerprint"]
    (d / "train.log").write_text("not part of the model")
    assert len({fp, fp2, fp3}) == 3 and files_fingerprint(d)["fingerprint"] == fp3
    assert [p.name for p in model_files(d)] == ["config.json", "model.bin", "tokenizer.json"]


def test_the_safetensors_header_hash_is_the_hash_of_its_json_header(tmp_path):
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    p = tmp_path / "model.safetensors"
    p.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    assert safetensors_header_sha256(p) == hashlib.sha256(header).hexdigest()
    rec = files_fingerprint(tmp_path)["files"][0]
    assert rec["safetensors_header_sha256"] == hashlib.sha256(header).hexdigest()
    (tmp_path / "x.bin").write_bytes(b"\xff" * 8)
    assert safetensors_header_sha256(tmp_path / "x.bin") is None  # not a safetensors file


def test_the_corpus_record_is_its_size_and_sha256(tmp_path):
    c = tmp_path / "c.jsonl"
    c.write_text('{"text": "hello"}\n')
    rec = corpus_record(c)
    assert rec == {
        "path": str(c.resolve()),
        "size": c.stat().st_size,
        "sha256": hashlib.sha256(c.read_bytes()).hexdigest(),
    }
    assert corpus_record(type("Corpus", (), {"source": str(c)})()) == rec  # a loaded corpus names its file
    assert corpus_record(type("Corpus", (), {"source": None})()) is None  # built in memory


def test_a_model_object_without_files_and_a_model_with_its_own_provenance():
    class Remote:
        def provenance(self):
            return {"backend": "http", "fingerprint": "abc"}

    assert model_record(Remote()) == {"backend": "http", "fingerprint": "abc"}
    rec = model_record(type("Mem", (), {"name": "fake:x", "device": "cpu"})())
    assert rec["fingerprint"] is None and rec["device"] == "cpu" and rec["backend"] == "Mem"
    assert set(run_provenance()) == {"lmleak_version"}


def test_a_loaded_model_records_backend_device_dtype_and_its_folders_fingerprint(tmp_path):
    from lmleak.models.loading import load_model
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    tok = build_tokenizer(["a b c d"], kind="word", vocab_size=20)
    path = save_small_model(
        new_small_gpt(len(tok), SmallGPTConfig(n_positions=8, n_embd=16, n_layer=1, n_head=2), seed=1),
        tok,
        tmp_path / "m",
    )
    rec = model_record(load_model(str(path), device="cpu"))
    assert (rec["device"], rec["dtype"]) == ("cpu", "float32")
    assert rec["fingerprint"] == files_fingerprint(path)["fingerprint"] and rec["spec"] == str(path)
    assert any(f["name"] == "model.safetensors" for f in rec["files"])
    topk = model_record(load_model(f"topk:3:{path}", device="cpu"))
    assert topk["fingerprint"] == rec["fingerprint"] and topk["backend"].startswith("TopKOnly(")
