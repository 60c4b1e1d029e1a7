"""Fixtures shared by the fine-tuning tests: a tiny corpus and a tiny Llama base learnt on it."""

from __future__ import annotations

import pytest

from tests.train.test_trainer import tiny_corpus
from tests.train.tiny_llama import make_tiny_llama


@pytest.fixture(scope="module")
def corpus():
    return tiny_corpus(8, 2)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory, corpus):
    return make_tiny_llama(tmp_path_factory.mktemp("llama") / "base", corpus.texts())
