"""Canary exposure (Carlini et al. 2019, "The Secret Sharer"; paper 002 §5.1, Definition 9).

``exposure = log2 |R| - log2 rank`` where ``rank`` is the canary's position among all |R|
candidate secrets of its format ordered by the model's likelihood. A canary ranked first among
10^6 six-digit secrets has exposure 19.93 bits; a canary no more likely than chance about 1 bit.

Two ways to get there:

- **Exact** (:func:`measure_exposure` with enumerable R): the exact rank from the pruned trie search
  of :mod:`lmleak.attacks.trie` — the paper's procedure ("calculate perplexity for all possibly
  instantiated canaries and list them in sorted order"), without scoring all of them.
- **Extrapolated** (Carlini et al. §4.3): fit a skew-normal to the log-perplexities of a random
  sample of candidates and read ``-log2 Pr[X <= canary log-perplexity]`` from the fit. It is an
  *estimate* for formats too large to enumerate; its tail can report far more than log2|R| bits
  (BENCHMARKING.md saw 167 bits for an exact 19.93), so it never replaces the exact rank.

**The null beside the headline: placebo canaries.** A run also draws, per format, as many secrets
as it has canaries uniformly from the same candidates (never one of the canaries, nor one that
follows the prefix anywhere in the corpus when the corpus is known) and ranks them exactly as the
canaries: secrets the model never saw. Their exposures (``placebo_exposure.parquet``,
``placebo_max_exposure`` and percentiles in the summary) are what the same procedure reports for
no memorisation at all, so ``max_exposure`` is read against ``placebo_max_exposure``: a maximum
over n canaries is compared with a maximum over n secrets that were never inserted. For a secret
drawn uniformly its rank is uniform whatever the model (``P[exposure >= x] = 2^-x`` up to ties),
so the placebos also check the ranking itself.
"""

# long: the exact ranks, their skew-normal extrapolation and the placebos share one search per canary format and one table; each part is short
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from lmleak.attacks.settings import ExposureSettings
from lmleak.attacks.trie import DIGITS, CanaryFormat, CandidateSpace, SearchStats, exact_ranks
from lmleak.data.canaries import CANARY_DESIGNS, check_design, crafted_alphabet
from lmleak.errors import ConfigError, DataFileError
from lmleak.intervals import BOOTSTRAP_METHOD, group_bootstrap, interval_record
from lmleak.jsonl import iter_jsonl
from lmleak.models.base import Capability, require, scoring_convention
from lmleak.runs import secure_dir, write_parquet, write_summary, writes_run
from lmleak.scenarios import scenario_record
from lmleak.shards import fingerprint_of, run_rows


def exposure(rank: int | float, num_candidates: int) -> float:
    """Exposure in bits (Carlini et al. 2019, §4): ``log2 |R| - log2 rank``.

    ``rank`` is 1-based (1 = most likely candidate), so exposure lies in ``[0, log2 |R|]``.

    Example:
        >>> exposure(1, 1_000_000)
        19.931568569324174
        >>> exposure(1_000_000, 1_000_000)
        0.0
    """
    if num_candidates < 1 or not 1 <= rank <= num_candidates:
        raise ValueError(f"rank must be in [1, {num_candidates}], got {rank}")
    return math.log2(num_candidates) - math.log2(rank)


@dataclass(frozen=True, slots=True)
class SkewNormalFit:
    """A skew-normal fitted to candidate log-perplexities (``scipy.stats.skewnorm`` parameters).

    ``scale == 0`` marks a degenerate sample (all values equal); see :meth:`exposure`.
    """

    a: float
    loc: float
    scale: float
    sample_size: int

    def exposure(self, canary_logppl: float) -> float:
        """Estimated exposure ``-log2 Pr[X <= canary_logppl]`` in bits (Carlini et al. §4.3).

        Uses ``logcdf`` so far tails do not underflow to infinity.
        """
        from scipy.stats import skewnorm

        if self.scale <= 0.0:
            # Degenerate sample (every sampled candidate equally likely, e.g. all map to <unk>):
            # below all of them is the most a sample of n can show, about log2(n + 1) bits.
            return 0.0 if canary_logppl >= self.loc - 1e-9 else math.log2(self.sample_size + 1)
        return float(-skewnorm.logcdf(canary_logppl, self.a, loc=self.loc, scale=self.scale) / math.log(2))


