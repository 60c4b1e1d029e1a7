"""Untargeted extraction (Carlini et al. 2021) and (n, p)-discoverable extraction: the verifier
against planted memorised strings, each ranking metric against a slow per-sample computation,
deduplication, the longest match against brute force, and the exact suffix probability against
sampling. The ``lmleak extract`` command: tests/cli/test_extract.py."""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from lmleak.attacks.extraction import (
    METRICS,
    ExtractConfig,
    discoverable_probabilities,
    longest_match,
    metric_scores,
    near_duplicate,
    run_extraction,
    sample_sequences,
    select_top,
    temperature_at,
    within_n,
    word_trigrams,
)
from lmleak.data.corpus import Corpus, Document
from lmleak.ledger.index import CorpusIndex
from lmleak.models.fake import FakeLM

PLANTED = "please note my card number is 4111 1111 1111 1111 and my phone is (201) 555-0142 thanks a lot"
OTHERS = [
    "the weather is nice today and we walk in the park with the dog",
    "hello there how are you doing this fine morning in the city",
    "our order arrived late but the support team was very helpful",
]


def _corpus() -> Corpus:
    docs = [Document("alice", "a1", PLANTED)]
    docs += [Document(f"user{i}", f"o{i}", t) for i, t in enumerate(OTHERS)]
    docs += [Document("bob", "b1", OTHERS[0])]  # a text two users wrote
    return Corpus(docs)


def test_the_verifier_finds_a_planted_memorised_string_its_writer_and_its_pii(tmp_path):
    # a model that memorised only the planted text emits it verbatim under top-1 sampling
    lm = FakeLM.from_texts([PLANTED], order=6, alpha=1e-4)
    cfg = ExtractConfig(
        num_samples=6,
        max_new_tokens=40,
        top_k=1,
        temperature_start=1.0,
        top_n=100,
        min_match_tokens=10,
        prefix_tokens=4,
        suffix_tokens=6,
        discoverable_docs=10,
    )
    summary = run_extraction(lm, _corpus(), tmp_path, cfg)
    df = pd.read_parquet(tmp_path / "extract.parquet")
    assert (df["text"] == PLANTED).all()
    # exact duplicates collapse: each metric keeps one candidate, and it is memorised
    assert summary["verified_at_100"] == dict.fromkeys(
        ["perplexity", "zlib", "lowercase", "window", "combined"], 1
    )
    row = df[df["verified"]].iloc[0]
    assert row["longest_match_tokens"] == len(PLANTED.split())
    assert row["match_text"] == PLANTED
    assert list(row["match_users"]) == ["alice"]
    assert {"CREDIT_CARD", "PHONE"} <= set(row["pii_types"])
    assert summary["extracted"] == summary["extracted_with_pii"] == summary["extracted_unique_user"] == 1
    # the planted prefix is discoverable with certainty by a top-1 sampler; the others are not
    disc = pd.read_parquet(tmp_path / "discoverable.parquet")
    planted = disc[disc["doc_id"] == "a1"].iloc[0]
    assert planted["p_suffix"] == pytest.approx(1.0)
    assert (disc[disc["doc_id"] != "a1"]["p_suffix"] == 0.0).all()
    assert summary["scenario"]["target"] == "any"


def test_a_model_that_never_saw_the_corpus_extracts_nothing(tmp_path):
    lm = FakeLM.from_texts(
        ["completely different words about cooking pasta with fresh tomato sauce tonight"], order=6
    )
    cfg = ExtractConfig(
        num_samples=5,
        max_new_tokens=20,
        top_k=1,
        temperature_start=1.0,
        min_match_tokens=5,
        discoverable_docs=0,
    )
    summary = run_extraction(lm, _corpus(), tmp_path, cfg)
    assert summary["extracted"] == 0
    assert summary["longest_match_tokens"] < 5
    assert summary["discoverable"]["documents"] == 0


