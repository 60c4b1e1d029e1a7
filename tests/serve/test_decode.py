"""lmleak.serve.decode: stop sequences, finish_reason, token counts and character offsets, each against
an obvious oracle (greedy decoding by hand through the protocol, the prefix-decode definition)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from lmleak.serve.decode import cut_at_stop, from_generate, greedy, split_at, text_offsets
from lmleak.serve.scoring import Scoring
from tests.serve.tiny import TEXTS, ProtocolOnly, row


class EosAfter(ProtocolOnly):
    """The model, except that after ``after`` tokens past the prompt the EOS id is its top prediction."""

    def __init__(self, model, prompt_len: int, after: int) -> None:
        super().__init__(model)
        self.limit = prompt_len + after

    def top_k(self, prefixes, k):
        out = []
        for p, (ids, lps) in zip(prefixes, self._m.top_k(prefixes, k), strict=True):
            if len(p) >= self.limit:
                ids, lps = np.array([self.tokenizer.eos_id, *ids[: k - 1]]), np.array([0.0, *lps[: k - 1]])
            out.append((ids, lps))
        return out


def _by_hand(model, r, steps):
    """Greedy decoding through the protocol, one top-1 query per step."""
    cur = list(r[1:])
    for _ in range(steps):
        cur.append(int(model.top_k([cur], 1)[0][0][0]))
    return cur[len(r) - 1 :]


def test_greedy_equals_decoding_by_hand_and_runs_to_length(model):
    r = row(model, TEXTS[1])
    g = greedy(Scoring(model), model.tokenizer, r, 6, 2)
    assert g.ids == _by_hand(model, r, 6) and g.generated == 6 and not g.stopped
    assert g.text == model.tokenizer.decode(g.ids) and [t[0][0] for t in g.tops] == g.ids


def test_eos_ends_greedy_decoding_with_stop_and_is_counted(model):
    r = row(model, TEXTS[1])
    m = EosAfter(model, len(r) - 1, after=2)
    g = greedy(Scoring(m), model.tokenizer, r, 10, 1)
    assert g.stopped and len(g.ids) == 2 and g.generated == 3  # two tokens, then the EOS
    assert g.ids == _by_hand(model, r, 2)


def test_a_stop_sequence_cuts_the_text_and_drops_the_tokens_inside_it(bpe_model):
    m, tok = bpe_model, bpe_model.tokenizer
    r = row(m, TEXTS[0])
    free = greedy(Scoring(m), tok, r, 8, 1)
    assert free.generated == 8
    stop = tok.decode(free.ids[3:5])  # the text of the 4th and 5th tokens
    assert stop
    g = greedy(Scoring(m), tok, r, 8, 1, stops=[stop])
    assert g.stopped and g.text == free.text[: free.text.find(stop)]
    assert g.generated <= 5 and tok.decode(g.ids).startswith(g.text)
    assert all(o < len(g.text) for o in text_offsets(tok.decode, g.ids)) or not g.text


def test_check_stops_greedy_decoding(model):
    class Stop(Exception):
        pass

    calls = []

    def check():
        calls.append(1)
        if len(calls) > 2:
            raise Stop

    with pytest.raises(Stop):
        greedy(Scoring(model), model.tokenizer, row(model, TEXTS[0]), 10, 1, check=check)


@pytest.mark.parametrize("which", ["model", "bpe_model"])
def test_text_offsets_follow_the_definition(which, request):
    tok = request.getfixturevalue(which).tokenizer
    rng = random.Random(0)  # characters split over byte tokens, runs of spaces, unknown words
    noise = ["".join(rng.choice("ab c  éü☎😀\n-ada") for _ in range(80)) for _ in range(5)]
    for text in [*TEXTS, "naïve café 555-0100 ☎", "", *noise]:
        ids = tok.encode(text)
        assert text_offsets(tok.decode, ids) == [len(tok.decode(ids[:i])) for i in range(len(ids))]


def test_split_at_rebuilds_the_text():
    assert split_at("my name is", [0, 2, 7]) == ["my", " name", " is"]
    assert split_at("", []) == [] and split_at("abc", []) == ["abc"]


def test_cut_at_stop_takes_the_earliest_stop():
    assert cut_at_stop("a b c d", ["c", "b"]) == ("a ", True)
    assert cut_at_stop("a b", []) == ("a b", False)


def test_from_generate_reads_eos_from_a_short_text_and_cuts_at_stops(model):
    tok = model.tokenizer
    full = tok.decode(tok.encode(TEXTS[1])[:5])
    assert from_generate(tok, full, 5, ()).stopped is False  # ran to max_tokens: length
    short = from_generate(tok, full, 8, ())
    assert short.stopped and short.generated == 5  # fewer than max_tokens: an EOS ended it
    cut = from_generate(tok, full, 5, ["very"])
    assert cut.stopped and cut.text == full[: full.find("very")] and cut.generated == 5
