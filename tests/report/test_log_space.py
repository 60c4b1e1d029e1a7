"""Leakage ε in log space (issue 15): no overflow, no dropped maximum, percentiles of the log ratio."""

from __future__ import annotations

import math

import numpy as np

from lmleak.ledger.ledger import Ledger
from lmleak.models.base import Capability, SpanScore, TokenStats
from lmleak.models.fake import SimpleWordTokenizer
from lmleak.report.leakage import ReportConfig, report_from_ledger
from lmleak.report.metrics import leakage_epsilon
from lmleak.runs import to_json

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
    seqs, _, by_k = report_from_ledger(ledger, tok, ReportConfig(ks=(1,)), public_model=public)
    m = by_k["1"]
    assert m["log_leakage_epsilon"] == 800.0
    assert m["leakage_epsilon"] is None  # e^800 does not fit: the log value stands beside it
    # the old definition (max of the finite ratios) loses the largest leak
    with np.errstate(over="ignore"):
        ratios = np.exp(seqs["log_perplexity_ratio"].to_numpy())
    finite = ratios[np.isfinite(ratios)]
    assert finite.max() == math.exp(2.0)
    assert leakage_epsilon(seqs["users_in_d"], ratios) == math.inf
    # hand-computed percentiles of the three log ratios (800, 2, 1)
    assert np.isclose(m["log_ratio_p95"], np.percentile([800.0, 2.0, 1.0], 95))
    assert m["log_ratio_p50"] == 2.0
    assert '"log_leakage_epsilon": 800.0' in to_json(m)


def test_log_ratio_columns_equal_a_hand_computation():
    ledger, tok = _ledger(-0.5)
    public = ScriptedPublic({"secret one": -7.0, "secret two": -5.0, "common words": -3.0})
    seqs, _, by_k = report_from_ledger(ledger, tok, ReportConfig(ks=(1,)), public_model=public)
    row = seqs.set_index("text").loc["secret one"]
    assert row["logprob"] == -1.0 and row["public_logprob"] == -7.0 and row["length_words"] == 2
    assert row["log_perplexity_ratio"] == (-1.0 + 7.0) / 2
    assert np.isclose(row["perplexity_ratio"], math.exp(3.0))
    assert by_k["1"]["leakage_epsilon"] == math.exp(3.0)
