"""Exact canary ranks from the pruned token trie equal scoring every candidate one by one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.attacks.trie import CanaryFormat, CandidateSpace, SearchStats, count_candidates, exact_ranks
from lmleak.models.fake import FakeLM
from lmleak.models.small import SmallGPTConfig, SmallLSTM, SmallLSTMConfig, build_tokenizer, new_small_gpt
from lmleak.models.tokenizer import HFTokenizer
from lmleak.models.torch_causal import TorchCausalLM

PREFIX = "My ID is: "
TOL = 1e-4


def _texts(seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    # numbers repeated often enough that BPE learns multi-digit merges
    nums = [f"{x:03d}" for x in rng.integers(0, 1000, size=40)]
    return [f"My ID is: {n}" for n in nums for _ in range(3)] + ["the order 12 ships to 555-0100 today"] * 5


def _sharpen(module: torch.nn.Module, head: torch.nn.Module, factor: float) -> None:
    # random-init heads are nearly uniform; sharpen them so candidates are well separated
    with torch.no_grad():
        head.weight.mul_(factor)


def _gpt(tok, seed: int = 0) -> TorchCausalLM:
    module = new_small_gpt(
        tok.vocab_size, SmallGPTConfig(n_positions=32, n_embd=32, n_layer=1, n_head=2), seed=seed
    )
    _sharpen(module, module.lm_head, 40.0)
    return TorchCausalLM(module, tok, name="gpt", max_length=32)


def _lstm(tok, seed: int = 0) -> TorchCausalLM:
    torch.manual_seed(seed)
    module = SmallLSTM(SmallLSTMConfig(tok.vocab_size, embed_dim=16, hidden_dim=16, num_layers=1))
    _sharpen(module, module.head, 30.0)
    return TorchCausalLM(module, tok, name="lstm", max_length=32)


def oracle_ranks(model, fmt: CanaryFormat, secrets: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The slow obvious way: score every full string, count the strictly more likely ones."""
    cands = fmt.candidates(np.arange(fmt.num_candidates))
    seqs = [model.tokenizer.encode(PREFIX + c) for c in cands]
    lp = np.array([float(st.logprobs.astype(np.float64).sum()) for st in model.token_stats(seqs)])
    where = {c: i for i, c in enumerate(cands)}
    # strictly more likely, plus half of the other ties (the middle of the tie group)
    ranks = np.array(
        [
            1
            + int(np.sum(lp > lp[where[s]] + TOL))
            + (int(np.sum(np.abs(lp - lp[where[s]]) <= TOL)) - 1) // 2
            for s in secrets
        ]
    )
    return ranks, lp