def fit_skewnorm(sample_logppl: Sequence[float] | np.ndarray) -> SkewNormalFit:
    """Fit the skew-normal of Carlini et al. §4.3 to a sample of candidate log-perplexities.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> fit = fit_skewnorm(rng.normal(40.0, 2.0, size=4000))
        >>> round(fit.exposure(40.0), 1)  # the median candidate: 1 bit
        1.0
    """
    from scipy.stats import skewnorm

    x = np.asarray(sample_logppl, dtype=np.float64)
    if len(x) < 10 or not np.all(np.isfinite(x)):
        raise ValueError("need at least 10 finite log-perplexities to fit a skew-normal")
    if np.ptp(x) <= 1e-9 * max(1.0, float(np.abs(x).max())):
        return SkewNormalFit(0.0, float(x.min()), 0.0, len(x))
    try:
        a, loc, scale = skewnorm.fit(x)
    except Exception:  # scipy FitError on near-degenerate samples: fall back to a normal fit
        a, loc, scale = 0.0, float(x.mean()), float(x.std())
    return SkewNormalFit(float(a), float(loc), float(scale), len(x))


def extrapolated_exposure(canary_logppl: float, sample_logppl: Sequence[float] | np.ndarray) -> float:
    """Carlini et al. §4.3: exposure of a canary estimated from a skew-normal fit (bits).

    An estimate: it is not bounded by log2|R| and must not replace an exact rank.

    Example:
        >>> rng = np.random.default_rng(1)
        >>> sample = rng.normal(40.0, 2.0, size=4000)
        >>> extrapolated_exposure(30.0, sample) > extrapolated_exposure(38.0, sample) > 0
        True
    """
    return fit_skewnorm(sample_logppl).exposure(canary_logppl)


@dataclass(frozen=True, slots=True)
class CanaryExposure:
    """One canary's result. ``exposure_bits`` is exact when ``method == "exact"``.

    ``logppl`` is ``-log p(secret | prefix)`` in nats (the canary's cost in the search);
    ``extrapolated_bits`` is the skew-normal estimate when one was asked for, capped at
    ``log2 |R|`` (no candidate ranks above the first, however far the fitted tail reaches).
    """

    secret: str
    prefix: str
    repeats: int | None
    num_candidates: int
    rank: int | None
    exposure_bits: float
    method: str  # "exact" | "extrapolated"
    logppl: float
    extrapolated_bits: float | None = None
    user_id: str | None = None


