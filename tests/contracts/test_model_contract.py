"""The contract every model backend passes (STYLE.md: one suite, every implementation).

- a batch scores the same as the same calls one by one, in input order;
- log-probabilities are <= 0 and ranks >= 1;
- top-k lists are sorted by decreasing probability and hold at most k tokens;
- declared capabilities match what works: each declared one runs, undeclared ones are refused
  by ``require`` before any work.
"""

from __future__ import annotations

import numpy as np
import pytest

from lmleak.errors import CapabilityError
from lmleak.models.base import Capability, require

TEXTS = ["my id is 123456 thanks", "the order arrived late", "hello", "please refund order 42 now now"]


def _fake():
    from lmleak.models.fake import FakeLM

    return FakeLM.from_texts(TEXTS)


def _gpt(tmp_path_factory):
    from lmleak.models.loading import load_model
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    tok = build_tokenizer(TEXTS * 3, kind="bpe", vocab_size=300)
    d = tmp_path_factory.mktemp("gpt")
    save_small_model(
        new_small_gpt(len(tok), SmallGPTConfig(n_positions=32, n_embd=16, n_layer=1, n_head=2)), tok, d
    )
    # loaded as a plain Hugging Face folder, not through the lmleak manifest
    (d / "lmleak_model.json").unlink()
    return load_model(str(d), batch_tokens=64)


def _lstm(tmp_path_factory):
    from lmleak.models.loading import load_model
    from lmleak.models.small import SmallLSTM, SmallLSTMConfig, build_tokenizer, save_small_model

    tok = build_tokenizer(TEXTS, kind="word", vocab_size=60)
    d = tmp_path_factory.mktemp("lstm")
    save_small_model(SmallLSTM(SmallLSTMConfig(len(tok), embed_dim=16, hidden_dim=16, max_length=16)), tok, d)
    return load_model(str(d))


def _topk(tmp_path_factory):
    from lmleak.models.blackbox import TopKOnly

    return TopKOnly(_fake(), 3)


def _text(tmp_path_factory):
    from lmleak.models.blackbox import TextOnly

    return TextOnly(_fake())


BACKENDS = {"fake": lambda f: _fake(), "hf-gpt": _gpt, "lstm": _lstm, "topk": _topk, "text": _text}


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def model(request, tmp_path_factory):
    return BACKENDS[request.param](tmp_path_factory)


def seqs(model):
    return [model.tokenizer.encode(t) for t in TEXTS]


def test_scores_are_batch_invariant_ordered_and_valid(model):
    if Capability.SCORE not in model.capabilities:
        pytest.skip("no SCORE")
    batch = model.token_stats(seqs(model))
    for s, st in zip(seqs(model), batch, strict=True):
        one = model.token_stats([s])[0]
        assert len(st) == len(s)
        np.testing.assert_array_equal(st.ranks, one.ranks)
        np.testing.assert_allclose(st.logprobs, one.logprobs, atol=1e-5)
        assert np.all(st.logprobs <= 1e-6) and np.all(st.ranks >= 1)
        assert np.all(st.top1_logprobs >= st.logprobs - 1e-5)
    ctx = [model.tokenizer.encode(t) for t in ["", "my id is"]]
    cont = [model.tokenizer.encode(t) for t in ["hello", "123456"]]
    both = model.score_ids(ctx, cont)
    assert both[1] == pytest.approx(model.score_ids(ctx[1:], cont[1:])[0], abs=1e-4)
    assert np.all(both <= 0)
    sc = model.score_text(["", "my id is"], ["hello", " 123456"])
    assert [s.num_words for s in sc] == [1, 1] and all(s.logprob <= 0 for s in sc)


def test_top_k_is_sorted_and_at_most_k(model):
    if Capability.TOP_K not in model.capabilities:
        pytest.skip("no TOP_K")
    k = 3
    out = model.top_k([s[:2] for s in seqs(model)], k)
    assert len(out) == len(TEXTS)
    for ids, lps in out:
        assert len(ids) <= k and len(ids) == len(lps)
        if not np.isnan(lps).any():
            assert np.all(np.diff(lps) <= 1e-6)


def test_generation_returns_one_list_per_prompt_in_order(model):
    if Capability.GENERATE not in model.capabilities:
        pytest.skip("no GENERATE")
    out = model.generate(["my id", "the order"], max_new_tokens=3, num_beams=2, num_return_sequences=2)
    assert len(out) == 2 and all(len(o) == 2 and all(isinstance(x, str) for x in o) for o in out)
    assert (
        model.generate(["my id"], max_new_tokens=3)[0]
        == model.generate(["my id", "the order"], max_new_tokens=3)[0]
    )


def test_undeclared_capabilities_are_refused_before_any_work(model):
    for cap in Capability:
        if cap in model.capabilities:
            require(model, cap)
        else:
            with pytest.raises(CapabilityError, match=cap.value):
                require(model, cap)
