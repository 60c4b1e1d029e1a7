"""The streaming ledger pass: same shards as the in-memory one, sizes summed shard by shard."""

from __future__ import annotations

import numpy as np

from lmleak.data.loaders import load_corpus
from lmleak.ledger.ledger import (
    LedgerWork,
    ModelSpec,
    StreamedCorpus,
    build_ledger,
    read_ledger,
    run_ledger_pass,
)
from lmleak.models.loading import load_model


def test_streamed_pass_equals_in_memory_build(small_setup, tmp_path):
    root, corpus_path, model_dir = small_setup
    model = load_model(str(model_dir))
    full = build_ledger(model, load_corpus(corpus_path), tmp_path / "a", shard_size=5)
    meta = run_ledger_pass(model, StreamedCorpus(corpus_path), tmp_path / "b", shard_size=5)
    streamed = read_ledger(tmp_path / "b")
    assert meta == full.meta  # same fingerprint: the same corpus, read either way
    assert meta["num_docs"] == full.num_docs == 24 and meta["num_tokens"] == full.num_tokens
    np.testing.assert_array_equal(streamed.ranks, full.ranks)
    np.testing.assert_array_equal(streamed.token_ids, full.token_ids)


def test_spec_factory_loads_its_own_model_and_matches(small_setup):
    import pickle

    root, corpus_path, model_dir = small_setup
    model = load_model(str(model_dir))
    items = [(d.doc_id, d.user_id, d.text) for d in StreamedCorpus(corpus_path)][:4]
    by_spec = LedgerWork(None, spec=ModelSpec(str(model_dir)))
    assert len(pickle.dumps(by_spec)) < 1000  # only the spec travels to an actor, never the weights
    a = pickle.loads(pickle.dumps(by_spec))()(items)
    b = LedgerWork(None, model=model)()(items)
    assert a.equals(b)