def measure_exposure(
    model: Any,
    canaries: Sequence[dict[str, Any]],
    settings: ExposureSettings = ExposureSettings(),
    *,
    tie_tolerance: float = 1e-4,
    stats: SearchStats | None = None,
    work_dir: str | Path | None = None,
    shard_size: int = 64,
) -> list[CanaryExposure]:
    """Exposure of each canary record (``{"prefix", "secret", "repeats"?, "user_id"?}``).

    Canaries are grouped by format (prefix, alphabet, length); each format's trie is built once
    and searched once for all its canaries. Formats with more than ``settings.max_candidates``
    candidates get the extrapolated estimate only; ``settings.extrapolate`` adds the estimate beside
    exact ranks (``settings.placebos`` and ``canary_design`` are :func:`run_exposure`'s).
    With ``work_dir`` the exact ranks are computed in resumable shards of ``shard_size`` canaries
    there (one trie search per shard; a rank does not depend on which canaries share the search).
    A search costs about as much as its least exposed canary alone (the threshold is the highest
    cost in the shard), so shards are large (10 canaries in shards of 8 took two near-complete walks
    of the 10^6-candidate trie instead of one) and, when there are several, filled by decreasing cost.

    Raises:
        CapabilityError: the model does not grant exact scores (a black-box API).
    """
    require(model, Capability.SCORE, attack="canary exposure")
    alphabet, seed = settings.alphabet, settings.seed
    groups = _group_by_format(canaries, alphabet)
    out: list[CanaryExposure | None] = [None] * len(canaries)
    rng = np.random.default_rng(seed)
    for g, (fmt, idx) in enumerate(groups.items()):
        secrets = [canaries[i]["secret"] for i in idx]
        n = fmt.num_candidates
        exact = n <= settings.max_candidates
        ranks = np.zeros(len(idx), dtype=np.int64)
        costs = np.full(len(idx), np.nan)
        if exact:  # one trie search, or resumable shards in work_dir
            space = CandidateSpace.build(model.tokenizer, fmt, seed=seed)
            if work_dir is None:
                ranks, costs = exact_ranks(model, space, secrets, tie_tolerance=tie_tolerance, stats=stats)
            else:
                fmt_dir = Path(work_dir) / f"format-{g}"
                ranks, costs = _sharded_ranks(
                    model, space, fmt, secrets, tie_tolerance, stats, seed, fmt_dir, shard_size
                )
        est: list[float | None] = [None] * len(idx)
        if settings.extrapolate or not exact:
            est, est_costs = _extrapolated_exposure(model, fmt, secrets, rng, settings.sample_size)
            if not exact:
                costs = est_costs
        for j, i in enumerate(idx):
            out[i] = _canary_exposure(
                canaries[i], n, int(ranks[j]) if exact else None, est[j], float(costs[j])
            )
    return [o for o in out if o is not None]


def _group_by_format(
    canaries: Sequence[dict[str, Any]], alphabet: str | None
) -> dict[CanaryFormat, list[int]]:
    """The indices of the canaries of each format (prefix, alphabet, length), in first-seen order."""
    groups: dict[CanaryFormat, list[int]] = {}
    for i, c in enumerate(canaries):
        try:
            fmt = CanaryFormat.infer(c["prefix"], c["secret"], alphabet or c.get("alphabet"))
        except ValueError as e:
            raise DataFileError(
                str(e), line=i + 1, field="secret", hint="give the secrets' alphabet (--alphabet)"
            ) from None
        if alphabet is not None and not fmt.contains(c["secret"]):
            raise DataFileError(
                f"secret {c['secret']!r} has characters outside {alphabet!r}", line=i + 1, field="secret"
            )
        groups.setdefault(fmt, []).append(i)
    return groups


def _extrapolated_exposure(
    model: Any, fmt: CanaryFormat, secrets: list[str], rng: np.random.Generator, sample_size: int
) -> tuple[list[float | None], np.ndarray]:
    """Skew-normal exposure estimate (Carlini et al. 2019 §4.3) of each secret, and its cost."""
    n = fmt.num_candidates
    sample = fmt.candidates(rng.integers(0, n, size=min(sample_size, n)))
    # canaries and sample scored together, so both use the same fixed token context
    both = string_costs(model, fmt, [*secrets, *sample])
    fit = fit_skewnorm(both[len(secrets) :])
    # exposure is at most log2 |R| (rank >= 1): a tail estimate beyond it says only "first"
    est: list[float | None] = [min(fit.exposure(float(c)), math.log2(n)) for c in both[: len(secrets)]]
    return est, both[: len(secrets)]


def _canary_exposure(
    rec: dict[str, Any], n: int, rank: int | None, est: float | None, cost: float
) -> CanaryExposure:
    """One canary's result: exact when ``rank`` is known, else the extrapolated estimate ``est``."""
    return CanaryExposure(
        secret=rec["secret"],
        prefix=rec["prefix"],
        repeats=None if rec.get("repeats") is None else int(rec["repeats"]),
        num_candidates=n,
        rank=rank,
        exposure_bits=exposure(rank, n) if rank is not None else float(est),  # type: ignore[arg-type]
        method="exact" if rank is not None else "extrapolated",
        logppl=cost,
        extrapolated_bits=est,
        user_id=rec.get("user_id"),
    )


