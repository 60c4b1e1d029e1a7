"""The report's work after the ledger is linear in the corpus, whatever the document lengths (issue 14).

Work is counted, not timed: tokens decoded for span texts and contexts, and tokens the public model
is asked to score. The same text as a few very long documents or as many short ones must cost about
the same; the old report decoded every occurrence's whole preceding document and scored each
sequence with that whole prefix, so its work grew with the square of the document length.
"""

from __future__ import annotations

import random

import numpy as np

from lmleak.data.corpus import Corpus, Document
from lmleak.ledger.index import CorpusIndex
from lmleak.ledger.ledger import build_ledger
from lmleak.models.fake import FakeLM
from lmleak.report.features import SpanTexts, sequence_features
from lmleak.report.sequences import occurrences


class CountingPublic:
    def __init__(self, model):
        self.model, self.capabilities, self.name = model, model.capabilities, "public"
        self.tokens = 0

    def score_text(self, contexts, texts):
        self.tokens += sum(len(c.split()) + len(t.split()) for c, t in zip(contexts, texts, strict=True))
        return self.model.score_text(contexts, texts)


def _messages(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)]
    return [
        " ".join(rng.choice(words) for _ in range(40)) + f" -- user{i % 7} <u{i % 7}@example.org>"
        for i in range(n)
    ]


def _work(docs: list[str], model: FakeLM, public: FakeLM, tmp_path) -> tuple[int, int, int]:
    corpus = Corpus([Document(f"u{i % 4}", f"d{i}", t) for i, t in enumerate(docs)])
    ledger = build_ledger(model, corpus, tmp_path)
    index = CorpusIndex.cached(ledger.documents(), ledger.user_ids, None)
    occ = occurrences(ledger, [1])
    texts = SpanTexts(ledger, model.tokenizer, 16)
    counting = CountingPublic(public)
    sequence_features(
        ledger,
        occ,
        index,
        texts,
        public_model=counting,
        public_scope="all",
    )
    return texts.decoded_tokens, counting.tokens, len(occ)


def test_work_after_the_ledger_does_not_grow_with_document_length(tmp_path):
    msgs = _messages(64)
    model = FakeLM.from_texts(msgs, order=3)  # memorises the messages: long leaked runs everywhere
    public = FakeLM.from_texts(_messages(64, seed=1), order=2, name="public")
    short = _work(msgs, model, public, tmp_path / "short")  # 64 documents of one message
    long = _work([" ".join(msgs[i : i + 32]) for i in (0, 32)], model, public, tmp_path / "long")  # 2 of 32
    assert long[2] > 0.5 * short[2]  # about as many occurrences either way
    # per occurrence, the work is bounded by the window: the same order of magnitude either way,
    # where decoding from each document's start would be ~16x larger for the long documents
    assert long[0] / long[2] < 1.5 * short[0] / short[2] + 20
    assert long[1] / long[2] < 1.5 * short[1] / short[2] + 20


def test_contexts_are_the_window_before_the_span_and_text_is_what_the_user_wrote(tmp_path):
    doc = " ".join(f"t{i}" for i in range(500))
    model = FakeLM.from_texts([doc], order=2)
    ledger = build_ledger(model, Corpus([Document("u", "d", doc)]), tmp_path)
    texts = SpanTexts(ledger, model.tokenizer, 10)
    ctx, text = texts.context_and_text(0, 300, 303)
    assert text.strip() == "t300 t301 t302"
    assert ctx.split() == [f"t{i}" for i in range(290, 300)]
    # the slow obvious decoding: the whole prefix, cut at the context
    full = model.tokenizer.decode(ledger.doc_tokens(0)[:303].tolist())
    assert full.endswith(ctx + text)
    assert texts.decoded_tokens == 10 + 13  # the context and the window up to the span's end, nothing more
    assert np.all(ledger.doc_tokens(0)[300:303] == model.tokenizer.encode(text))
