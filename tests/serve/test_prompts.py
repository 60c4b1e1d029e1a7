"""lmleak.serve.prompts: prompts as BOS-led id rows, held to the context before tokenising (a long text
never reaches the tokenizer) and after; chat content-part arrays."""

from __future__ import annotations

import pytest

from lmleak.serve.errors import APIError
from lmleak.serve.limits import char_limit, max_token_chars
from lmleak.serve.prompts import Prompts
from tests.serve.tiny import TEXTS


class SpyTokenizer:
    """Wraps a tokenizer and records the length of every text it is asked to encode."""

    def __init__(self, tok):
        self.tok, self.seen = tok, []
        self.bos_id, self.eos_id, self.vocab_size = tok.bos_id, tok.eos_id, tok.vocab_size

    def encode(self, text):
        self.seen.append(len(text))
        return self.tok.encode(text)

    def decode(self, ids):
        return self.tok.decode(ids)


def _prompts(model, bos_required=False):
    tok = SpyTokenizer(model.tokenizer)
    bound = char_limit(model.max_length, max_token_chars(model.tokenizer))
    return Prompts(tok, model.max_length, bound, bos_required), tok, bound


def _refused(fn, *args):
    with pytest.raises(APIError) as e:
        fn(*args)
    return e.value


def test_a_text_over_the_character_bound_is_refused_before_tokenising(model):
    p, tok, bound = _prompts(model)
    e = _refused(p.text_row, "a" * (bound + 1), "prompt")
    assert e.status == 400 and e.code == "context_length_exceeded" and tok.seen == []
    assert f"{bound + 1:,} characters" in e.message


def test_the_character_bound_never_refuses_a_prompt_that_fits(bpe_model):
    """Oracle: the longest texts that do fit (context - 1 of the longest token) are under the bound."""
    tok = bpe_model.tokenizer
    longest = max(range(tok.vocab_size), key=lambda i: len(tok.decode([i])))
    text = tok.decode([longest] * (bpe_model.max_length - 1))
    p, _, bound = _prompts(bpe_model)
    assert len(text) <= bound
    assert len(p.text_row(text, "prompt")) <= bpe_model.max_length


def test_a_row_longer_than_the_context_is_refused_after_tokenising(model):
    p, tok, _ = _prompts(model)
    text = " ".join(["thank"] * model.max_length)
    e = _refused(p.text_row, text, "prompt")
    assert e.code == "context_length_exceeded" and tok.seen == [len(text)]
    assert f"{model.max_length + 1} tokens" in e.message


def test_prompt_shapes(model):
    p, _, _ = _prompts(model)
    bos = model.tokenizer.bos_id
    rows, text = p.rows(TEXTS[1], 4)
    assert text and rows == [[bos, *model.tokenizer.encode(TEXTS[1])]]
    rows, text = p.rows([5, 6, 7], 4)
    assert not text and rows == [[5, 6, 7]]
    rows, _ = p.rows([[bos, 5], "thank you"], 4)
    assert rows[0] == [bos, 5] and rows[1][0] == bos
    assert _refused(p.rows, ["a"] * 5, 4).message.startswith("at most 4 prompts")
    assert _refused(p.rows, [[]], 4).param == "prompt"
    assert _refused(p.rows, [[1, model.tokenizer.vocab_size]], 4).code == "out_of_range"
    assert _refused(p.rows, [[1, -1]], 4).code == "out_of_range"
    assert _refused(p.rows, {"a": 1}, 4).code == "invalid_type"


def test_a_protocol_only_model_needs_bos_first_in_id_prompts(model):
    p, _, _ = _prompts(model, bos_required=True)
    assert "must start with the BOS id" in _refused(p.rows, [5, 6], 4).message
    assert p.rows([model.tokenizer.bos_id, 5], 4)[0] == [[model.tokenizer.bos_id, 5]]


def test_chat_text_joins_messages_and_text_parts(model):
    p, _, _ = _prompts(model)
    msgs = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": None},
    ]
    assert p.chat_text(msgs) == "be brief\na\nb\n"
    e = _refused(p.chat_text, [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])
    assert e.param == "messages[0].content[0]" and "'image_url' parts are not supported" in e.message


def test_an_unknown_vocabulary_size_turns_the_bound_off_but_not_the_checks(model):
    """A remote tokenizer (vLLM) does not say its vocabulary size: no character bound (the body
    limit holds), negative ids refused, and the context still checked after tokenising."""
    tok = SpyTokenizer(model.tokenizer)
    tok.vocab_size = 0
    assert max_token_chars(tok) == 0 and char_limit(model.max_length, 0) == 0
    p = Prompts(tok, model.max_length, 0, bos_required=False)
    assert p.rows([5, 10_000], 4)[0] == [[5, 10_000]]
    assert _refused(p.rows, [5, -1], 4).message == "token ids must not be negative"
    assert _refused(p.text_row, "thank " * 100, "prompt").code == "context_length_exceeded"
