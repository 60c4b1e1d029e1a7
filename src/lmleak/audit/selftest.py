"""``lmleak selftest``: the installed lmleak against answers computed another way, on a tiny model.

A user who sees a surprising number needs to tell "my setup is wrong" from "the tool is wrong".
This module builds a tiny deterministic model (a two-layer GPT-2 of width 32, freshly initialised
with a fixed seed, over a word-level tokenizer with one token per digit; no download, no training)
and checks every family of lmleak's numbers against an independent computation:

- **ledger**: the one teacher-forced pass of the leakage report (log-probabilities and ranks of
  every corpus token) against one ``next_logprobs`` query per prefix;
- **exposure**: the exact rank of the pruned trie search against a brute force that scores every
  one of the 1,000 candidates of a 3-digit format with ``score_ids`` (Carlini et al. 2019);
- **mia.<method>**: each membership score of :func:`lmleak.attacks.mia_methods.score_methods`
  (perplexity, zlib, Min-K%, Min-K%++, lowercase, ReCaLL, reference) against its formula applied
  to per-token log-probabilities and next-token distributions read one prefix at a time (texts of
  5, 10 and 15 tokens, so that ``k·n`` is whole for k = 20 % and the count convention cannot
  matter);
- **dp.<case>**: the one-run DP bound (Steinke, Nasr & Jagielski 2023) against closed forms: all
  guesses right (``log(q / (1 - q))``, ``q = 0.05^(1/r)``), any precision at δ = 0 (the logit of the
  exact binomial lower bound, a Beta quantile), the δ term by hand, and the planner's canaries for
  a target ε;
- **wilson.<case>**, **newcombe.<case>**: the 95 % intervals against the worked examples
  published by Newcombe (1998a, Table I, method 3; 1998b, Table II, method 10);
- **verdict.null_model**: one null-model audit (:mod:`lmleak.audit.nullmodel`): a tiny GPT trained
  for a few seconds only on other people (``synth mail``, another seed), audited with
  ``lmleak audit --model`` against a ``synth mail`` corpus and gated with the release profile, must
  not be Fail: a model that never saw the audited people has nothing of theirs to leak.

Every check is one :class:`Check` (name, ok, lmleak's number, the independent number); a check
that raises is a failed check with the error as its number, and the others still run. The
library is called through its modules' attributes at run time, so what runs is what is installed
(and what a test plants there).
"""

from __future__ import annotations

import math
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lmleak import intervals
from lmleak.attacks import dp_audit as dp
from lmleak.attacks import mia_methods as mia
from lmleak.attacks.exposure import measure_exposure
from lmleak.audit import nullmodel
from lmleak.data.corpus import Document
from lmleak.data.loaders import load_corpus
from lmleak.data.synth.mail import synthesize
from lmleak.ledger.ledger import build_ledger
from lmleak.models.base import count_words
from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt
from lmleak.models.tokenizer import HFTokenizer
from lmleak.models.torch_causal import TorchCausalLM
from lmleak.scenarios import margins
from lmleak.train.config import TrainConfig

#: The corpus of the tiny model's tokenizer and of the ledger check (documents of three users).
CORPUS = (
    ("u1", "alice wrote to bob about the meeting on monday morning"),
    ("u1", "my phone number is 555 0142 and my id is 907"),
    ("u2", "the weather is fine today in the city of springfield"),
    ("u2", "bob answered that the meeting moved to tuesday"),
    ("u3", "please call carol at 555 0199 before noon"),
)
#: The membership texts: 5, 10 and 15 tokens each (a digit is a token, a space before digits one
#: more); capitals, so that the lowercase attack compares two different token sequences.
MIA_TEXTS = (
    "Alice wrote to Bob today",
    "The meeting on Monday morning moved to Tuesday in Springfield",
    "my id is 907 and my phone is 555",
)
RECALL_PREFIX = "the weather is fine today"
#: the size of the null-model audit's two ``synth mail`` corpora (a few seconds of training)
NULL_SCALE = 0.02
CANARY_PREFIX = "my id is "
CANARY_SECRETS = ("907", "123", "555")
#: Newcombe (1998a) Table I, method 3 (Wilson score): successes, trials, published 95 % interval.
WILSON_EXAMPLES = (
    (81, 263, (0.2553, 0.3662)),
    (15, 148, (0.0624, 0.1605)),
    (0, 20, (0.0, 0.1611)),
    (1, 29, (0.0061, 0.1718)),
)
#: Newcombe (1998b) Table II, method 10 (hybrid score): two samples and the published interval.
NEWCOMBE_EXAMPLES = (
    (56, 70, 48, 80, (0.0524, 0.3339)),
    (9, 10, 3, 10, (0.1705, 0.8090)),
    (5, 56, 0, 29, (-0.0381, 0.1926)),
    (0, 10, 0, 20, (-0.1611, 0.2775)),
    (0, 10, 0, 10, (-0.2775, 0.2775)),
    (10, 10, 0, 20, (0.6791, 1.0)),
    (10, 10, 0, 10, (0.6075, 1.0)),
)


