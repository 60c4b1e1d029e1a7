"""Long documents are tokenised piecewise (bounded memory) with exactly the whole-text tokenisation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.ledger.ledger import _cut_points, _splits_at_spaces, encode_long, ledger_table

TEXTS = [
    "Agent: Hello, my phone is (595) 555-0197 and my email is megan.chang6@example.com.",
    "Customer:  two  spaces, a\ttab and\nnew lines; order ORD-78622131 über straße",
    "My ID is: 104030",
]


@pytest.fixture(scope="module", params=["word", "bpe"])
def tokenizer(request):
    from lmleak.models.small import build_tokenizer
    from lmleak.models.tokenizer import HFTokenizer

    return HFTokenizer(build_tokenizer(TEXTS * 3, kind=request.param, vocab_size=200))


@settings(max_examples=40, deadline=None)
@given(
    parts=st.lists(st.sampled_from(TEXTS + [" ", "  ", "\n", "x", "ü"]), max_size=30),
    chunk=st.integers(1, 64),
)
def test_piecewise_encoding_equals_whole_encoding(tokenizer, parts, chunk):
    text = "".join(parts)
    assert _splits_at_spaces(tokenizer)
    assert encode_long(tokenizer, text, chunk_chars=chunk).tolist() == list(tokenizer.encode(text))


@given(text=st.text(alphabet=" ab\n", max_size=200), chunk=st.integers(1, 50))
def test_cuts_fall_just_before_a_single_space(text, chunk):
    cuts = _cut_points(text, chunk)
    assert cuts[0] == 0 and cuts[-1] == len(text)
    assert all(a < b for a, b in zip(cuts, cuts[1:], strict=False)) or text == ""
    for c in cuts[1:-1]:
        assert text[c] == " " and not text[c - 1].isspace() and not text[c + 1].isspace()


class _GluedTokenizer:
    """Tokenises a text as one token per character pair: a cut shifts every pair after it."""

    vocab_size = 1 << 16

    def encode(self, text):
        return [
            ord(text[i]) * 256 + (ord(text[i + 1]) if i + 1 < len(text) else 0)
            for i in range(0, len(text), 2)
        ]


def test_a_tokenizer_that_cuts_would_change_is_encoded_whole():
    tok = _GluedTokenizer()
    assert not _splits_at_spaces(tok)
    text = "ab cde fg " * 50
    assert encode_long(tok, text, chunk_chars=8).tolist() == tok.encode(text)


def test_ledger_table_of_a_long_document_matches_its_pieces_scored_whole(tokenizer):
    from lmleak.models.fake import FakeLM, NGramModule

    text = " ".join(TEXTS) * 20
    seqs = [[tokenizer.bos_id, *tokenizer.encode(text)]]
    model = FakeLM(NGramModule(seqs, tokenizer.vocab_size, 3, 0.1), tokenizer, max_length=32)
    table = ledger_table(model, [("d", "u", text)], None)
    ids = table.column("token_ids")[0].as_py()
    assert ids == list(tokenizer.encode(text))
    (stats,) = model.token_stats([ids])
    assert np.array_equal(np.asarray(table.column("ranks")[0].as_py()), stats.ranks)
