"""Leakage ε in log space (issue 15): no overflow, no dropped maximum, percentiles of the log ratio."""

from __future__ import annotations

import math

import numpy as np

from lmleak.ledger.ledger import Ledger
from lmleak.models.base import Capability, SpanScore, TokenStats
from lmleak.models.fake import SimpleWordTokenizer
from lmleak.report.leakage import ReportConfig
from lmleak.runs import to_json
from tests.report.in_memory import report_from_ledger

DOCS = [("u1", "alpha secret one"), ("u2", "beta secret two"), ("u3", "gamma common words")]


class ScriptedPublic:
    """A public model whose log-prob of each continuation is given by hand."""

    capabilities = frozenset({Capability.SCORE})
    name = "scripted"

    def __init__(self, logprobs: dict[str, float]):
        self.logprobs = logprobs

    def score_text(self, contexts, texts):
        return [SpanScore(self.logprobs[t.strip()], len(t.split()), len(t.split())) for t in texts]


def _ledger(leaked_lp: float) -> tuple[Ledger, SimpleWordTokenizer]:
    tok = SimpleWordTokenizer(w for _, t in DOCS for w in t.split())
    ids, stats = [], []
    for _, text in DOCS:
        t = tok.encode(text)
        ranks = np.array([9, 1, 1], np.int32)  # "secret one", "secret two", "common words" leak at k=1
        lps = np.array([-5.0, leaked_lp, leaked_lp], np.float32)
        ids.append(t)
        stats.append(TokenStats(ranks, lps, np.zeros(3, np.float32)))
    return Ledger.from_stats([f"d{i}" for i in range(3)], [u for u, _ in DOCS], ids, stats), tok


def test_a_ratio_that_overflows_a_float_is_the_maximum_not_dropped():
    ledger, tok = _ledger(-0.5)
    # per word: (logprob - public_logprob) / 2 words. "secret one": (-1 + 1601) / 2 = 800, a ratio of
    # e^800 that overflows a float64; "secret two": (-1 + 5) / 2 = 2; "common words": (-1 + 3) / 2 = 1
    public = ScriptedPublic({"secret one": -1601.0, "secret two": -5.0, "common words": -3.0})
    seqs, _, by_k = report_from_ledger(ledger, tok, ReportConfig(k=(1,)), public_model=public)
    m = by_k["1"]
    assert m["log_leakage_epsilon"] == 800.0
    assert m["leakage_epsilon"] is None  # e^800 does not fit: the log value stands beside it
    # the old definition (max of the finite ratios) loses the largest leak
    with np.errstate(over="ignore"):
        ratios = np.exp(seqs["log_perplexity_ratio"].to_numpy())
    finite = ratios[np.isfinite(ratios)]
    assert finite.max() == math.exp(2.0)
    assert ratios[seqs["users_in_d"].to_numpy() == 1].max() == math.inf  # the ratio of e^800
    # hand-computed percentiles of the three log ratios (800, 2, 1)
    assert np.isclose(m["log_ratio_p95"], np.percentile([800.0, 2.0, 1.0], 95))
    assert m["log_ratio_p50"] == 2.0
    assert '"log_leakage_epsilon": 800.0' in to_json(m)


def test_log_ratio_columns_equal_a_hand_computation():
    ledger, tok = _ledger(-0.5)
    public = ScriptedPublic({"secret one": -7.0, "secret two": -5.0, "common words": -3.0})
    seqs, _, by_k = report_from_ledger(ledger, tok, ReportConfig(k=(1,)), public_model=public)
    row = seqs.set_index("text").loc["secret one"]
    assert row["logprob"] == -1.0 and row["public_logprob"] == -7.0 and row["length_words"] == 2
    assert row["log_perplexity_ratio"] == (-1.0 + 7.0) / 2
    assert np.isclose(row["perplexity_ratio"], math.exp(3.0))
    assert by_k["1"]["leakage_epsilon"] == math.exp(3.0)


class ContextPublic(ScriptedPublic):
    """A public model that gives probability 0 to a text after one given context word."""

    def __init__(self, logprobs: dict[str, float], zero_after: str):
        super().__init__(logprobs)
        self.zero_after = zero_after

    def score_text(self, contexts, texts):
        return [
            SpanScore(
                -math.inf if c.strip().endswith(self.zero_after) else self.logprobs[t.strip()],
                len(t.split()),
                len(t.split()),
            )
            for c, t in zip(contexts, texts, strict=True)
        ]


def test_an_infinite_log_ratio_is_kept_over_a_finite_one_of_the_same_sequence_and_in_the_summary():
    """Regression: a sequence's representative occurrence was the largest *finite* log ratio, so a
    public model that gives one occurrence probability 0 (ratio +inf) was dropped for a finite one,
    and the summary's JSON turned the +inf maximum into null (a gate read it as "not measured")."""
    docs = [("u1", "alpha secret one"), ("u1", "delta secret one"), ("u2", "beta secret two")]
    tok = SimpleWordTokenizer(w for _, t in docs for w in t.split())
    ids, stats = [], []
    for _, text in docs:
        ids.append(tok.encode(text))
        stats.append(
            TokenStats(
                np.array([9, 1, 1], np.int32),
                np.array([-5.0, -0.5, -0.5], np.float32),
                np.zeros(3, np.float32),
            )
        )
    ledger = Ledger.from_stats([f"d{i}" for i in range(3)], [u for u, _ in docs], ids, stats)
    public = ContextPublic({"secret one": -7.0, "secret two": -5.0}, zero_after="delta")
    seqs, occ, by_k = report_from_ledger(ledger, tok, ReportConfig(k=(1,)), public_model=public)
    ratios = sorted(occ.loc[occ["user_id"] == "u1", "log_perplexity_ratio"])
    assert ratios == [3.0, math.inf]  # (-1 + 7) / 2 after "alpha"; probability 0 after "delta"
    row = seqs.set_index("text").loc["secret one"]
    assert row["users_in_d"] == 1 and row["log_perplexity_ratio"] == math.inf
    m = by_k["1"]
    assert m["log_leakage_epsilon"] == math.inf and m["leakage_epsilon"] is None
    assert m["leakage_epsilon_infinite"] is True
    assert '"leakage_epsilon_infinite": true' in to_json(m)  # survives JSON, where inf becomes null
    finite = report_from_ledger(_ledger(-0.5)[0], _ledger(-0.5)[1], ReportConfig(k=(1,)),
                                public_model=ScriptedPublic({"secret one": -7.0, "secret two": -5.0, "common words": -3.0}))[2]  # fmt: skip
    assert finite["1"]["leakage_epsilon_infinite"] is False