@dataclass(frozen=True)
class Check:
    """One comparison: lmleak's number (``got``) beside the independent one (``expected``)."""

    name: str
    ok: bool
    got: str
    expected: str

    def line(self) -> str:
        """The check as one printed line: name, ok/FAILED, the two numbers."""
        return f"{self.name:<24} {'ok' if self.ok else 'FAILED':<6} lmleak {self.got}  vs  {self.expected}"


def tiny_model(seed: int = 0) -> TorchCausalLM:
    """The selftest's model: a freshly initialised 2-layer GPT-2 (width 32) over a word tokenizer
    learnt on :data:`CORPUS` plus every digit; deterministic for a seed."""
    texts = [t for _, t in CORPUS] + [" ".join("0123456789"), *MIA_TEXTS, RECALL_PREFIX]
    tok = HFTokenizer(build_tokenizer(texts, kind="word", vocab_size=200))
    module = new_small_gpt(
        tok.vocab_size, SmallGPTConfig(n_positions=64, n_embd=32, n_layer=2, n_head=2), seed=seed
    )
    return TorchCausalLM(module.eval(), tok, name=f"selftest-gpt-{seed}", max_length=64)


def run_selftest(work_dir: str | Path | None = None) -> list[Check]:
    """Every check, in order (see the module docstring); ``work_dir`` holds the ledger's shards
    (None: a temporary folder, deleted after)."""
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="lmleak-selftest-") as tmp:
            return run_selftest(tmp)
    model, reference = tiny_model(0), tiny_model(1)
    checks: list[Check] = []
    groups: list[tuple[str, Callable[[], list[Check]]]] = [
        ("ledger", lambda: _ledger_checks(model, Path(work_dir))),
        ("exposure", lambda: _exposure_checks(model)),
        ("mia", lambda: _mia_checks(model, reference)),
        ("dp", _dp_checks),
        ("wilson", _wilson_checks),
        ("newcombe", _newcombe_checks),
        ("verdict", lambda: _null_model_checks(Path(work_dir))),
    ]
    for name, group in groups:
        try:
            checks.extend(group())
        except Exception as e:  # a broken family is a failed check, and the others still run
            checks.append(Check(name, False, f"raised {type(e).__name__}: {e}", "no error"))
    return checks


def selftest_report(work_dir: str | Path | None = None) -> tuple[list[Check], float]:
    """:func:`run_selftest` and the seconds it took."""
    t0 = time.perf_counter()
    checks = run_selftest(work_dir)
    return checks, time.perf_counter() - t0


# --------------------------------------------------------------------------------- the oracles


def _per_prefix(model: Any, ids: Sequence[int]) -> np.ndarray:
    """``log p(. | BOS + ids[:t])`` for every t, one row per token, in float64: one query per prefix."""
    return model.next_logprobs([list(ids[:t]) for t in range(len(ids))]).astype(np.float64)


def _close(a: float, b: float, tol: float) -> bool:
    return bool(np.isfinite(a) and np.isfinite(b) and abs(a - b) <= tol * max(1.0, abs(b)))


def _compare(name: str, got: Sequence[float] | np.ndarray, expected: Sequence[float], tol: float) -> Check:
    """Several paired numbers: ok when every pair agrees within ``tol`` (relative above 1). A failed
    check shows its worst pair; a passed one its largest, not the pair that float noise happens to
    make the worst (that pick moved with the CPU's kernels, AVX2 or AVX-512, and so did the page)."""
    g, e = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if g.shape != e.shape or g.size == 0:
        return Check(name, False, f"{g.size} values", f"{e.size} values")
    ok = all(_close(float(a), float(b), tol) for a, b in zip(g, e, strict=True))
    shown = int(np.argmax(np.abs(e))) if ok else int(np.argmax(np.abs(g - e) / np.maximum(1.0, np.abs(e))))
    return Check(name, ok, f"{g[shown]:.6g}", f"{e[shown]:.6g}")


# --------------------------------------------------------------------------------- the ledger


