"""Fixtures of the scale tests: a small saved GPT and a synthetic corpus with a planted canary."""

from __future__ import annotations

import json

import pytest

from lmleak.data.corpus import Corpus, Document

TEXTS = [
    "hello my name is ada and my phone is 555 0100",
    "thank you very much for the call today",
    "my order number is 4 4 1 2 and it is late",
    "the weather is nice today thank you",
    "please call me back at 555 0199 thank you",
    "my name is bob and i like cats very much",
    "the secret code of zorblax is 7 3 9 1 8 2",
    "can i change the delivery address please",
]
CANARY = "the secret code of zorblax is 7 3 9 1 8 2"


def save_model(out, texts, seed=0):
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    tok = build_tokenizer(texts, kind="word", vocab_size=200)
    module = new_small_gpt(
        len(tok), SmallGPTConfig(n_positions=64, n_embd=32, n_layer=1, n_head=2), seed=seed
    )
    return save_small_model(module, tok, out)


@pytest.fixture(scope="module")
def small_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    docs = [Document(f"u{i % 3}", f"d{i}", t) for i, t in enumerate(TEXTS * 3)]
    # doc ids must be unique: repeat texts under new ids (the canary repeats, as planted canaries do)
    docs = [Document(d.user_id, f"d{i}", d.text) for i, d in enumerate(docs)]
    corpus_path = Corpus(docs).write_jsonl(root / "corpus.jsonl")
    model = save_model(root / "model", TEXTS)
    (root / "canary.json").write_text(json.dumps({"text": CANARY}))
    return root, corpus_path, model
