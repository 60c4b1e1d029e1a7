# long: Carlini et al. 2021 in the paper's order (sampling, the six membership metrics, verification, discoverable extraction), each a short function the run at the end uses once
"""Untargeted training-data extraction (Carlini et al. 2021, "Extracting training data from large
language models", §5) and (n, p)-discoverable extraction (Nasr et al. 2023; Hayes et al. 2024).

**Untargeted.** Generate ``N`` samples with top-k sampling (k = 40) whose softmax temperature decays
linearly from ``temperature_start`` (10) to 1 over the first ``temperature_decay`` (20) generated tokens
(Carlini §5.1.1, "decaying temperature"), from empty prompts (BOS) or from lines of a public text
(§5.1.1, "conditioning on internet text"). Rank the samples by each membership metric of §5.2;
every score is oriented so that **higher means more likely memorised**, as in the paper's reference
code:

============  ================================================================================
perplexity    ``-log PP_model(x)`` (per-token perplexity of the whole sample)
zlib          ``zlib_bits(x) / log PP_model(x)``: surprising to zlib, unsurprising to the model
lowercase     ``log PP_model(lower(x)) / log PP_model(x)``
small         ``log PP_public(x) / log PP_model(x)`` with per-word perplexities, so the ratio is
              the ratio of total log-probabilities and compares models with different tokenizers
window        ``-log`` of the minimum per-token perplexity over sliding windows of ``window``
              tokens (the sample's own teacher-forced log-probabilities, one pass)
combined      the negated mean rank over the other metrics (a Borda count; Carlini et al. report
              each metric apart — the combination is ours, so no single metric's blind spot rules)
============  ================================================================================

Each metric's ranking is deduplicated as the paper does (§5.3): walking down the ranking, a sample
is dropped when it is an exact or near duplicate of one already kept — near meaning that its word
3-gram multiset shares at least half of the smaller one's (:func:`near_duplicate`). The top
``top_n`` (100) of every metric are verified against the training corpus with the suffix-array
index (:class:`~lmleak.ledger.index.CorpusIndex`): the longest run of the generated tokens that
occurs in the corpus, its count, the users who wrote it, and the PII the regex detectors find in it.
A candidate is *memorised* when that run is at least ``min_match_tokens`` long; ``verified_at_100``
counts them per metric.

**(n, p)-discoverable.** For a training document split into a prefix of ``prefix_tokens`` and a
true suffix of ``suffix_tokens``, ``p = P(suffix | prefix)`` under the sampling distribution (the
model's next-token distribution at temperature ``T``, truncated to the top ``k`` and renormalised;
0 if a suffix token falls outside the top k), computed exactly from the model's probabilities.
The chance that ``n`` independent samples produce the suffix at least once is ``1 - (1 - p)^n``;
the suffix is (n, p)-discoverable when that reaches ``p``.

Samples that generated fewer than ``min_match_tokens`` tokens (the model ended them early) are not
ranked: they cannot hold a match long enough to count.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lmleak.attacks.settings import ExtractSettings
from lmleak.data.loaders import load_corpus
from lmleak.models.base import Capability, require, scoring_convention
from lmleak.pii.regex import RegexDetector
from lmleak.runs import secure_dir, write_parquet, write_summary
from lmleak.scenarios import scenario_record
from lmleak.scenarios.describe import anonymization_of
from lmleak.words import plural

METRICS = ("perplexity", "zlib", "lowercase", "small", "window", "combined")


# ------------------------------------------------------------------------------------- sampling
def temperature_at(step: int, start: float = 10.0, decay_tokens: int = 20) -> float:
    """The decaying temperature of Carlini et al. §5.1.1 for generated token ``step`` (0-based):
    linear from ``start`` to 1 over the first ``decay_tokens`` tokens, then 1.

    Example:
        >>> [temperature_at(s, 10.0, 20) for s in (0, 10, 20, 50)]
        [10.0, 5.5, 1.0, 1.0]
    """
    if decay_tokens <= 0 or step >= decay_tokens:
        return 1.0
    return start + (1.0 - start) * step / decay_tokens


def sampling_logprobs(logprobs: np.ndarray, temperature: float = 1.0, top_k: int | None = None) -> np.ndarray:
    """Log-probabilities of the sampling distribution: ``logprobs / T`` renormalised over the top
    ``k`` (tokens tied with the k-th kept, as the model's own sampler keeps them); others ``-inf``.

    Example:
        >>> lp = np.log(np.array([[0.5, 0.3, 0.2]]))
        >>> np.round(np.exp(sampling_logprobs(lp, 1.0, 2)), 3).tolist()
        [[0.625, 0.375, 0.0]]
    """
    x = np.asarray(logprobs, dtype=np.float64) / max(temperature, 1e-6)
    if top_k is not None and top_k < x.shape[-1]:
        kth = np.partition(x, -top_k, axis=-1)[..., [x.shape[-1] - top_k]]
        x = np.where(x < kth, -np.inf, x)
    m = np.max(x, axis=-1, keepdims=True)
    return x - (m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)))


def sample_sequences(
    model: Any,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    top_k: int | None = 40,
    temperature_start: float = 10.0,
    decay_tokens: int = 20,
    seed: int = 0,
    batch_size: int = 64,
) -> list[list[int]]:
    """One sampled continuation (token ids, EOS excluded) per prompt, decaying temperature.

    Uses only :meth:`~lmleak.models.base.Scorer.next_logprobs` (one batched call per step), so any
    SCORE-capable backend samples the same way; ``temperature_start = 1`` is plain top-k sampling.
    """
    require(model, Capability.SCORE, attack="extraction sampling")
    rng = np.random.default_rng(seed)
    eos = getattr(model.tokenizer, "eos_id", None)
    out: list[list[int]] = [[] for _ in prompts]
    for s in range(0, len(prompts), batch_size):
        idx = list(range(s, min(s + batch_size, len(prompts))))
        active = list(idx)
        for step in range(max_new_tokens):
            if not active:
                break
            lp = model.next_logprobs([[*prompts[i], *out[i]] for i in active])
            probs = np.exp(
                sampling_logprobs(lp, temperature_at(step, temperature_start, decay_tokens), top_k)
            )
            # inverse-CDF draw for every row at once; a zero-probability token has a flat CDF step
            # and is never drawn
            cdf = np.cumsum(probs, axis=1)
            u = rng.random(len(active)) * cdf[:, -1]
            drawn = np.minimum((cdf < u[:, None]).sum(axis=1), probs.shape[1] - 1)
            still = []
            for i, t in zip(active, drawn.tolist(), strict=True):
                if eos is not None and t == eos:
                    continue
                out[i].append(t)
                still.append(i)
            active = still
    return out


# ------------------------------------------------------------------------------------- metrics
def zlib_bits(text: str) -> int:
    """zlib entropy of Carlini et al. §5.2: the bits of ``zlib.compress(text)`` (as their code,
    the compressed length; bytes times 8 only rescales every ratio alike, so bytes are kept).

    Example:
        >>> zlib_bits("abc abc abc abc abc abc") < zlib_bits("the quick brown fox jumps")
        True
    """
    return len(zlib.compress(text.encode("utf-8")))


def min_window_mean(logprobs: np.ndarray, window: int) -> float:
    """The largest mean log-probability over windows of ``window`` consecutive tokens (the whole
    sequence when shorter), i.e. ``-log`` of the minimum sliding-window perplexity.

    Example:
        >>> round(min_window_mean(np.array([-5.0, -0.1, -0.1, -5.0]), 2), 6)
        -0.1
    """
    x = np.asarray(logprobs, dtype=np.float64)
    if x.size == 0:
        return float("nan")
    w = min(window, x.size)
    c = np.concatenate([[0.0], np.cumsum(x)])
    return float(np.max((c[w:] - c[:-w]) / w))


def _logppl(total_logprob: float, n: int) -> float:
    # a perplexity of exactly 1 would divide by zero in the ratios: floor the log at 1e-9 nats
    return max(-total_logprob / max(n, 1), 1e-9)


def rank_of(scores: np.ndarray) -> np.ndarray:
    """1-based ranks, 1 for the highest score; NaN scores rank last; ties by sample order.

    Example:
        >>> rank_of(np.array([0.2, np.nan, 0.9, 0.2])).tolist()
        [2, 4, 1, 3]
    """
    s = np.where(np.isnan(scores), -np.inf, scores)
    order = np.argsort(-s, kind="stable")
    ranks = np.empty(len(s), dtype=np.int64)
    ranks[order] = np.arange(1, len(s) + 1)
    return ranks


def metric_scores(
    model: Any,
    samples: Sequence[Sequence[int]],
    texts: Sequence[str],
    *,
    public_model: Any = None,
    window: int = 50,
) -> dict[str, np.ndarray]:
    """Every metric's score per sample (higher: more likely memorised); see the module docstring.

    Besides the six scores, returns the raw quantities under ``perplexity_model``,
    ``perplexity_lower``, ``perplexity_public`` (per word), ``zlib_bits`` and
    ``window_min_perplexity``.
    """
    require(model, Capability.SCORE, attack="extraction ranking")
    n = len(samples)
    stats = model.token_stats([list(s) for s in samples]) if n else []
    lp_total = np.array([float(st.logprobs.astype(np.float64).sum()) for st in stats])
    ntok = np.array([len(s) for s in samples])
    logppl = np.array([_logppl(a, b) for a, b in zip(lp_total, ntok, strict=True)])
    lower = model.score_text([""] * n, [t.lower() for t in texts]) if n else []
    lower_logppl = np.array([_logppl(s.logprob, s.num_tokens) for s in lower])
    zl = np.array([zlib_bits(t) for t in texts], dtype=np.float64)
    win = np.array([min_window_mean(st.logprobs, window) for st in stats])
    out: dict[str, np.ndarray] = {
        "perplexity": -logppl,
        "zlib": zl / logppl,
        "lowercase": lower_logppl / logppl,
        "window": win,
        "perplexity_model": np.exp(logppl),
        "perplexity_lower": np.exp(lower_logppl),
        "zlib_bits": zl,
        "window_min_perplexity": np.exp(-win),
    }
    if public_model is not None:
        require(public_model, Capability.SCORE, attack="extraction ranking (public model)")
        pub = public_model.score_text([""] * n, list(texts)) if n else []
        words = np.array([max(s.num_words, 1) for s in pub])
        pub_lp = np.array([s.logprob for s in pub])
        # per-word log-perplexities of both models over the same text: the word counts cancel
        model_word_logppl = np.maximum(-lp_total / words, 1e-9)
        pub_word_logppl = np.maximum(-pub_lp / words, 1e-9)
        out["small"] = pub_word_logppl / model_word_logppl
        out["perplexity_public"] = np.exp(pub_word_logppl)
    else:
        out["small"] = np.full(n, np.nan)
        out["perplexity_public"] = np.full(n, np.nan)
    empty = ntok == 0  # nothing to score: never a candidate (a perplexity of "1" would rank first)
    for m in METRICS[:-1]:
        out[m] = np.where(empty, np.nan, out[m])
    out["combined"] = combined_score(out)
    return out


def combined_score(scores: dict[str, np.ndarray], eligible: np.ndarray | None = None) -> np.ndarray:
    """Minus the mean rank over the five base metrics present (1 = highest score), over the
    ``eligible`` samples only (others NaN): the Borda count behind ``combined``.

    Example:
        >>> combined_score({"perplexity": np.array([3.0, 2.0, 1.0]), "zlib": np.array([2.0, 3.0, 1.0])}).tolist()
        [-1.5, -1.5, -3.0]
    """
    base = [m for m in METRICS[:-1] if m in scores and not np.all(np.isnan(scores[m]))]
    n = len(next(iter(scores.values()))) if scores else 0
    keep = np.ones(n, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    for m in base:
        keep &= ~np.isnan(scores[m])
    out = np.full(n, np.nan)
    if not base or not keep.any():
        return out
    idx = np.nonzero(keep)[0]
    ranks = np.stack([rank_of(scores[m][idx]) for m in base])
    out[idx] = -ranks.mean(axis=0)
    return out


# ------------------------------------------------------------------------------------- dedup
def word_trigrams(text: str) -> Counter[tuple[str, ...]]:
    """The multiset of word 3-grams (a text of fewer than 3 words is one gram of itself).

    Example:
        >>> sorted(word_trigrams("a b c d").items())
        [(('a', 'b', 'c'), 1), (('b', 'c', 'd'), 1)]
    """
    w = text.split()
    if len(w) < 3:
        return Counter([tuple(w)])
    return Counter(tuple(w[i : i + 3]) for i in range(len(w) - 2))


def near_duplicate(a: Counter[tuple[str, ...]], b: Counter[tuple[str, ...]], threshold: float = 0.5) -> bool:
    """Carlini et al. §5.3's rule: duplicates when the 3-gram multisets share at least
    ``threshold`` of the smaller one (symmetrised with the minimum).

    Example:
        >>> near_duplicate(word_trigrams("my id is 123 456 and more"), word_trigrams("my id is 123 456 or less"))
        True
    """
    inter = sum((a & b).values())
    return inter >= threshold * max(min(sum(a.values()), sum(b.values())), 1)


def select_top(
    scores: np.ndarray,
    texts: Sequence[str],
    n: int,
    *,
    threshold: float = 0.5,
    grams: Sequence[Counter[tuple[str, ...]]] | None = None,
) -> list[int]:
    """The ``n`` best samples by ``scores`` with exact and near duplicates of better ones skipped."""
    grams = grams if grams is not None else [word_trigrams(t) for t in texts]
    kept: list[int] = []
    seen: set[str] = set()
    for i in np.argsort(-np.where(np.isnan(scores), -np.inf, scores), kind="stable"):
        i = int(i)
        if np.isnan(scores[i]) or texts[i] in seen or not texts[i].strip():
            continue
        if any(near_duplicate(grams[i], grams[j], threshold) for j in kept):
            continue
        kept.append(i)
        seen.add(texts[i])
        if len(kept) == n:
            break
    return kept


# ------------------------------------------------------------------------------------- verification
@dataclass(frozen=True, slots=True)
class Verification:
    """A candidate checked against the training corpus (tokens of the audited model)."""

    longest_match_tokens: int
    match_start: int  # where in the candidate's tokens the longest match begins
    match_text: str
    match_count: int  # occurrences of the match in the corpus
    match_users: tuple[str, ...]
    pii_types: tuple[str, ...]


def longest_match(index: Any, tokens: Sequence[int]) -> tuple[int, int]:
    """(length, start) of the longest run of ``tokens`` that occurs in the indexed corpus.

    Matching statistics with the usual shortcut: the match starting at ``i + 1`` is at least the
    one at ``i`` minus one token, so the scan makes ``O(len(tokens))`` index queries.

    Example:
        >>> from lmleak.ledger.index import CorpusIndex
        >>> longest_match(CorpusIndex.build([[1, 2, 3, 4], [9, 9]], ["a", "b"]), [7, 2, 3, 4, 9, 9])
        (3, 1)
    """
    toks = [int(t) for t in tokens]
    best, best_start, cur = 0, 0, 0
    for i in range(len(toks)):
        cur = max(cur - 1, 0)
        while i + cur < len(toks):
            lo, hi = index.ranges([toks[i : i + cur + 1]])
            if hi[0] <= lo[0]:
                break
            cur += 1
        if cur > best:
            best, best_start = cur, i
    return best, best_start


def verify(index: Any, tokens: Sequence[int], decode: Any, detector: Any = None) -> Verification:
    """Longest corpus match of ``tokens``, its count, its writers and the PII in it."""
    length, start = longest_match(index, tokens)
    if length == 0:
        return Verification(0, 0, "", 0, (), ())
    match = [int(t) for t in tokens[start : start + length]]
    pos = index.positions(match)
    users = tuple(sorted({index.users[int(u)] for u in index.doc_users[index.doc_of(pos)]}))
    text = decode(match)
    pii = tuple(sorted({s.entity for s in detector.detect(text)})) if detector is not None else ()
    return Verification(length, start, text, int(pos.size), users, pii)


# ------------------------------------------------------------------------------------- the run
#: the former name of :class:`ExtractSettings`
ExtractConfig = ExtractSettings


def discoverable_probabilities(
    model: Any,
    prefixes: Sequence[Sequence[int]],
    suffixes: Sequence[Sequence[int]],
    *,
    top_k: int | None = 40,
    temperature: float = 1.0,
) -> np.ndarray:
    """``log p(suffix | prefix)`` under the sampling distribution (temperature, top-k), one float
    per pair; ``-inf`` when a suffix token falls outside the top k."""
    require(model, Capability.SCORE, attack="discoverable extraction")
    rows, owners, targets = [], [], []
    for j, (pre, suf) in enumerate(zip(prefixes, suffixes, strict=True)):
        for t in range(len(suf)):
            rows.append([*pre, *suf[:t]])
            owners.append(j)
            targets.append(int(suf[t]))
    out = np.zeros(len(prefixes), dtype=np.float64)
    for s in range(0, len(rows), 256):
        lp = sampling_logprobs(model.next_logprobs(rows[s : s + 256]), temperature, top_k)
        for r in range(lp.shape[0]):
            out[owners[s + r]] += lp[r, targets[s + r]]
    return out


def within_n(logp: np.ndarray | float, n: int) -> np.ndarray:
    """``1 - (1 - p)^n`` from ``log p``, without cancellation for tiny ``p``.

    Example:
        >>> round(float(within_n(np.log(0.01), 100)), 4)
        0.634
    """
    p = np.exp(np.asarray(logp, dtype=np.float64))
    with np.errstate(divide="ignore"):
        return -np.expm1(n * np.log1p(-np.minimum(p, 1.0)))


def run_extraction(
    model: Any,
    corpus: Any,
    out_dir: str | Path,
    settings: ExtractSettings = ExtractSettings(),
    *,
    prompts: Sequence[str] | None = None,
    public_model: Any = None,
    anonymization: str = "identity",
) -> dict[str, Any]:
    """Sample, rank, deduplicate, verify; and (n, p)-discoverable extraction. Writes
    ``extract.parquet`` (one row per sample: metrics, per-metric rank in the deduplicated top list,
    verification), ``discoverable.parquet`` and ``summary.json`` (``verified_at_100`` per metric).

    ``prompts``: the samples' prompts, cycled (None: those of ``settings.prefixes``; none: BOS)."""
    import time

    prompts = settings.prompts() if prompts is None else list(prompts)
    require(model, Capability.SCORE, attack="extract")
    t0 = time.perf_counter()
    s = _generate_samples(model, settings, prompts)
    t_gen = time.perf_counter() - t0
    scores, metrics, tops = _rank_samples(model, s, settings, public_model=public_model)

    # lazy: the ledger package imports torch
    from lmleak.ledger.index import CorpusIndex

    docs = list(corpus)
    enc, dec = model.tokenizer.encode, model.tokenizer.decode
    index = CorpusIndex.build([enc(d.text) for d in docs], [d.user_id for d in docs])
    detector = RegexDetector()
    candidates = sorted({i for top in tops.values() for i in top})
    checked = {i: verify(index, s.generated[i], dec, detector) for i in candidates}

    table = _extract_table(s, scores, tops, checked, settings)
    run = secure_dir(out_dir)
    write_parquet(table, run / "extract.parquet")
    disc = _discoverable(model, docs, settings)
    write_parquet(disc, run / "discoverable.parquet")
    summary = _extract_summary(
        model,
        s,
        metrics,
        tops,
        checked,
        disc,
        settings,
        public_model=public_model,
        anonymization=anonymization,
    )
    summary["config"]["prefixes"] = prompts  # the record holds the prompts, not only their file
    summary["seconds"] = {"generation": t_gen, "total": time.perf_counter() - t0}
    write_summary(run, summary, model=model, corpus=corpus)
    return summary


def extract_from_model(
    model: str,
    corpus: str | Path,
    out_dir: str | Path,
    settings: ExtractSettings = ExtractSettings(),
    *,
    public_model: str | None = None,
    echo: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The work of ``lmleak extract``: read the prompts, load the model specs and the corpus, and run
    :func:`run_extraction` with the A factor the model's ``privacy.json`` records.

    Args:
        model: the audited model's spec (:func:`lmleak.models.loading.load_model`).
        corpus: its training corpus (:func:`lmleak.data.loaders.load_corpus`).
        out_dir: the run directory.
        settings: the run's :class:`ExtractSettings` (its ``prefixes`` file read first).
        public_model: a public reference model's spec for the ``small`` ratio.
        echo: called with a progress message before sampling.

    Returns:
        The summary written to ``summary.json``.
    """
    # lazy: torch; the settings stay cheap to import
    from lmleak.models.loading import load_model

    prompts = settings.prompts()
    data = load_corpus(corpus)  # every input file before any model loads: a bad one exits 2 at once
    lm = load_model(model)
    pub = load_model(public_model) if public_model else None
    if echo is not None:
        echo(f"sampling {plural(settings.num_samples, 'text')} from {model} ...")
    return run_extraction(
        lm,
        data,
        out_dir,
        settings,
        prompts=prompts,
        public_model=pub,
        anonymization=anonymization_of(model if Path(model).is_dir() else None),
    )


@dataclass
class _Samples:
    """The generated samples: prompt text, prompt + generated ids, generated ids, decoded text."""

    prompt_texts: list[str]
    samples: list[list[int]]
    generated: list[list[int]]
    texts: list[str]


def _generate_samples(model: Any, cfg: ExtractSettings, prompts: Sequence[str]) -> _Samples:
    """Sample ``cfg.num_samples`` continuations of the prompts (cycled) or of BOS, with decaying temperature."""
    enc, dec = model.tokenizer.encode, model.tokenizer.decode
    prompt_texts = (
        [prompts[i % len(prompts)] for i in range(cfg.num_samples)] if prompts else [""] * cfg.num_samples
    )
    prompt_ids = [enc(p) if p else [] for p in prompt_texts]
    generated = sample_sequences(
        model,
        prompt_ids,
        max_new_tokens=cfg.max_new_tokens,
        top_k=cfg.top_k,
        temperature_start=cfg.temperature_start,
        decay_tokens=cfg.temperature_decay,
        seed=cfg.seed,
    )
    samples = [[*p, *g] for p, g in zip(prompt_ids, generated, strict=True)]
    return _Samples(prompt_texts, samples, generated, [dec(x) for x in samples])


def _rank_samples(
    model: Any, s: _Samples, cfg: ExtractSettings, *, public_model: Any
) -> tuple[dict[str, np.ndarray], list[str], dict[str, list[int]]]:
    """Scores per metric, the metrics used, and each metric's deduplicated top ``cfg.top_n`` sample ids."""
    scores = metric_scores(model, s.samples, s.texts, public_model=public_model, window=cfg.window)
    # a sample that generated fewer tokens than a verified match needs can never count as memorised;
    # left in, short samples crowd the top of every ranking (Carlini et al. sample 256 tokens each)
    short = np.array([len(g) < cfg.min_match_tokens for g in s.generated])
    for m in METRICS[:-1]:
        scores[m] = np.where(short, np.nan, scores[m])
    scores["combined"] = combined_score(scores)
    metrics = [m for m in METRICS if m != "small" or public_model is not None]
    grams = [word_trigrams(t) for t in s.texts]
    tops = {
        m: select_top(scores[m], s.texts, cfg.top_n, threshold=cfg.dedup_threshold, grams=grams)
        for m in metrics
    }
    return scores, metrics, tops


def _extract_table(
    s: _Samples,
    scores: dict[str, np.ndarray],
    tops: dict[str, list[int]],
    checked: dict[int, Any],
    cfg: ExtractSettings,
) -> Any:
    """The ``extract.parquet`` table: one row per sample with its scores, ranks and verification."""
    import pandas as pd

    n = len(s.samples)
    table = pd.DataFrame(
        {
            "sample_id": np.arange(n),
            "prefix": s.prompt_texts,
            "text": s.texts,
            "num_tokens": [len(x) for x in s.samples],
            "generated_tokens": [len(g) for g in s.generated],
            **{f"score_{m}": scores[m] for m in METRICS},
            **{
                k: scores[k]
                for k in (
                    "perplexity_model",
                    "perplexity_lower",
                    "perplexity_public",
                    "zlib_bits",
                    "window_min_perplexity",
                )
            },
        }
    )
    for m in METRICS:
        rank = pd.array([None] * n, dtype="Int64")
        for r, i in enumerate(tops.get(m, []), start=1):
            rank[i] = r
        table[f"rank_{m}"] = rank
    v = [checked.get(i) for i in range(n)]
    table["verified"] = [x is not None for x in v]
    table["longest_match_tokens"] = pd.array(
        [x.longest_match_tokens if x else None for x in v], dtype="Int64"
    )
    table["match_text"] = [x.match_text if x else None for x in v]
    table["match_count"] = pd.array([x.match_count if x else None for x in v], dtype="Int64")
    table["match_users"] = [list(x.match_users) if x else None for x in v]
    table["num_match_users"] = pd.array([len(x.match_users) if x else None for x in v], dtype="Int64")
    table["pii_types"] = [list(x.pii_types) if x else None for x in v]
    table["memorised"] = [bool(x and x.longest_match_tokens >= cfg.min_match_tokens) for x in v]
    return table


def _extract_summary(
    model: Any,
    s: _Samples,
    metrics: list[str],
    tops: dict[str, list[int]],
    checked: dict[int, Any],
    disc: Any,
    cfg: ExtractSettings,
    *,
    public_model: Any,
    anonymization: str,
) -> dict[str, Any]:
    """``summary.json`` of an extraction run, without ``seconds`` (the caller times the run)."""
    mem = {i for i, x in checked.items() if x.longest_match_tokens >= cfg.min_match_tokens}
    verified_at = {m: sum(1 for i in tops[m] if i in mem) for m in metrics}
    return {
        "attack": "untargeted_extraction",
        "model": getattr(model, "name", type(model).__name__),
        **scoring_convention(model),
        "public_model": getattr(public_model, "name", None) if public_model is not None else None,
        **({} if public_model is None else scoring_convention(public_model, prefix="public_")),
        "num_samples": len(s.samples),
        "unique_samples": len(set(s.texts)),
        "metrics": metrics,
        f"verified_at_{cfg.top_n}": verified_at,
        "verified_at_100": verified_at if cfg.top_n == 100 else None,
        "extracted": len({i for top in tops.values() for i in top if i in mem}),
        "extracted_with_pii": len(
            {i for top in tops.values() for i in top if i in mem and checked[i].pii_types}
        ),
        "extracted_unique_user": len(
            {i for top in tops.values() for i in top if i in mem and len(checked[i].match_users) == 1}
        ),
        "longest_match_tokens": max((x.longest_match_tokens for x in checked.values()), default=0),
        "discoverable": _discoverable_summary(disc, cfg),
        "config": asdict(cfg),
        "combination": "combined = minus the mean rank over the other metrics (Borda count)",
        "seconds": None,
        "scenario": scenario_record(
            attack="untargeted_extraction",
            access="scores",
            target="any",
            anonymization=anonymization,
            resources=("public_model",) if public_model is not None else (),
            notes="Carlini et al. 2021: sample, rank by membership metrics, verify against the training corpus",
        ),
    }


def _discoverable(model: Any, docs: Sequence[Any], cfg: ExtractSettings) -> Any:
    import pandas as pd

    rng = np.random.default_rng(cfg.seed)
    enc = model.tokenizer.encode
    need = cfg.prefix_tokens + cfg.suffix_tokens
    eligible = [(d, ids) for d in docs if len(ids := enc(d.text)) >= need]
    pick: Any = rng.permutation(len(eligible))[: cfg.discoverable_docs] if cfg.discoverable_docs > 0 else []
    chosen = [eligible[int(i)] for i in pick]
    pre = [ids[: cfg.prefix_tokens] for _, ids in chosen]
    suf = [ids[cfg.prefix_tokens : need] for _, ids in chosen]
    logp = (
        discoverable_probabilities(model, pre, suf, top_k=cfg.top_k, temperature=cfg.temperature)
        if chosen
        else np.zeros(0)
    )
    return pd.DataFrame(
        {
            "doc_id": [d.doc_id for d, _ in chosen],
            "user_id": [d.user_id for d, _ in chosen],
            "prefix_tokens": [len(p) for p in pre],
            "suffix_tokens": [len(s) for s in suf],
            "logprob_suffix": logp,
            "p_suffix": np.exp(logp),
            f"p_within_{cfg.n}": within_n(logp, cfg.n),
        }
    )


def _discoverable_summary(disc: Any, cfg: ExtractSettings) -> dict[str, Any]:
    col = f"p_within_{cfg.n}"
    k = len(disc)
    return {
        "documents": k,
        "n": cfg.n,
        "p": cfg.p,
        "prefix_tokens": cfg.prefix_tokens,
        "suffix_tokens": cfg.suffix_tokens,
        "top_k": cfg.top_k,
        "temperature": cfg.temperature,
        "discoverable_fraction": float((disc[col] >= cfg.p).mean()) if k else None,
        f"mean_{col}": float(disc[col].mean()) if k else None,
        "mean_p_suffix": float(disc["p_suffix"].mean()) if k else None,
        "note": None if k else f"no training document has {cfg.prefix_tokens + cfg.suffix_tokens} tokens",
    }