def _ledger_checks(model: Any, work: Path) -> list[Check]:
    """The ledger's log-probabilities and ranks against one query per prefix."""
    docs = [Document(u, f"{u}-{i}", t) for i, (u, t) in enumerate(CORPUS)]
    ledger = build_ledger(model, docs, work / "ledger-run")
    lp_got: list[float] = []
    lp_oracle: list[float] = []
    ranks_ok = n = 0
    for d in range(ledger.num_docs):
        ids = [int(x) for x in ledger.doc_tokens(d)]
        rows = _per_prefix(model, ids)
        true = rows[np.arange(len(ids)), ids]
        lp_got.extend(ledger.logprobs[ledger.offsets[d] : ledger.offsets[d + 1]].astype(np.float64))
        lp_oracle.extend(true)
        for t, r in enumerate(ledger.ranks[ledger.offsets[d] : ledger.offsets[d + 1]]):
            # rank = 1 + #tokens strictly more likely; a competitor within float noise may fall either way
            lo = 1 + int((rows[t] > true[t] + 1e-4).sum())
            hi = 1 + int((rows[t] > true[t] - 1e-4).sum())
            ranks_ok += int(lo <= int(r) <= hi)
            n += 1
    total = _compare("ledger.logprob_sum", [float(np.sum(lp_got))], [float(np.sum(lp_oracle))], 1e-4)
    worst = _compare("ledger.logprobs", lp_got, lp_oracle, 1e-4)
    ranks = Check("ledger.ranks", ranks_ok == n and n > 0, f"{ranks_ok} of {n} ranks", f"{n} of {n}")
    return [total, worst, ranks]


# --------------------------------------------------------------------------------- exposure


