"""Fixtures of the PII tests: a small synthetic CustomerSim corpus with its ground truth."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def synth_corpus(tmp_path_factory):
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.customersim import synthesize
    from lmleak.pii.evaluate import load_secrets

    paths = synthesize(tmp_path_factory.mktemp("synth"), users=30, dialogs_per_user=4, seed=3)
    corpus = load_corpus(paths["corpus"])
    return {"paths": paths, "corpus": corpus, "secrets": load_secrets(paths["secrets"], corpus)}