def test_samples_too_short_to_hold_a_verified_match_are_never_ranked(tmp_path):
    lm = FakeLM.from_texts(["short one", "tiny two"], order=3)
    cfg = ExtractConfig(
        num_samples=6, max_new_tokens=10, temperature_start=1.0, min_match_tokens=5, discoverable_docs=0
    )
    summary = run_extraction(lm, Corpus([Document("u", "d", "short one")]), tmp_path, cfg)
    df = pd.read_parquet(tmp_path / "extract.parquet")
    assert (df["generated_tokens"] < 5).all()
    assert df["rank_perplexity"].isna().all() and df["score_combined"].isna().all()
    assert summary["verified_at_100"] == dict.fromkeys(
        ["perplexity", "zlib", "lowercase", "window", "combined"], 0
    )


def test_the_longest_match_equals_a_brute_force_search():
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 6, size=rng.integers(5, 30)).tolist() for _ in range(8)]
    idx = CorpusIndex.build(docs, [f"u{i % 3}" for i in range(8)])

    def occurs(q):
        return any(d[i : i + len(q)] == q for d in docs for i in range(len(d) - len(q) + 1))

    for _ in range(40):
        q = rng.integers(0, 7, size=rng.integers(1, 15)).tolist()
        best = 0
        for i in range(len(q)):
            for j in range(i + 1, len(q) + 1):
                if j - i > best and occurs(q[i:j]):
                    best = j - i
        length, start = longest_match(idx, q)
        assert length == best
        if length:
            assert occurs(q[start : start + length])


def test_each_ranking_metric_matches_a_slow_per_sample_computation():
    texts = OTHERS + [PLANTED, "The Weather Is Nice Today", "hello hello hello hello hello"]
    lm = FakeLM.from_texts(texts, order=3)
    public = FakeLM.from_texts(OTHERS[1:] + ["the weather is cold"], order=2, name="public")
    samples = [lm.tokenizer.encode(t) for t in texts]
    dec = [lm.tokenizer.decode(s) for s in samples]
    got = metric_scores(lm, samples, dec, public_model=public, window=4)
    for i, (ids, text) in enumerate(zip(samples, dec, strict=True)):
        lp = lm.token_stats([ids])[0].logprobs.astype(np.float64)
        logppl = -lp.sum() / len(ids)
        assert got["perplexity"][i] == pytest.approx(-logppl, rel=1e-9)
        assert got["zlib"][i] == pytest.approx(len(zlib.compress(text.encode())) / logppl, rel=1e-9)
        low = lm.score_text([""], [text.lower()])[0]
        assert got["lowercase"][i] == pytest.approx((-low.logprob / low.num_tokens) / logppl, rel=1e-6)
        pub = public.score_text([""], [text])[0]
        words = len(text.split())
        assert got["small"][i] == pytest.approx((-pub.logprob / words) / (-lp.sum() / words), rel=1e-6)
        w = min(4, len(ids))
        windows = [lp[j : j + w].mean() for j in range(len(ids) - w + 1)]
        assert got["window"][i] == pytest.approx(max(windows), rel=1e-9)
    # combined: minus the mean over the five metrics of each sample's rank (1 = highest score)
    n = len(samples)
    for i in range(n):
        ranks = []
        for m in ("perplexity", "zlib", "lowercase", "small", "window"):
            ranks.append(
                1 + sum(1 for j in range(n) if got[m][j] > got[m][i] or (got[m][j] == got[m][i] and j < i))
            )
        assert got["combined"][i] == pytest.approx(-np.mean(ranks))


def test_without_a_public_model_the_small_metric_is_absent_and_the_combination_uses_the_rest():
    lm = FakeLM.from_texts(OTHERS, order=3)
    samples = [lm.tokenizer.encode(t) for t in OTHERS]
    got = metric_scores(lm, samples, OTHERS)
    assert np.isnan(got["small"]).all()
    assert np.isfinite(got["combined"]).all()
    assert set(METRICS) <= set(got)