def _brute_force_ranks(model: Any, secrets: Sequence[str], tol: float = 1e-4) -> list[int]:
    """Each secret's rank among all 1,000 three-digit candidates, every candidate scored with
    ``score_ids`` (the trie's rank rule: strictly more likely beyond ``tol``, other ties halved)."""
    enc = model.tokenizer.encode
    context = enc(CANARY_PREFIX.strip())
    candidates = [f"{i:03d}" for i in range(1000)]
    conts = [enc(CANARY_PREFIX + c)[len(context) :] for c in candidates]
    costs = -np.asarray(model.score_ids([context] * len(conts), conts), dtype=np.float64)
    out = []
    for s in secrets:
        mine = costs[candidates.index(s)]
        others = np.delete(costs, candidates.index(s))
        out.append(1 + int((others < mine - tol).sum()) + int((np.abs(others - mine) <= tol).sum()) // 2)
    return out


def _exposure_checks(model: Any) -> list[Check]:
    """The trie search's exact ranks and exposures against the brute force."""
    canaries = [{"prefix": CANARY_PREFIX, "secret": s} for s in CANARY_SECRETS]
    results = measure_exposure(model, canaries)
    brute = _brute_force_ranks(model, CANARY_SECRETS)
    got = [r.rank for r in results]
    ranks = Check(
        "exposure.ranks",
        got == brute,
        ", ".join(str(r) for r in got),
        ", ".join(str(r) for r in brute),
    )
    bits = _compare(
        "exposure.bits",
        [r.exposure_bits for r in results],
        [math.log2(1000) - math.log2(r) for r in brute],
        1e-9,
    )
    return [ranks, bits]


# --------------------------------------------------------------------------------- membership


def _direct_scores(model: Any, reference: Any, text: str, k: float) -> dict[str, float]:
    """Every membership formula for one text, from per-prefix queries (float64)."""
    enc = model.tokenizer.encode
    ids = enc(text)
    rows = _per_prefix(model, ids)
    lp = rows[np.arange(len(ids)), ids]
    p = np.exp(rows)
    mu = (p * rows).sum(-1)
    sd = np.sqrt((p * (rows - mu[:, None]) ** 2).sum(-1))
    lowest = np.sort(lp)[: round(k * len(lp))]  # k·n is whole for these texts
    z = np.sort((lp - mu) / sd)[: round(k * len(lp))]
    low_ids = enc(text.lower())
    low_lp = _per_prefix(model, low_ids)[np.arange(len(low_ids)), low_ids]
    prefix = enc(RECALL_PREFIX)
    cond_rows = _per_prefix(model, [*prefix, *ids])[len(prefix) :]
    cond = float(cond_rows[np.arange(len(ids)), ids].sum())
    ref_rows = _per_prefix(reference, ids)
    ref_lp = float(ref_rows[np.arange(len(ids)), ids].sum())
    log_ppl = -float(lp.mean())
    return {
        "perplexity": -math.exp(log_ppl),
        "zlib": -log_ppl / len(zlib.compress(text.encode("utf-8"))),
        "min_k": float(lowest.mean()),
        "min_k_pp": float(z.mean()),
        "lowercase": -log_ppl / -float(low_lp.mean()),
        "recall": cond / float(lp.sum()),
        "reference": -(-float(lp.sum()) / count_words(text)) / (-ref_lp / count_words(text)),
    }


MIA_METHODS = ("perplexity", "zlib", "min_k", "min_k_pp", "lowercase", "recall", "reference")


def _mia_checks(model: Any, reference: Any, k: float = 0.2) -> list[Check]:
    """Each method of :func:`~lmleak.attacks.mia_methods.score_methods` against its formula."""
    for text in MIA_TEXTS:  # the premise of the Min-K% checks: k·n whole
        n = len(model.tokenizer.encode(text))
        if abs(k * n - round(k * n)) > 1e-9:
            raise AssertionError(f"selftest text of {n} tokens: k·n = {k * n} is not whole")
    opts = mia.MethodOptions(methods=MIA_METHODS, reference=reference, recall_prefix=RECALL_PREFIX)
    got = mia.score_methods(model, list(MIA_TEXTS), opts, min_k=k)
    direct = [_direct_scores(model, reference, t, k) for t in MIA_TEXTS]
    return [_compare(f"mia.{m}", got[m], [d[m] for d in direct], 1e-4) for m in MIA_METHODS]


# --------------------------------------------------------------------------------- DP audit


def _dp_checks() -> list[Check]:
    """The one-run bound against closed forms (Steinke, Nasr & Jagielski 2023)."""
    from scipy.stats import beta  # the exact binomial tail as a Beta quantile

    q = 0.05 ** (1 / 1000)
    lower = float(beta.ppf(0.05, 900, 101))  # P[Binomial(1000, q) >= 900] = 0.05 at q = lower
    hand = 9 / 16 + 2 * 10 * 0.01 * 6 / 16  # r = v = 2, q = 3/4, m = 10, δ = 0.01 (module doc)
    q_t = math.exp(4.0) / (1 + math.exp(4.0))
    return [
        _compare("dp.all_right", [dp.epsilon_lower_bound(1000, 1000, 1000)], [math.log(q / (1 - q))], 1e-6),
        _compare(
            "dp.precision_0.9",
            [dp.epsilon_lower_bound(1000, 1000, 900)],
            [math.log(lower / (1 - lower))],
            1e-6,
        ),
        _compare("dp.delta_term", [dp.p_value(10, 2, 2, math.log(3), 0.01)], [hand], 1e-12),
        _compare(
            "dp.plan_canaries",
            [float(dp.canaries_needed(4.0) or -1)],
            [float(math.floor(math.log(0.05) / math.log(q_t)) + 1)],
            0.0,
        ),
    ]


# --------------------------------------------------------------------------------- intervals


def _interval_check(name: str, got: tuple[float, float] | None, published: tuple[float, float]) -> Check:
    """An interval against its published value, to the published four decimals."""
    if got is None:
        return Check(name, False, "None", f"[{published[0]:.4f}, {published[1]:.4f}]")
    ok = all(abs(round(g, 4) - p) < 1e-9 for g, p in zip(got, published, strict=True))
    return Check(name, ok, f"[{got[0]:.4f}, {got[1]:.4f}]", f"[{published[0]:.4f}, {published[1]:.4f}]")


def _wilson_checks() -> list[Check]:
    return [
        _interval_check(f"wilson.{x}/{n}", intervals.wilson_interval(x, n), pub)
        for x, n, pub in WILSON_EXAMPLES
    ]


def _newcombe_checks() -> list[Check]:
    return [
        _interval_check(f"newcombe.{a}/{m}-{b}/{n}", margins.difference_interval(a, m, b, n), pub)
        for a, m, b, n, pub in NEWCOMBE_EXAMPLES
    ]


# --------------------------------------------------------------------------------- the verdict's null


def _null_model_checks(work: Path) -> list[Check]:
    """A model trained only on other people, audited against a corpus: the release verdict is not Fail."""
    root = work / "null-model"
    audited = synthesize(root / "audited", scale=NULL_SCALE, seed=5)["corpus"]
    other = synthesize(root / "other", scale=NULL_SCALE, seed=7)["corpus"]
    held = nullmodel.held_out_people(load_corpus(audited), 0.3, 0)
    cfg = TrainConfig(epochs=2, seq_len=64, n_embd=32, n_head=2, vocab_size=1000)
    nullmodel.null_model(load_corpus(other), root / "model", held, audited_corpus=str(audited), config=cfg)
    status, rows = nullmodel.audit_release(root / "model", audited, root / "run")
    failed = [str(r["metric"]) for r in rows if r["status"] == "fail"]
    got = status + (f" ({', '.join(failed)})" if failed else "")
    return [
        Check("verdict.null_model", status != "fail", got, "not fail (pass, inconclusive, not evaluable)")
    ]