def _sharded_ranks(
    model: Any,
    space: Any,
    fmt: CanaryFormat,
    secrets: list[str],
    tie_tolerance: float,
    stats: SearchStats | None,
    seed: int,
    work_dir: Path,
    shard_size: int,
) -> tuple[np.ndarray, np.ndarray]:

    def work(chunk: list[str]) -> list[dict[str, Any]]:
        r, c = exact_ranks(model, space, chunk, tie_tolerance=tie_tolerance, stats=stats)
        return [{"rank": int(a), "cost": float(b)} for a, b in zip(r, c, strict=True)]

    fp = fingerprint_of(
        "exposure", getattr(model, "name", ""), type(model).__name__, fmt, secrets, tie_tolerance, seed
    )
    # A shard's walk costs about as much as its least exposed canary, so with several shards the
    # canaries go in by decreasing cost: the expensive ones share one walk, the others prune early.
    order = (
        np.argsort(-string_costs(model, fmt, secrets), kind="stable")
        if len(secrets) > shard_size
        else np.arange(len(secrets))
    )
    rows = run_rows(
        [secrets[i] for i in order],
        work,
        work_dir,
        fingerprint=fp,
        shard_size=shard_size,
        description="exposure",
    )
    ranks, costs = np.empty(len(secrets), dtype=np.int64), np.empty(len(secrets), dtype=np.float64)
    ranks[order] = [r["rank"] for r in rows]
    costs[order] = [r["cost"] for r in rows]
    return ranks, costs


def string_costs(model: Any, fmt: CanaryFormat, secrets: Sequence[str]) -> np.ndarray:
    """``-log p(secret | prefix)`` for many secrets, scoring each full string (canonical tokens).

    The constant context part cancels: the cost is taken over the tokens after the longest common
    token prefix of the strings, matching the trie's definition.
    """
    enc = model.tokenizer.encode
    fulls = [enc(fmt.prefix + s) for s in secrets]
    first = fulls[0]
    plen = min(len(f) for f in fulls) - 1
    for f in fulls[1:]:
        k = 0
        while k < plen and f[k] == first[k]:
            k += 1
        plen = k
    stats = model.token_stats(fulls)
    return np.array([-float(st.logprobs[plen:].astype(np.float64).sum()) for st in stats])


def read_canaries(path: str | Path) -> list[dict[str, Any]]:
    """Read ``canaries.jsonl``: one object per line with ``secret`` and ``prefix`` (or ``text``).

    ``prefix`` defaults to the part of ``text`` before the last occurrence of ``secret``.
    ``repeats`` (how often the canary was inserted) and ``user_id`` are optional.

    Raises:
        DataFileError: with the path, line and field of the first bad line.
    """
    p = Path(path)
    out: list[dict[str, Any]] = []
    for i, obj in iter_jsonl(p, hint="give canaries.jsonl as written by `lmleak synth customersim`"):
        secret = obj.get("secret")
        if not isinstance(secret, str) or not secret:
            raise DataFileError(
                "missing or empty", path=p, line=i, field="secret", hint='add "secret": "123456"'
            )
        prefix = obj.get("prefix")
        if prefix is None:
            text = obj.get("text")
            if not isinstance(text, str) or secret not in text:
                raise DataFileError(
                    "no prefix, and no text containing the secret",
                    path=p,
                    line=i,
                    field="prefix",
                    hint='add "prefix": "My ID is: "',
                )
            prefix = text[: text.rindex(secret)]
        if not isinstance(prefix, str):
            raise DataFileError("must be a string", path=p, line=i, field="prefix")
        rep = obj.get("repeats")
        if rep is not None and (not isinstance(rep, int) or rep < 0):
            raise DataFileError("must be a non-negative integer", path=p, line=i, field="repeats")
        alpha = obj.get("alphabet")  # synth mail's hex tokens carry their own alphabet
        if alpha is not None and (not isinstance(alpha, str) or not alpha):
            raise DataFileError("must be a non-empty string", path=p, line=i, field="alphabet")
        design = obj.get("canary_design", "random")  # written by `synth ... --canary-design`
        if design not in CANARY_DESIGNS:
            raise DataFileError(
                f"unknown canary design {design!r}",
                path=p,
                line=i,
                field="canary_design",
                hint=" or ".join(CANARY_DESIGNS),
            )
        out.append(
            {
                "prefix": prefix,
                "secret": secret,
                "repeats": rep,
                "user_id": obj.get("user_id"),
                "alphabet": alpha,
                "canary_design": design,
                "line": i,
            }
        )
    if not out:
        raise DataFileError("no canaries in file", path=p)
    return out