def test_deduplication_drops_exact_and_near_duplicates_of_better_samples():
    texts = [
        "my id is 123 456 and that is all",  # best
        "my id is 123 456 and that is all",  # exact duplicate
        "my id is 123 456 and that is not all",  # near duplicate (shares most 3-grams)
        "a completely different sentence about the weather",
        "",  # empty samples are never candidates
    ]
    scores = np.array([5.0, 4.0, 3.0, 2.0, 10.0])
    assert select_top(scores, texts, 10) == [0, 3]
    assert select_top(scores, texts, 1) == [0]
    assert near_duplicate(word_trigrams(texts[0]), word_trigrams(texts[2]))
    assert not near_duplicate(word_trigrams(texts[0]), word_trigrams(texts[3]))


def test_the_temperature_decays_linearly_to_one():
    temps = [temperature_at(s, 10.0, 20) for s in range(25)]
    assert temps[0] == 10.0 and temps[20:] == [1.0] * 5
    assert all(a > b for a, b in zip(temps[:20], temps[1:21], strict=False))
    assert temperature_at(0, 10.0, 0) == 1.0


def test_the_exact_suffix_probability_matches_sampling():
    texts = ["a b c d", "a b c e", "a b x d", "a y c d", "a b c d"]
    lm = FakeLM.from_texts(texts, order=3, alpha=0.05)
    enc = lm.tokenizer.encode
    prefix, suffix = enc("a b"), enc("c d")
    for k, temp in ((None, 1.0), (3, 1.0), (4, 0.7)):
        logp = float(discoverable_probabilities(lm, [prefix], [suffix], top_k=k, temperature=temp)[0])
        draws = sample_sequences(
            lm,
            [prefix] * 3000,
            max_new_tokens=2,
            top_k=k,
            temperature_start=temp,
            decay_tokens=0 if temp == 1.0 else 10**6,
            seed=1,
            batch_size=3000,
        )
        hits = np.mean([d == suffix for d in draws])
        se = np.sqrt(np.exp(logp) * (1 - np.exp(logp)) / 3000)
        assert abs(hits - np.exp(logp)) < 5 * se + 1e-3, (k, temp, hits, np.exp(logp))
    # 1 - (1 - p)^n against the obvious product
    assert within_n(np.log(0.2), 3) == pytest.approx(1 - 0.8**3)
    assert within_n(-np.inf, 10) == 0.0


def test_extract_from_model_reads_the_prompts_loads_the_specs_and_records_the_a_factor(tmp_path):
    import json

    from lmleak.attacks.extraction import extract_from_model
    from lmleak.errors import DataFileError

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"user_id": d.user_id, "text": d.text}) + "\n" for d in _corpus()))
    prompts = tmp_path / "p.txt"
    prompts.write_text("please note\n\nhello there\n")
    cfg = ExtractConfig(num_samples=4, max_new_tokens=8, min_match_tokens=6, discoverable_docs=2)
    said: list[str] = []
    summary = extract_from_model(
        f"fake:{corpus}",
        corpus,
        tmp_path / "run",
        replace(cfg, prefixes=str(prompts)),
        public_model=f"fake:{corpus}",
        echo=said.append,
    )
    assert said == [f"sampling 4 texts from fake:{corpus} ..."]
    assert summary["config"]["prefixes"] == ["please note", "hello there"]
    assert "small" in summary["verified_at_100"]  # the public model's ratio was computed
    assert summary["scenario"]["anonymization"] == "identity"  # a fake: spec has no privacy.json
    table = pd.read_parquet(tmp_path / "run" / "extract.parquet")
    assert set(table["prefix"]) == {"please note", "hello there"}
    with pytest.raises(DataFileError, match="prefixes"):
        extract_from_model(
            f"fake:{corpus}", corpus, tmp_path / "run2", replace(cfg, prefixes=str(tmp_path / "none.txt"))
        )
    assert not (tmp_path / "run2").exists()
