"""The ledger (one teacher-forced pass) against Algorithm 1's per-prefix queries (paper 001 §4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmleak.data.corpus import Corpus, Document
from lmleak.ledger.ledger import Ledger, build_ledger, read_ledger, score_documents
from lmleak.models.base import Capability, TokenStats
from lmleak.models.fake import FakeLM
from lmleak.models.torch_causal import TorchCausalLM
from lmleak.report.sequences import leaked_runs, ledger_hits, occurrences

TEXTS = [
    "thank you very much for the call",
    "i like cats very much indeed",
    "my pin is 1 2 3 4 and my pin is 1 2 3 4",
    "the weather is nice today",
    "thank you for the help with the call",
]


def algorithm1_per_prefix(model: Any, token_ids: Sequence[int], k: int) -> list[tuple[int, int]]:
    """Paper 001 Algorithm 1 for one document, trailing run flushed: one model query per prefix.

    The slow oracle. "``w_l`` in the top-k predictions" follows lmleak's convention (ties favour
    the true token: fewer than k tokens strictly more likely). Models with score access are asked
    ``next_logprobs`` for each prefix; a top-k-only model is asked ``top_k``.

    Returns:
        ``(start, end)`` token offsets of every run in S for this document.
    """

    ids = list(map(int, token_ids))
    runs: list[tuple[int, int]] = []
    w_start: int | None = None
    score = Capability.SCORE in getattr(model, "capabilities", frozenset())
    for l_, tok in enumerate(ids):
        prefix = ids[:l_]
        if score:
            lp = model.next_logprobs([prefix])[0]
            inside = int((lp > lp[tok]).sum()) < k
        else:
            pred_ids, _ = model.top_k([prefix], k)[0]
            inside = tok in set(np.asarray(pred_ids).tolist())
        if inside:
            if w_start is None:
                w_start = l_
        elif w_start is not None:
            runs.append((w_start, l_))
            w_start = None
    if w_start is not None:  # the flush Algorithm 1 as printed forgets
        runs.append((w_start, len(ids)))
    return runs


def _id_corpus(seed: int, n_docs: int = 8) -> Corpus:
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n_docs):
        ids = rng.integers(3, 64, size=int(rng.integers(1, 30)))
        docs.append(Document(f"u{i % 3}", f"d{i}", " ".join(map(str, ids))))
    return Corpus(docs)


def _gpt(tiny_gpt2, id_tokenizer, batch_tokens: int = 4096) -> TorchCausalLM:
    return TorchCausalLM(tiny_gpt2, id_tokenizer, name="tiny-gpt2", max_length=64, batch_tokens=batch_tokens)


def _runs_by_doc(ledger: Ledger, k: int) -> dict[int, list[tuple[int, int]]]:
    doc, s, e = leaked_runs(ledger_hits(ledger, k), ledger.offsets)
    out: dict[int, list[tuple[int, int]]] = {d: [] for d in range(ledger.num_docs)}
    for d, a, b in zip(doc.tolist(), s.tolist(), e.tolist(), strict=True):
        out[d].append((a, b))
    return out


@pytest.mark.parametrize("k", [1, 3, 10])
def test_s_from_the_ledger_equals_algorithm1_on_a_tiny_gpt(tmp_path, tiny_gpt2, id_tokenizer, k):
    model = _gpt(tiny_gpt2, id_tokenizer)
    corpus = _id_corpus(1)
    ledger = build_ledger(model, corpus, tmp_path)
    got = _runs_by_doc(ledger, k)
    total = 0
    for d, doc in enumerate(corpus):
        expected = algorithm1_per_prefix(model, id_tokenizer.encode(doc.text), k)
        assert got[d] == expected
        total += len(expected)
    if k == 10:
        assert total > 0  # the comparison is not vacuous


@pytest.mark.parametrize("k", [1, 2])
def test_s_from_the_ledger_equals_algorithm1_on_a_memorising_fake_lm(tmp_path, k):
    model = FakeLM.from_texts(TEXTS[:4])
    corpus = Corpus([Document(f"u{i % 2}", f"d{i}", t) for i, t in enumerate(TEXTS)])
    ledger = build_ledger(model, corpus, tmp_path)
    got = _runs_by_doc(ledger, k)
    for d, doc in enumerate(corpus):
        assert got[d] == algorithm1_per_prefix(model, model.tokenizer.encode(doc.text), k)
    # a document fully memorised ends inside a run: the trailing run is flushed
    assert got[0] == [(0, len(TEXTS[0].split()))]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch_tokens=st.integers(1, 400), shard_size=st.integers(1, 9), seed=st.integers(0, 3))
def test_s_is_the_same_for_every_batch_size(
    tmp_path_factory, tiny_gpt2, id_tokenizer, batch_tokens, shard_size, seed
):
    corpus = _id_corpus(seed, 6)
    reference = build_ledger(
        _gpt(tiny_gpt2, id_tokenizer), corpus, tmp_path_factory.mktemp("ref"), shard_size=64
    )
    other = build_ledger(
        _gpt(tiny_gpt2, id_tokenizer, batch_tokens),
        corpus,
        tmp_path_factory.mktemp("b"),
        shard_size=shard_size,
    )
    assert np.array_equal(reference.ranks, other.ranks)
    for k in (1, 5):
        a, b = occurrences(reference, [k]), occurrences(other, [k])
        assert a[["doc_id", "start", "end", "sequence_id"]].equals(
            b[["doc_id", "start", "end", "sequence_id"]]
        )


def test_the_ledger_stores_aligned_lists_per_document_and_reads_back(tmp_path, tiny_gpt2, id_tokenizer):
    import pyarrow.parquet as pq

    model = _gpt(tiny_gpt2, id_tokenizer)
    corpus = _id_corpus(2, 5)
    built = build_ledger(model, corpus, tmp_path, shard_size=2)
    shards = sorted((tmp_path / "ledger").glob("shard-*.parquet"))
    assert len(shards) == 3
    table = pq.read_table(shards[0])
    assert table.column_names == ["doc_id", "user_id", "token_ids", "ranks", "logprobs", "top1_logprobs"]
    back = read_ledger(tmp_path)
    assert back.doc_ids == [d.doc_id for d in corpus] and back.user_ids == [d.user_id for d in corpus]
    direct = model.token_stats([id_tokenizer.encode(d.text) for d in corpus])
    assert np.array_equal(back.ranks, np.concatenate([s.ranks for s in direct]))
    assert np.allclose(back.logprobs, np.concatenate([s.logprobs for s in direct]))
    assert np.array_equal(back.ranks, built.ranks)
    assert back.meta["overlap"] == model.overlap and back.meta["access"] == "score"
    # rerunning resumes from the manifest and gives the same ledger
    again = build_ledger(model, corpus, tmp_path, shard_size=2)
    assert np.array_equal(again.ranks, back.ranks)


def test_long_documents_use_the_models_sliding_windows(tmp_path, tiny_gpt2, id_tokenizer):
    model = TorchCausalLM(tiny_gpt2, id_tokenizer, name="g", max_length=16, overlap=8)
    ids = list(range(3, 53))
    corpus = Corpus([Document("u", "d", " ".join(map(str, ids)))])
    ledger = build_ledger(model, corpus, tmp_path)
    assert ledger.num_tokens == 50
    assert np.array_equal(ledger.ranks, model.token_stats([ids])[0].ranks)


class _TopKDouble:
    """A black box that reveals only whether a token is in the top k (the TopKOnly contract)."""

    def __init__(self, inner, k):
        self.inner, self.k, self.name = inner, k, "api"
        self.tokenizer, self.max_length = inner.tokenizer, inner.max_length
        self.capabilities = frozenset({Capability.TOP_K})

    def topk_ranks(self, sequences):
        out = []
        for st_ in self.inner.token_stats(sequences):
            r = np.minimum(st_.ranks, self.k + 1).astype(np.int32)
            nan = np.full(r.size, np.nan, np.float32)
            out.append(TokenStats(r, nan, nan.copy()))
        return out

    def top_k(self, prefixes, k):
        return self.inner.top_k(prefixes, min(k, self.k))


def test_a_top_k_black_box_gives_the_same_s_for_its_k_and_refuses_larger_k(tmp_path, tiny_gpt2, id_tokenizer):
    from lmleak.errors import CapabilityError

    full = _gpt(tiny_gpt2, id_tokenizer)
    box = _TopKDouble(full, 5)
    corpus = _id_corpus(3)
    led_full = build_ledger(full, corpus, tmp_path / "full")
    led_box = build_ledger(box, corpus, tmp_path / "box")
    assert led_box.k_available == 5 and np.isnan(led_box.logprobs).all()
    for k in (1, 5):
        assert _runs_by_doc(led_box, k) == _runs_by_doc(led_full, k)
    with pytest.raises(CapabilityError):
        ledger_hits(led_box, 6)


def test_a_model_with_only_top_k_is_queried_per_prefix(tiny_gpt2, id_tokenizer):
    full = _gpt(tiny_gpt2, id_tokenizer)

    class Api:
        name, capabilities = "api", frozenset({Capability.TOP_K})
        tokenizer, max_length = full.tokenizer, full.max_length

        def top_k(self, prefixes, k):
            return full.top_k(prefixes, k)

    seqs = [id_tokenizer.encode(d.text) for d in _id_corpus(4, 4)]
    stats = score_documents(Api(), seqs, k=3)
    for s, st_ in zip(seqs, stats, strict=True):
        hits = st_.ranks <= 3
        assert [
            (a, b) for a, b in zip(*leaked_runs(hits, np.array([0, len(s)]))[1:], strict=True)
        ] == algorithm1_per_prefix(Api(), s, 3)


def test_a_model_without_score_or_top_k_is_refused(tmp_path):
    from lmleak.errors import CapabilityError

    class TextOnly:
        name, capabilities = "text", frozenset({Capability.GENERATE})

    with pytest.raises(CapabilityError, match="top_k"):
        build_ledger(TextOnly(), Corpus([Document("u", "d", "x")]), tmp_path)


def test_s_from_the_ledger_equals_algorithm1_on_a_small_lstm(tmp_path, id_tokenizer):
    import torch

    from lmleak.models.small import SmallLSTM, SmallLSTMConfig

    torch.manual_seed(0)
    lstm = SmallLSTM(SmallLSTMConfig(vocab_size=64, embed_dim=16, hidden_dim=16, num_layers=1, max_length=64))
    model = TorchCausalLM(lstm, id_tokenizer, name="lstm", max_length=64, batch_tokens=100)
    corpus = _id_corpus(5)
    got = _runs_by_doc(build_ledger(model, corpus, tmp_path), 5)
    for d, doc in enumerate(corpus):
        assert got[d] == algorithm1_per_prefix(model, id_tokenizer.encode(doc.text), 5)
    assert any(got.values())


def test_a_ledger_of_another_model_in_the_run_is_recomputed_not_reused(tmp_path):
    """The same run folder, another model (here: another FakeLM; over HTTP: another fingerprint behind
    the same URL): the old ledger is replaced by the new model's, equal to a ledger built afresh."""
    corpus = Corpus([Document(f"u{i % 2}", f"d{i}", t) for i, t in enumerate(TEXTS)])
    old = FakeLM.from_texts(TEXTS[:1], name="m", alpha=1.0)  # smooth: better than uniform on unseen words
    new = FakeLM.from_texts(TEXTS, name="m")
    new.fingerprint = "another-model"  # what an HTTPModel exposes: same name, another model
    build_ledger(old, corpus, tmp_path / "run")
    again = build_ledger(new, corpus, tmp_path / "run")
    fresh = build_ledger(new, corpus, tmp_path / "fresh")
    np.testing.assert_array_equal(again.ranks, fresh.ranks)
    np.testing.assert_allclose(again.logprobs, fresh.logprobs)
    assert again.meta["fingerprint"] == fresh.meta["fingerprint"]
    assert not np.array_equal(again.logprobs, build_ledger(old, corpus, tmp_path / "old").logprobs)
