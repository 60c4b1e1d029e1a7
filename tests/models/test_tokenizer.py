"""HFTokenizer: lmleak's start, end and pad ids over any Hugging Face tokenizer."""

from __future__ import annotations

import pytest

from lmleak.models.small import build_tokenizer
from lmleak.models.tokenizer import HFTokenizer, start_token_id

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


def _word_tokenizer(vocab: list[str], **special):
    """A real ``transformers`` fast tokenizer over ``vocab`` with the given special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token=special["unk_token"]))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=raw, **special)


SMOL_VOCAB = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "hello", "world"]


def test_a_chat_marker_bos_gives_way_to_endoftext_even_when_it_is_the_unknown_token():
    # SmolLM2's layout (ENVIRONMENT.md, checked 2026-11-26): <|endoftext|> is id 0 and unk_token,
    # <|im_start|> the declared BOS; the old guard `endoftext != unk` kept <|im_start|>
    hf = _word_tokenizer(
        SMOL_VOCAB, unk_token="<|endoftext|>", bos_token="<|im_start|>", eos_token="<|im_end|>"
    )
    assert (hf.bos_token_id, hf.unk_token_id) == (1, 0)
    assert start_token_id(hf) == 0 and HFTokenizer(hf).bos_id == 0
    assert HFTokenizer(hf).pad_id == 0  # no pad token: pad with the start token


def test_a_real_bos_is_kept_and_a_missing_endoftext_is_not_invented():
    plain = _word_tokenizer(
        ["<unk>", "<s>", "</s>", "<|endoftext|>", "hi"], unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    assert start_token_id(plain) == 1  # <s> is no chat marker: <|endoftext|> does not replace it
    chat_only = _word_tokenizer(
        ["<unk>", "<|im_start|>", "<|im_end|>", "hi"],
        unk_token="<unk>",
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
    )
    assert start_token_id(chat_only) == 1  # nothing better than the chat marker


def test_no_bos_takes_endoftext_before_a_chat_eos():
    # Qwen2-instruct's layout: no BOS, EOS <|im_end|>, <|endoftext|> in the vocabulary
    hf = _word_tokenizer(
        ["<unk>", "<|endoftext|>", "<|im_end|>", "hi"], unk_token="<unk>", eos_token="<|im_end|>"
    )
    assert hf.bos_token_id is None and start_token_id(hf) == 1


def test_the_http_backends_local_tokenizer_picks_the_in_process_start_token(tmp_path):
    from lmleak.models.http import load_tokenizer

    hf = _word_tokenizer(
        SMOL_VOCAB, unk_token="<|endoftext|>", bos_token="<|im_start|>", eos_token="<|im_end|>"
    )
    hf.save_pretrained(tmp_path)
    assert load_tokenizer(str(tmp_path)).bos_id == HFTokenizer(hf).bos_id == 0


def test_the_http_backends_local_tokenizer_keeps_a_fine_tunes_recorded_start_token(tmp_path):
    """A fine-tune scores after the start token it was trained after (``bos_id`` in its manifest, which
    lmleak.models.adapters restores in process); ``tokenizer=FOLDER`` restores it too, and a LoRA folder
    without tokenizer files takes its base's tokenizer."""
    import json

    from lmleak.models.adapters import MANIFEST
    from lmleak.models.http import load_tokenizer

    base = tmp_path / "base"
    hf = _word_tokenizer(
        SMOL_VOCAB, unk_token="<|endoftext|>", bos_token="<|im_start|>", eos_token="<|im_end|>"
    )
    hf.save_pretrained(base)
    full, lora = tmp_path / "full", tmp_path / "lora"
    hf.save_pretrained(full)
    lora.mkdir()
    for folder in (full, lora):  # trained after <|im_start|> (id 1), as fine-tunes made before issue 25 were
        (folder / MANIFEST).write_text(
            json.dumps({"format": 1, "kind": "lora", "base": str(base), "bos_id": 1})
        )
    assert load_tokenizer(str(base)).bos_id == 0
    assert load_tokenizer(str(full)).bos_id == load_tokenizer(str(lora)).bos_id == 1
    assert load_tokenizer(str(lora)).encode("hello world") == HFTokenizer(hf).encode("hello world")
