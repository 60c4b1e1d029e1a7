"""Features and metrics of the leakage report (paper 001 §4 Table 1, §5)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.ledger.ledger import Ledger, build_ledger
from lmleak.models.base import TokenStats
from lmleak.models.fake import FakeLM, SimpleWordTokenizer
from lmleak.report.leakage import ReportConfig, run_report
from tests.report.in_memory import report_from_ledger

# Paper 001 Table 1: "very much" leaked twice, for one user, with contexts "thank you" and
# "i like cats" at perplexities 1.3 and 3.6; it occurs ten times in D among five users.
TABLE1_DOCS = [
    ("u1", "thank you very much"),
    ("u1", "i like cats very much"),
    ("u2", "very much very much"),
    ("u3", "very much so very much"),
    ("u4", "thanks very much"),
    ("u4", "very much"),
    ("u5", "very much ok"),
    ("u5", "no very much"),
]
LEAKED = {0: (2, 4, 1.3), 1: (3, 5, 3.6)}  # document -> (start, end, per-word perplexity)


def _table1_ledger() -> tuple[Ledger, SimpleWordTokenizer]:
    tok = SimpleWordTokenizer(w for _, t in TABLE1_DOCS for w in t.split())
    ids, stats = [], []
    for d, (_, text) in enumerate(TABLE1_DOCS):
        t = tok.encode(text)
        ranks = np.full(len(t), 7, np.int32)
        lps = np.full(len(t), -3.0, np.float32)
        if d in LEAKED:
            s, e, pp = LEAKED[d]
            ranks[s:e] = 1
            lps[s:e] = -math.log(pp)  # 2 tokens, 2 words: per-word perplexity pp
        ids.append(t)
        stats.append(TokenStats(ranks, lps, np.full(len(t), -0.1, np.float32)))
    led = Ledger.from_stats([f"d{i}" for i in range(len(ids))], [u for u, _ in TABLE1_DOCS], ids, stats)
    return led, tok


def test_the_papers_table1_example():
    ledger, tok = _table1_ledger()
    seqs, occ, metrics = report_from_ledger(ledger, tok, ReportConfig(k=(1,)))
    assert len(seqs) == 1 and len(occ) == 2
    row = seqs.iloc[0]
    assert row["text"] == "very much"
    assert (row["count_in_s"], row["users_in_s"], row["count_in_d"], row["users_in_d"]) == (2, 1, 10, 5)
    assert list(row["contexts"]) == ["thank you", "i like cats"]
    assert np.allclose(row["perplexities"], [1.3, 3.6], atol=1e-6)
    assert list(row["context_lengths"]) == [2, 3]
    assert metrics["1"]["unique_sequences"] == 0  # five users hold it: plausible deniability
    assert metrics["1"]["leakage_epsilon"] is None


def test_ledger_perplexity_equals_the_model_scoring_the_same_text_given_the_same_context(tmp_path):
    texts = ["thank you very much for the call", "my pin is 1 2 3 4 ok", "the weather is nice today"]
    model = FakeLM.from_texts(texts)
    corpus = Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)])
    ledger = build_ledger(model, corpus, tmp_path)
    seqs, occ, _ = report_from_ledger(ledger, model.tokenizer, ReportConfig(k=(1, 2)), public_model=model)
    assert len(occ) >= 3
    # scoring with the audited model itself as the "public" model reproduces the ledger values
    assert np.allclose(occ["public_perplexity"], occ["perplexity"], rtol=1e-5)
    assert np.allclose(seqs["perplexity_ratio"], 1.0, rtol=1e-5)
    for _, o in occ.iterrows():
        doc = corpus.get(o["doc_id"])
        words = doc.text.split()
        ctx, cont = " ".join(words[: o["start"]]), " ".join(words[o["start"] : o["end"]])
        s = model.score_text([ctx], [cont])[0]
        assert o["perplexity"] == pytest.approx(s.perplexity_per_word, rel=1e-5)


def test_unique_sequences_epsilon_and_curation_with_a_public_model(tmp_path):
    private = ["my secret code is 7 7 3 1 9", "call me at 5 5 5 0 1 9 9", "the weather is nice today"]
    public_texts = ["the weather is nice today", "call me later"]
    model = FakeLM.from_texts(private)
    public = FakeLM.from_texts(public_texts, name="public")
    corpus = Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(private)])
    s = run_report(model, corpus, tmp_path / "run", ReportConfig(k=(1,), t=2.0), public_model=public)
    seqs = pd.read_parquet(tmp_path / "run" / "sequences.parquet")
    unique = seqs[seqs["users_in_d"] == 1]
    assert s["unique_sequences"] == len(unique) > 0
    assert s["leakage_epsilon"] == pytest.approx(unique["perplexity_ratio"].max())
    assert s["leakage_epsilon"] > 2.0  # the secret is far more surprising to the public model
    assert s["curated_unique_sequences"] == int((unique["perplexity_ratio"] >= 2.0).sum())
    assert s["curated_unique_sequences"] < s["unique_sequences"]  # the weather is deniable
    assert s["scenario"]["access"] == "top_k" and s["scenario"]["attack"] == "tab_attack"
    assert s["perplexity"] is not None and 0 < s["top_k_accuracy"] <= 1
    occ = pd.read_parquet(tmp_path / "run" / "occurrences.parquet")
    assert {"doc_id", "user_id", "start", "end", "k", "sequence_id"} <= set(occ.columns)
    assert (tmp_path / "run" / "summary.json").stat().st_mode & 0o077 == 0


def test_the_redacted_report_holds_no_text(tmp_path):
    private = ["my secret code is 7 7 3 1 9", "the weather is nice today"]
    model = FakeLM.from_texts(private)
    corpus = Corpus([Document(f"user-{i}", f"d{i}", t) for i, t in enumerate(private)])
    run_report(model, corpus, tmp_path, ReportConfig(k=(1,), redact=True))
    seqs = pd.read_parquet(tmp_path / "sequences.parquet")
    occ = pd.read_parquet(tmp_path / "occurrences.parquet")
    assert {"text", "contexts", "user_ids"}.isdisjoint(seqs.columns)
    assert {
        "length_tokens",
        "count_in_d",
        "users_in_d",
        "context_lengths",
        "perplexities",
        "sequence_id",
    } <= set(seqs.columns)
    dump = seqs.to_csv() + occ.to_csv()
    for word in ("secret", "weather", "user-0"):
        assert word not in dump


def test_the_p_filter_counts_sequences_with_few_users_in_s():
    ledger, tok = _table1_ledger()
    _, _, m1 = report_from_ledger(ledger, tok, ReportConfig(k=(1,), p=1))
    _, _, m2 = report_from_ledger(ledger, tok, ReportConfig(k=(1,), p=2))
    assert (m1["1"]["p_filtered_sequences"], m2["1"]["p_filtered_sequences"]) == (0, 1)


def test_api_hardening_removes_leaks_only_where_the_model_is_unsure():
    from lmleak.ledger.index import CorpusIndex
    from lmleak.report.studies import hardening_curve

    ledger, tok = _table1_ledger()
    ledger.top1_logprobs[:] = -0.1
    d1 = slice(ledger.offsets[1], ledger.offsets[2])
    ledger.top1_logprobs[d1] = -3.0  # the model is unsure throughout document 1
    index = CorpusIndex.build(ledger.documents(), ledger.user_ids)
    table = hardening_curve(ledger, index, tok, [2.0, float("inf")])
    hard, open_ = table.iloc[0], table.iloc[1]
    assert open_["num_sequences"] == 1 and hard["num_sequences"] == 1
    assert hard["accuracy"] < open_["accuracy"]
    assert hard["answered"] < 1.0 == open_["answered"]


@pytest.mark.parametrize("kind", ["word", "bpe"])
def test_contexts_and_texts_retokenise_to_the_ledger_tokens(tmp_path, kind):
    """Scoring the decoded (context, text) pairs with the audited model itself gives ratio 1, so a
    public model sees exactly the leaked text after exactly its context (spaces kept)."""
    from lmleak.models.small import (
        SmallGPTConfig,
        build_tokenizer,
        load_small_model,
        new_small_gpt,
        save_small_model,
    )

    texts = [
        "hello my name is ada and my phone is 555 0100, thanks!",
        "thank you very much for the call today.",
        "my order number is 4412 and it is late",
    ]
    tok = build_tokenizer(texts, kind=kind, vocab_size=300)
    save_small_model(
        new_small_gpt(len(tok), SmallGPTConfig(n_positions=64, n_embd=32, n_layer=1, n_head=2)),
        tok,
        tmp_path / "m",
    )
    model = load_small_model(tmp_path / "m")
    corpus = Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)])
    ledger = build_ledger(model, corpus, tmp_path / "run")
    _, occ, _ = report_from_ledger(
        ledger, model.tokenizer, ReportConfig(k=(40,), public_scope="all"), public_model=model
    )
    assert len(occ) > 0
    assert np.allclose(occ["perplexity_ratio"], 1.0, rtol=1e-4)


def test_span_texts_never_cut_a_character_that_byte_level_tokens_split():
    """Byte-level BPE splits Cyrillic and CJK characters between tokens: bench_report_scale on the
    multilingual synth mail found leaked texts '�ва' and '�в\\n>' that occur in no document. Every
    span's text (and context + text) must be text of the document."""
    from types import SimpleNamespace

    from lmleak.models.small import build_tokenizer
    from lmleak.report.features import SpanTexts

    texts = [
        "Иван Петров пишет: привет всем, как дела у Марии?",
        "Любомир Блохин <lyubomir@example.com> 東京都",
    ]
    tok = build_tokenizer(texts * 3, kind="bpe", vocab_size=280)
    ids = [tok.encode(t, add_special_tokens=False) for t in texts]
    assert any("\ufffd" in tok.decode(i[:k]) for i in ids for k in range(1, len(i)))  # it does cut them
    ledger = SimpleNamespace(token_ids=np.array(sum(ids, [])), offsets=np.array([0, len(ids[0])]))
    spans = SpanTexts(ledger, tok, window=8)
    checked = 0
    for d, text in enumerate(texts):
        for s in range(len(ids[d])):
            for e in range(s + 1, min(len(ids[d]), s + 6) + 1):
                ctx, span = spans.context_and_text(d, s, e)
                assert "\ufffd" not in ctx + span and ctx + span in text, (s, e, ctx, span)
                checked += 1
    assert checked > 500
