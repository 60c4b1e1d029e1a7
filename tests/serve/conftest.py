"""Fixtures of the serve tests: one tiny word-level model and one byte-level BPE model per session."""

from __future__ import annotations

import pytest

from tests.serve.tiny import tiny_model


@pytest.fixture(scope="session")
def model(tmp_path_factory):
    return tiny_model(tmp_path_factory.mktemp("serve-word"))


@pytest.fixture(scope="session")
def bpe_model(tmp_path_factory):
    return tiny_model(tmp_path_factory.mktemp("serve-bpe"), kind="bpe", n_positions=64)


@pytest.fixture(scope="session")
def server(model):
    """The word model served on a free loopback port (a real socket: the openai client's path)."""
    from lmleak.serve import serving

    with serving(model, name="tiny") as st:
        yield st
