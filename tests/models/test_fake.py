"""FakeLM, the shipped test double: its n-gram probabilities against the counting formula."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import torch

from lmleak.models.base import Capability
from lmleak.models.fake import FakeLM, NGramModule, SimpleWordTokenizer

TEXTS = ["my id is 123456", "my id is 654321", "my card is blue"]


def test_the_word_tokenizer_puts_specials_first_and_maps_unknown_words_to_unk():
    tok = SimpleWordTokenizer(["b", "a", "<pad>", "a"])
    assert tok.vocab == ["<pad>", "<bos>", "<eos>", "<unk>", "a", "b"]
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id, tok.vocab_size) == (0, 1, 2, 3, 6)
    assert tok.encode(" a  zzz b ") == [4, 3, 5]
    assert tok.decode([4, 3, 5]) == "a <unk> b"


def _oracle(seqs, vocab, order, alpha, context):
    """log p(. | context) by counting, backing off to the longest context seen in training."""
    for n in range(min(len(context), order - 1), -1, -1):
        ctx = tuple(context[len(context) - n :])
        follow = Counter(
            s[t] for s in seqs for t in range(n, len(s)) if t >= 1 and tuple(s[t - n : t]) == ctx
        )
        if follow:
            break
    weights = [0.0] + [alpha + follow[v] for v in range(1, vocab)]  # padding is never predicted
    total = sum(weights)
    return [math.log(w / total) if w else -math.inf for w in weights]


@pytest.mark.parametrize("order", [1, 2, 3])
def test_ngram_log_probs_are_smoothed_counts_with_back_off(order):
    tok = SimpleWordTokenizer(w for t in TEXTS for w in t.split())
    seqs = [[tok.bos_id, *tok.encode(t), tok.eos_id] for t in TEXTS]
    module = NGramModule(seqs, tok.vocab_size, order, alpha=0.1)
    for text in ["my id is 123456", "card my blue is", "<unk> id"]:
        ids = [tok.bos_id, *tok.encode(text)]
        logits = module(torch.tensor([ids])).logits[0]
        for j in range(len(ids)):
            ctx = ids[max(0, j - order + 2) : j + 1]
            np.testing.assert_allclose(
                logits[j].numpy(), _oracle(seqs, tok.vocab_size, order, 0.1, ctx), rtol=1e-5, atol=1e-6
            )


def test_fake_lm_scores_with_its_ngram_tables_and_grants_no_embeddings():
    lm = FakeLM.from_texts(TEXTS, order=3, alpha=0.01, name="f")
    assert lm.name == "f"
    assert lm.capabilities == {Capability.SCORE, Capability.TOP_K, Capability.GENERATE}
    ids = lm.tokenizer.encode("my id is 654321")
    stats = lm.token_stats([ids])[0]
    logits = lm.module(torch.tensor([[lm.tokenizer.bos_id, *ids]])).logits[0]
    expected = [float(logits[j, t]) for j, t in enumerate(ids)]
    np.testing.assert_allclose(stats.logprobs, expected, rtol=1e-5)
    ranks = [1 + int((logits[j] > logits[j, t]).sum()) for j, t in enumerate(ids)]
    assert stats.ranks.tolist() == ranks


def test_fake_lm_memorises_what_it_saw():
    lm = FakeLM.from_texts(TEXTS, order=4)
    assert lm.generate(["my card"], max_new_tokens=2) == [["is blue"]]
