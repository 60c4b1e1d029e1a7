"""The public default vocabulary: a valid BPE at every size, no digit merges, and the shipped merges
are SmolLM2's own (checked against its tokenizer when the model is installed)."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from lmleak.errors import ConfigError
from lmleak.train.vocab import MERGES_FILE, public_tokenizer, shipped_merges

_DIGIT = re.compile(r"[0-9]")


def extract_merges(tokenizer_json: str | Path, count: int) -> list[tuple[str, str]]:
    """The first ``count`` merges of a byte-level BPE ``tokenizer.json`` whose result has no digit."""
    model = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))["model"]
    out: list[tuple[str, str]] = []
    for m in model["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        if _DIGIT.search(a + b):
            continue
        out.append((a, b))
        if len(out) == count:
            break
    return out


def write_merges(merges: list[tuple[str, str]], path: str | Path) -> Path:
    """The shipped file's format: a header line, then one ``a b`` merge per line."""
    header = (
        "#version: lmleak public vocabulary, the first merges of SmolLM2's BPE without digits (Apache-2.0)"
    )
    Path(path).write_text("\n".join([header, *(f"{a} {b}" for a, b in merges)]) + "\n", encoding="utf-8")
    return Path(path)


def test_every_size_round_trips_text_and_keeps_lmleaks_special_tokens():
    for size in (300, 4000):
        tok, source = public_tokenizer(size)
        assert len(tok) == size and source == f"public:smollm2-bpe-{size}"
        assert (
            tok.pad_token_id,
            tok.bos_token_id,
            tok.eos_token_id,
            tok.convert_tokens_to_ids("<MASK>"),
        ) == (0, 1, 2, 4)
        text = "Dear Zoë, call 555-0142 or write to ann.lee@example.org <MASK> ok"
        ids = tok.encode(text, add_special_tokens=False)
        assert tok.decode(ids) == text and tok.unk_token_id not in ids
        digits = [t for t in tok.convert_ids_to_tokens(ids) if any(c.isdigit() for c in t)]
        assert all(len(t) == 1 for t in digits)  # digits one by one, as lmleak's own bpe
    small, large = public_tokenizer(300)[0], public_tokenizer(4000)[0]
    assert len(small.encode(text)) > len(large.encode(text))  # more merges, fewer tokens
    with pytest.raises(ConfigError, match="vocab_size"):
        public_tokenizer(100)


def test_the_shipped_file_is_read_whole_merges_of_hashes_included(tmp_path):
    """'# #' is a merge, not a comment: reading it as one dropped 7 merges and shifted the rest."""
    merges = shipped_merges()
    assert ("#", "#") in merges and ("##", "##") in merges
    lines = (resources.files("lmleak.train") / "data" / MERGES_FILE).read_text(encoding="utf-8").splitlines()
    assert len(merges) == len(lines) - 1  # all but the header


def test_merges_are_extracted_in_order_without_digits(tmp_path):
    spec = {"model": {"merges": [["Ġ", "t"], ["1", "2"], ["h", "e"], "Ġt he", ["Ġ", "9"]]}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    merges = extract_merges(tmp_path / "tokenizer.json", 10)
    assert merges == [("Ġ", "t"), ("h", "e"), ("Ġt", "he")]
    write_merges(merges, tmp_path / "m.txt")
    assert (tmp_path / "m.txt").read_text().splitlines()[1:] == ["Ġ t", "h e", "Ġt he"]


@pytest.mark.slow  # loads SmolLM2 (~20 s the first time)
def test_the_shipped_merges_are_smollm2s_first_merges(tmp_path):
    pytest.importorskip("gguf")
    from lmleak.models.loading import load_model

    lm = load_model("smollm2-135m")
    lm.tokenizer.hf.save_pretrained(tmp_path)
    shipped = shipped_merges()
    assert extract_merges(tmp_path / "tokenizer.json", len(shipped)) == shipped