def _check(model, fmt: CanaryFormat, expect_kind: str, force=None) -> None:
    space = CandidateSpace.build(model.tokenizer, fmt, force=force)
    assert space.kind == expect_kind
    cands = fmt.candidates(np.arange(fmt.num_candidates))
    _, lp = oracle_ranks(model, fmt, cands[:1])
    order = np.argsort(-lp)
    rng = np.random.default_rng(1)
    picks = [
        cands[order[0]],
        cands[order[1]],
        cands[order[len(order) // 2]],
        cands[order[-1]],
        *[cands[i] for i in rng.integers(0, len(cands), size=6)],
    ]
    want, _ = oracle_ranks(model, fmt, picks)
    got, _ = exact_ranks(model, space, picks, tie_tolerance=TOL)
    np.testing.assert_array_equal(got, want)
    unpruned, _ = exact_ranks(model, space, picks, tie_tolerance=TOL, prune=False)
    np.testing.assert_array_equal(unpruned, want)
    assert got[0] == 1


def test_word_level_single_digit_tokens_walk_the_digit_tree_and_match_the_oracle_for_gpt():
    tok = HFTokenizer(build_tokenizer(_texts(), kind="word", vocab_size=200))
    _check(_gpt(tok), CanaryFormat(PREFIX, length=3), "digit_tree")


def test_the_digit_tree_and_the_explicit_trie_agree_for_an_lstm():
    tok = HFTokenizer(build_tokenizer(_texts(), kind="word", vocab_size=200))
    model = _lstm(tok)
    fmt = CanaryFormat(PREFIX, length=3)
    _check(model, fmt, "digit_tree")
    _check(model, fmt, "explicit", force="explicit")


def test_bpe_merging_digits_uses_the_canonical_tokenisation_and_matches_the_oracle():
    tok = HFTokenizer(build_tokenizer(_texts(), kind="bpe", vocab_size=330, split_digits=False))
    fmt = CanaryFormat(PREFIX, length=3)
    conts = CandidateSpace.build(tok, fmt).continuations(fmt.candidates(np.arange(1000)))
    assert len({len(c) for c in conts}) > 1, "the BPE fixture should merge some digit runs"
    _check(_gpt(tok), fmt, "explicit")
    _check(_lstm(tok, seed=3), fmt, "explicit")


def test_a_whitespace_word_model_ties_every_unknown_secret_and_ranks_a_memorised_one_first():
    lm = FakeLM.from_texts([f"{PREFIX}123"] * 20 + [f"{PREFIX}777", "hello there"], order=4)
    fmt = CanaryFormat(PREFIX, length=3)
    space = CandidateSpace.build(lm.tokenizer, fmt)
    assert space.kind == "explicit"
    want, _ = oracle_ranks(lm, fmt, ["123", "777", "000", "999"])
    got, _ = exact_ranks(lm, space, ["123", "777", "000", "999"], tie_tolerance=TOL)
    np.testing.assert_array_equal(got, want)
    # 998 unknown secrets tie: ranked at the middle of their group, not first
    assert list(got[:2]) == [1, 2] and got[2] == got[3] == 3 + 997 // 2


def test_pruning_scores_few_nodes_for_a_top_ranked_canary():
    tok = HFTokenizer(build_tokenizer(_texts(), kind="word", vocab_size=200))
    model = _gpt(tok)
    fmt = CanaryFormat(PREFIX, length=3)
    space = CandidateSpace.build(tok, fmt)
    _, lp = oracle_ranks(model, fmt, ["000"])
    best = fmt.candidate(int(np.argmax(lp)))
    pruned, full = SearchStats(), SearchStats()
    r1, _ = exact_ranks(model, space, [best], stats=pruned)
    r2, _ = exact_ranks(model, space, [best], stats=full, prune=False)
    assert r1[0] == r2[0] == 1
    assert full.nodes_scored == 1 + 10 + 100
    assert pruned.nodes_scored < full.nodes_scored / 5


def test_the_context_state_fast_paths_are_taken_for_gpt_and_lstm_and_match_next_logprobs():
    from lmleak.attacks.trie import _NodeScorer

    tok = HFTokenizer(build_tokenizer(_texts(), kind="word", vocab_size=200))
    ctx = tok.encode(PREFIX)
    gpt, lstm = _gpt(tok), _lstm(tok)
    fast = _NodeScorer(gpt, ctx, SearchStats(), 64)
    fast_lstm = _NodeScorer(lstm, ctx, SearchStats(), 2)
    assert fast.cache is not None and fast_lstm.lstm_state is not None
    pre = np.array([[5, 6], [7, 8], [9, 9]])
    for lm, scorer in ((gpt, fast), (lstm, fast_lstm)):
        want = lm.next_logprobs([[*ctx, *r] for r in pre.tolist()])
        np.testing.assert_allclose(scorer(pre), want, atol=1e-5)
        np.testing.assert_allclose(scorer(pre[:, :0])[0], lm.next_logprobs([ctx])[0], atol=1e-5)
    fake = FakeLM.from_texts([PREFIX + "123"])
    slow = _NodeScorer(fake, fake.tokenizer.encode(PREFIX), SearchStats(), 8)
    assert slow.cache is None and slow.lstm_state is None


def test_one_search_counts_for_many_thresholds_like_separate_searches():
    tok = HFTokenizer(build_tokenizer(_texts(), kind="word", vocab_size=200))
    model = _lstm(tok, seed=5)
    space = CandidateSpace.build(tok, CanaryFormat(PREFIX, length=3))
    costs = [5.0, 12.0, 20.0]
    together = count_candidates(model, space, costs)[0]
    alone = [int(count_candidates(model, space, [c])[0][0]) for c in costs]
    assert list(together) == alone
    assert together[0] <= together[1] <= together[2]


def test_digits_missing_from_a_word_vocabulary_share_unk_and_tie():
    # the vocabulary knows only the digits 0-4: 5-9 become <unk>, and their candidates tie
    texts = [f"My ID is: {a}{b}" for a in "01234" for b in "01234"] * 2
    tok = HFTokenizer(build_tokenizer(texts, kind="word", vocab_size=200))
    fmt = CanaryFormat(PREFIX, length=2)
    space = CandidateSpace.build(tok, fmt)
    assert space.kind == "digit_tree" and len(set(space.char_ids)) == 6
    model = _gpt(tok)
    picks = ["00", "43", "59", "99", "05"]
    want, _ = oracle_ranks(model, fmt, picks)
    got, _ = exact_ranks(model, space, picks, tie_tolerance=TOL)
    np.testing.assert_array_equal(got, want)
    explicit = CandidateSpace.build(tok, fmt, force="explicit")
    np.testing.assert_array_equal(exact_ranks(model, explicit, picks, tie_tolerance=TOL)[0], want)


def test_a_search_over_budget_stops_instead_of_running_on():
    from lmleak.attacks.trie import SearchBudgetExceeded

    tok = HFTokenizer(build_tokenizer(_texts(), kind="word", vocab_size=200))
    model = _lstm(tok, seed=5)
    space = CandidateSpace.build(tok, CanaryFormat(PREFIX, length=3))
    with pytest.raises(SearchBudgetExceeded):
        count_candidates(model, space, [1e9], max_nodes=50)


def test_a_secret_outside_the_format_is_a_data_file_error():
    from lmleak.errors import DataFileError

    lm = FakeLM.from_texts([f"{PREFIX}123"], order=3)
    space = CandidateSpace.build(lm.tokenizer, CanaryFormat(PREFIX, length=3))
    with pytest.raises(DataFileError):
        exact_ranks(lm, space, ["12a"])


@given(st.sampled_from(["0123456789", "01", "abc", "xé√"]), st.integers(1, 5), st.data())
@settings(max_examples=60, deadline=None)
def test_candidates_are_numbered_in_lexicographic_order_both_ways(alphabet, length, data):
    fmt = CanaryFormat("p", alphabet, length)
    i = data.draw(st.integers(0, fmt.num_candidates - 1))
    one = fmt.candidate(i)
    assert fmt.candidates([i]) == [one] and fmt.index(one) == i and fmt.contains(one)
    if i + 1 < fmt.num_candidates:
        a, b = fmt.candidates([i, i + 1])
        assert [alphabet.index(ch) for ch in a] < [alphabet.index(ch) for ch in b]