def secrets_in_texts(texts: Iterable[str], fmt: CanaryFormat) -> set[str]:
    """Every string of ``fmt`` that follows its prefix somewhere in ``texts`` (what a placebo must
    not be: a secret the model may have been trained on).

    Example:
        >>> sorted(secrets_in_texts(["My ID is: 123456 and My ID is: 9", "My ID is: 000042."],
        ...                         CanaryFormat("My ID is: ")))
        ['000042', '123456']
    """
    import re

    pattern = re.compile(re.escape(fmt.prefix) + "([" + re.escape(fmt.alphabet) + f"]{{{fmt.length}}})")
    return {m.group(1) for text in texts for m in pattern.finditer(text)}


def draw_placebos(
    canaries: Sequence[dict[str, Any]],
    count: int | None = None,
    *,
    alphabet: str | None = None,
    seed: int = 0,
    corpus_texts: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """Placebo canaries: per format of ``canaries``, ``count`` secrets (None: as many as that format
    has canaries) drawn uniformly without replacement from its candidates, never one of the
    canaries' secrets nor (given ``corpus_texts``) one that follows the prefix in the corpus.

    Fewer when the format has fewer candidates left. Each record is a canary record
    (``prefix, secret, repeats=0, user_id=None, alphabet``) with ``placebo: True``.

    Example:
        >>> recs = [{"prefix": "My ID is: ", "secret": "1234"}, {"prefix": "My ID is: ", "secret": "99"}]
        >>> p = draw_placebos(recs, seed=1)
        >>> [(len(x["secret"]), x["repeats"], x["placebo"]) for x in p]
        [(4, 0, True), (2, 0, True)]
        >>> len(draw_placebos(recs, 200)) == 200 + 99  # the 2-digit format has only 99 others
        True
    """
    if count is not None and count < 0:
        raise ConfigError(f"placebos must be >= 0, got {count}", field="placebos")
    groups = _group_by_format(canaries, alphabet)
    texts = list(corpus_texts) if corpus_texts is not None else []
    rng = np.random.default_rng([seed, 26])  # its own stream: the canaries' draws stay as they were
    out: list[dict[str, Any]] = []
    for fmt, idx in groups.items():
        taken = {c["secret"] for c in canaries}
        if texts:
            taken |= secrets_in_texts(texts, fmt)
        want = len(idx) if count is None else count
        for secret in _draw_format(fmt, want, taken, rng):
            out.append(
                {
                    "prefix": fmt.prefix,
                    "secret": secret,
                    "repeats": 0,
                    "user_id": None,
                    "alphabet": fmt.alphabet,
                    "placebo": True,
                }
            )
    return out


def _draw_format(fmt: CanaryFormat, want: int, taken: set[str], rng: np.random.Generator) -> list[str]:
    """``want`` distinct candidates of ``fmt`` outside ``taken``, uniformly (fewer if there are not)."""
    n = fmt.num_candidates
    free = n - sum(1 for t in taken if fmt.contains(t))
    want = min(want, free)
    if want <= 0:
        return []
    if 2 * want >= free:  # a small format: enumerate what is left and choose
        left = [c for c in fmt.candidates(np.arange(n)) if c not in taken]
        return [left[i] for i in rng.choice(len(left), size=want, replace=False)]
    base, seen = len(fmt.alphabet), set(taken)
    chosen: list[str] = []
    while len(chosen) < want:  # character by character: formats beyond 2^63 candidates too
        for row in rng.integers(0, base, size=(2 * (want - len(chosen)), fmt.length)):
            secret = "".join(fmt.alphabet[j] for j in row)
            if secret not in seen and len(chosen) < want:
                seen.add(secret)
                chosen.append(secret)
    return chosen


def exposure_table(results: Sequence[CanaryExposure]) -> Any:
    """One row per canary, the columns of ``exposure.parquet``."""
    import pandas as pd

    return pd.DataFrame(
        {
            "secret": [r.secret for r in results],
            "prefix": [r.prefix for r in results],
            "user_id": [r.user_id for r in results],
            "repeats": pd.array([r.repeats for r in results], dtype="Int64"),
            "num_candidates": [r.num_candidates for r in results],
            "rank": pd.array([r.rank for r in results], dtype="Int64"),
            "exposure_bits": [r.exposure_bits for r in results],
            "max_exposure_bits": [math.log2(r.num_candidates) for r in results],
            "method": [r.method for r in results],
            "logppl_nats": [r.logppl for r in results],
            "extrapolated_bits": [r.extrapolated_bits for r in results],
        }
    )


# long: the placebos beside the canaries add the split of their results and their table
@writes_run("out_dir")
def run_exposure(
    model: Any,
    canaries: str | Path,
    out_dir: str | Path,
    settings: ExposureSettings = ExposureSettings(),
    *,
    corpus_texts: Iterable[str] | None = None,
) -> tuple[dict[str, Any], list[Any]]:
    """Canary exposure into a run directory: ``exposure.parquet``, ``placebo_exposure.parquet`` and
    ``summary.json``.

    ``settings.placebos``: secrets never inserted, per format (None: as many as the format's
    canaries; 0: none), drawn by :func:`draw_placebos` (never a secret that follows the prefix in
    ``corpus_texts``) and ranked in the same searches as the canaries.

    ``settings.canary_design`` (``random`` or ``crafted``, :mod:`lmleak.data.canaries`): the design
    the canaries were drawn with, checked against what ``canaries.jsonl`` records (None: as
    recorded); the summary's ``canary_design``.

    Returns the summary and the per-canary results (for printing; placebos not among them).
    """
    import time

    records = read_canaries(canaries)
    design = canary_design_of(records, canaries, settings.canary_design)
    if design == "crafted" and settings.alphabet is None:  # a crafted file without its alphabet: the runes
        settings = replace(settings, alphabet=crafted_alphabet(DIGITS))
    require(model, Capability.SCORE, attack="canary exposure")  # before any work, the placebos' too
    placebo_records = (
        []
        if settings.placebos == 0
        else draw_placebos(
            records,
            settings.placebos,
            alphabet=settings.alphabet,
            seed=settings.seed,
            corpus_texts=corpus_texts,
        )
    )
    stats = SearchStats()
    t0 = time.perf_counter()
    every = measure_exposure(
        model,
        [*records, *placebo_records],
        settings,
        stats=stats,
        work_dir=Path(out_dir) / "passes" / "exposure",
    )
    seconds = time.perf_counter() - t0
    results, placebo_results = every[: len(records)], every[len(records) :]
    table = exposure_table(results)
    run = secure_dir(out_dir)
    summary = _exposure_summary(model, canaries, results, table, stats, seconds)
    summary["canary_design"] = design
    if placebo_results:
        placebo_table = exposure_table(placebo_results)
        table["placebo_p_value"] = placebo_p_values(table["exposure_bits"], placebo_table["exposure_bits"])
        write_parquet(placebo_table, run / "placebo_exposure.parquet")
        summary.update(placebo_summary(table["exposure_bits"], placebo_table["exposure_bits"], settings.seed))
    else:
        summary["placebo_note"] = (
            "no placebo canaries were drawn (placebos = 0): max_exposure has no null beside it"
        )
    write_parquet(table, run / "exposure.parquet")
    write_summary(run, summary, model=model)
    return summary, results


def canary_design_of(records: Sequence[dict[str, Any]], path: str | Path, expected: str | None = None) -> str:
    """The design of the canaries read from ``path`` (``mixed`` when they differ); with ``expected``
    every canary must have that design, or a DataFileError names the first line that does not.

    Example:
        >>> canary_design_of([{"canary_design": "crafted", "line": 1}], "c.jsonl")
        'crafted'
        >>> canary_design_of([{"canary_design": "random", "line": 3}], "c.jsonl", "crafted")
        Traceback (most recent call last):
        ...
        lmleak.errors.DataFileError: c.jsonl:3: field 'canary_design': the canary is of the random design, not crafted. Fix: give the canaries.jsonl that `synth ... --canary-design crafted` wrote, or leave --canary-design out
    """
    if expected is not None:
        check_design(expected)
        for r in records:
            if r.get("canary_design", "random") != expected:
                raise DataFileError(
                    f"the canary is of the {r.get('canary_design', 'random')} design, not {expected}",
                    path=Path(path),
                    line=r.get("line"),
                    field="canary_design",
                    hint=f"give the canaries.jsonl that `synth ... --canary-design {expected}` wrote, "
                    "or leave --canary-design out",
                )
    designs = {r.get("canary_design", "random") for r in records}
    return designs.pop() if len(designs) == 1 else "mixed"


def placebo_p_values(exposures: Any, placebo_exposures: Any) -> np.ndarray:
    """Per canary, the share of placebos at least as exposed, counting the canary itself:
    ``(1 + #{placebo >= e}) / (n + 1)`` (a valid permutation p-value; never 0).

    Example:
        >>> placebo_p_values([19.9, 1.0], [1.2, 0.4, 2.5, 0.9]).tolist()
        [0.2, 0.6]
    """
    p = np.sort(np.asarray(placebo_exposures, dtype=np.float64))
    e = np.asarray(exposures, dtype=np.float64)
    at_least = p.size - np.searchsorted(p, e, side="left")
    return (1.0 + at_least) / (p.size + 1.0)


def placebo_summary(exposures: Any, placebo_exposures: Any, seed: int) -> dict[str, Any]:
    """The summary keys of the placebos: their maximum, mean and percentiles beside the canaries'.

    Example:
        >>> s = placebo_summary([19.9, 1.0], [1.2, 0.4, 2.5, 0.9], seed=0)
        >>> s["num_placebos"], s["placebo_max_exposure"], s["canaries_above_placebo_max"]
        (4, 2.5, 1)
    """
    e = np.asarray(exposures, dtype=np.float64)
    p = np.asarray(placebo_exposures, dtype=np.float64)
    pct = np.percentile(p, [50, 90, 95])
    return {
        "num_placebos": int(p.size),
        "placebo_max_exposure": float(p.max()),
        "placebo_mean_exposure": float(p.mean()),
        "placebo_exposure_percentiles": {"p50": float(pct[0]), "p90": float(pct[1]), "p95": float(pct[2])},
        "canaries_above_placebo_max": int((e > p.max()).sum()),
        "placebo": {
            "method": "secrets drawn uniformly from each canary format (as many per format as it has "
            "canaries), never a canary's secret nor one following the prefix in the corpus, ranked "
            "in the same searches; placebo_exposure.parquet holds each",
            "seed": seed,
        },
    }


@dataclass(frozen=True)
class ExposureRun:
    """What ``lmleak exposure`` prints: the model's name, the run's summary and each canary's result."""

    model_name: str
    summary: dict[str, Any]
    results: list[CanaryExposure]


def exposure_of_model(
    model: str,
    canaries: str | Path,
    out_dir: str | Path,
    settings: ExposureSettings = ExposureSettings(),
    *,
    corpus: str | Path | None = None,
    echo: Callable[[str], None] | None = None,
) -> ExposureRun:
    """Load the model spec ``model`` and run :func:`run_exposure` on it (the work of ``lmleak exposure``).

    Args:
        model: a model spec :func:`lmleak.models.loading.load_model` reads (folder, GGUF, fake:...).
        canaries: ``canaries.jsonl`` (secret, prefix, repeats, user_id).
        out_dir: the run directory for ``exposure.parquet`` and ``summary.json``.
        settings: the run's :class:`ExposureSettings`.
        corpus: the training corpus, so that no placebo is a secret that follows its prefix there
            (as the audit's exposure stage draws them; None: not checked).
        echo: called with a progress message once the model is loaded.

    Returns:
        The model's name, the summary written to ``summary.json`` and the per-canary results.
    """
    # lazy: the corpus loaders import pandas; the settings stay cheap to import
    from lmleak.data.loaders import load_corpus

    # lazy: torch
    from lmleak.models.loading import load_model

    # first: a missing or bad file, or a file of another design, exits 2 before the model loads
    rows = read_canaries(canaries)
    if settings.canary_design is not None:
        canary_design_of(rows, canaries, settings.canary_design)
    texts = None if corpus is None else load_corpus(corpus).texts()
    lm = load_model(model)
    if echo is not None:
        echo(f"ranking the canaries of {canaries} with {lm.name}")
    summary, results = run_exposure(lm, canaries, out_dir, settings, corpus_texts=texts)
    return ExposureRun(lm.name, summary, results)


def _mean_exposure_interval(table: Any, n_boot: int = 1000) -> dict[str, Any]:
    """``mean_exposure_ci``: the cluster bootstrap of the mean exposure over the canaries' owners
    (a canary without an owner is its own group), and its ``intervals`` record. The maximum gets no
    interval (a bootstrap of a maximum is not a valid one); the placebos are its null."""
    bits = table["exposure_bits"].to_numpy(dtype=np.float64)
    groups = [u if u is not None else f"canary-{i}" for i, u in enumerate(table["user_id"])]
    ci = group_bootstrap(lambda idx: float(bits[idx].mean()), groups, n_boot=n_boot)
    return {
        "mean_exposure_ci": None if ci is None else [ci[0], ci[1]],
        "intervals": interval_record(
            method=BOOTSTRAP_METHOD, unit="canary owner", n_units=len(set(groups)), n_boot=n_boot
        ),
    }


def _exposure_summary(
    model: Any,
    canaries: str | Path,
    results: list[CanaryExposure],
    table: Any,
    stats: SearchStats,
    seconds: float,
) -> dict[str, Any]:
    """``summary.json`` of an exposure run: the most exposed canary, the search's cost, the scenario."""
    best = max(results, key=lambda r: r.exposure_bits)
    summary = {
        "attack": "canary_exposure",
        "model": getattr(model, "name", type(model).__name__),
        **scoring_convention(model),
        "canaries": str(canaries),
        "num_canaries": len(results),
        "max_exposure": best.exposure_bits,
        "max_exposure_secret_rank": best.rank,
        "max_possible_exposure": max(math.log2(r.num_candidates) for r in results),
        "mean_exposure": float(table["exposure_bits"].mean()),
        **_mean_exposure_interval(table),
        "methods": sorted(set(table["method"])),
        "rank_rule": "1 + #strictly more likely (beyond 1e-4 nats) + floor(#other ties / 2)",
        "search": {
            "nodes_scored": stats.nodes_scored,
            "model_calls": stats.model_calls,
            "tokens_fed": stats.tokens_fed,
        },
        "seconds": seconds,
        "scenario": scenario_record(
            attack="canary_exposure",
            access="scores",
            target="canary_secret",
            knowledge=("canary_prefix", "secret_format"),
            notes="rank of each inserted canary among all candidates of its format (Carlini et al. 2019)",
        ),
    }
    return summary
