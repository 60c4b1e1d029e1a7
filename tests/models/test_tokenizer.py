"""HFTokenizer: lmleak's start, end and pad ids over any Hugging Face tokenizer."""

from __future__ import annotations

import pytest

from lmleak.models.small import build_tokenizer
from lmleak.models.tokenizer import HFTokenizer

TEXTS = ["My ID is: 123456", "hello there, my card", "refund my order please"]


@pytest.fixture(scope="module", params=["word", "bpe"])
def hf(request):
    return build_tokenizer(TEXTS, kind=request.param, vocab_size=300)


def test_ids_come_from_the_wrapped_tokenizer(hf):
    tok = HFTokenizer(hf)
    assert (tok.bos_id, tok.eos_id, tok.pad_id) == (hf.bos_token_id, hf.eos_token_id, hf.pad_token_id)
    assert tok.vocab_size == len(hf)


def test_encode_adds_no_special_tokens_and_decode_round_trips(hf):
    tok = HFTokenizer(hf)
    ids = tok.encode(TEXTS[0])
    assert ids == hf.encode(TEXTS[0], add_special_tokens=False)
    assert tok.bos_id not in ids and tok.eos_id not in ids
    assert tok.decode(ids) == TEXTS[0]
    assert tok.convert_ids_to_tokens(ids) == hf.convert_ids_to_tokens(ids)


def test_decode_many_is_decode_of_each_row(hf):
    tok = HFTokenizer(hf)
    rows = [tok.encode(t) for t in TEXTS] + [[], [tok.bos_id, *tok.encode("hello")]]
    assert tok.decode_many(rows) == [tok.decode(r) for r in rows]


def test_decode_many_falls_back_to_decode_without_a_rust_backend():
    slow = _stub(1, 2, None)
    slow.decode = lambda ids, **kw: "-".join(map(str, ids))  # a slow tokenizer: no backend_tokenizer
    tok = HFTokenizer(slow)
    assert tok.decode_many([[3, 4], [5]]) == ["3-4", "5"]


def _stub(bos, eos, pad):
    return type(
        "Stub", (), {"bos_token_id": bos, "eos_token_id": eos, "pad_token_id": pad, "__len__": lambda s: 7}
    )()


def test_no_bos_starts_with_eos_and_no_pad_pads_with_the_start_token():
    tok = HFTokenizer(_stub(None, 5, None))  # GPT-2's convention
    assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.vocab_size) == (5, 5, 5, 7)
    tok = HFTokenizer(_stub(3, None, 0))
    assert (tok.bos_id, tok.eos_id, tok.pad_id) == (3, None, 0)


def test_a_tokenizer_without_a_start_token_is_refused():
    with pytest.raises(ValueError, match="start token"):
        HFTokenizer(_stub(None, None, None))
