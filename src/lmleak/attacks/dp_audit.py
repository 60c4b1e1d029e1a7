"""One-run DP auditing (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training
run", NeurIPS 2023).

The audit: ``m`` canaries, each included in the training data independently with probability 1/2
(``S_i = +1`` in, ``-1`` out); one training run; the auditor guesses ``T_i ∈ {-1, 0, +1}`` for every
canary from the trained model, making ``r`` non-abstaining guesses of which ``v`` are correct.

The pure maths (this module's first half) is the paper's Theorem 3 (approximate DP; Theorem 2 is
its ``δ = 0`` case). If the training algorithm is ``(ε, δ)``-DP, then for every ``v``::

    P[#correct >= v]  <=  P[W >= v]  +  2 m δ · max_{i = 1..v} (1/i) · P[v - i <= W < v],
                          W ~ Binomial(r, e^ε / (e^ε + 1))

(:func:`p_value`; the ``δ`` term is the paper's, as their appendix algorithm computes it). The
right-hand side is the p-value of the null hypothesis "the algorithm is (ε, δ)-DP" after observing
``v`` correct guesses; :func:`epsilon_lower_bound` is the largest ``ε`` that the observation rejects
at level ``1 - confidence``, found by bisection (the p-value grows with ``ε``). Binomial tails are
exact (``scipy.stats.binom``), never normal approximations.

The runner's half (:func:`lmleak.audit.dp_audit.run_dp_audit`) inserts the canaries, trains once with lmleak's trainer,
scores each canary by ``log p(secret | prefix)`` and guesses the ``r/2`` highest-scoring canaries
"in" and the ``r/2`` lowest "out". Exposure would order the canaries identically (for one secret
format it is a decreasing function of the rank, which is a decreasing function of the likelihood),
so the likelihood is the score.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lmleak.attacks.fdp_audit import FDP_PAPER, GDP_ASSUMPTION, check_counts, fdp_bound
from lmleak.attacks.settings import DEFAULT_PREFIX, DPAuditSettings
from lmleak.data.canaries import CRAFTED_PREFIX as CRAFTED_PREFIX  # the doctests' name
from lmleak.data.canaries import check_design, craft_secret
from lmleak.errors import ConfigError
from lmleak.models.base import Capability, require
from lmleak.words import plural


def _check(m: int, r: int, v: int, delta: float) -> None:
    check_counts(m, r, v)
    if not 0.0 <= delta <= 1.0:
        raise ConfigError(f"delta must lie in [0, 1], got {delta}", field="delta")


def p_value(m: int, r: int, v: int, epsilon: float, delta: float = 0.0) -> float:
    """The p-value of "the algorithm is (ε, δ)-DP" after ``v`` correct of ``r`` guesses (Theorem 3).

    ``P[W >= v] + 2 m δ max_{1<=i<=v} P[v-i <= W < v] / i`` with ``W ~ Binomial(r, e^ε/(e^ε+1))``,
    capped at 1. With ``delta = 0`` this is Theorem 2: the exact binomial upper tail.

    Example:
        >>> round(p_value(100, 10, 10, 0.0), 6)  # ten of ten right by coin flips: 2^-10
        0.000977
        >>> p_value(100, 10, 5, 0.0) > 0.5
        True
    """
    from scipy.stats import binom

    _check(m, r, v, delta)
    if epsilon < 0:
        raise ValueError("epsilon must be >= 0")
    q = 1.0 / (1.0 + math.exp(-epsilon))  # accuracy of ε-DP randomised response, e^ε / (e^ε + 1)
    beta = float(binom.sf(v - 1, r, q))  # P[W >= v]
    if delta == 0.0 or v == 0:
        return min(beta, 1.0)
    # P[v - i <= W < v] for i = 1..v is the running sum of pmf(v-1), pmf(v-2), ..., pmf(v-i)
    below = np.cumsum(binom.pmf(np.arange(v - 1, -1, -1), r, q))
    alpha = float(np.max(below / np.arange(1, v + 1)))
    return min(beta + 2.0 * m * delta * alpha, 1.0)


def epsilon_lower_bound(
    m: int, r: int, v: int, delta: float = 0.0, confidence: float = 0.95, *, tolerance: float = 1e-7
) -> float:
    """The largest ε such that ``v`` correct of ``r`` guesses rejects (ε, δ)-DP at ``confidence``.

    With probability at least ``confidence`` over the canaries' coin flips, an (ε, δ)-DP algorithm
    gives a :func:`p_value` above ``1 - confidence``; so every ε whose p-value falls below it is
    refuted, and the audit reports the supremum of those ("the algorithm is not ε-DP for any
    smaller ε"). 0 when nothing is refuted (e.g. ``v <= r/2``). Bisection to ``tolerance`` on a
    bracket doubled until the p-value reaches ``1 - confidence``.

    Example:
        >>> round(epsilon_lower_bound(1000, 10, 10, confidence=0.95), 4)  # log(q/(1-q)), q = 0.05^(1/10)
        1.0519
        >>> epsilon_lower_bound(1000, 100, 50)
        0.0
    """
    _check(m, r, v, delta)
    if not 0.0 < confidence < 1.0:
        raise ConfigError(
            f"confidence must lie in (0, 1), got {confidence}", field="confidence", hint="e.g. 0.95"
        )
    level = 1.0 - confidence
    if r == 0 or p_value(m, r, v, 0.0, delta) >= level:
        return 0.0
    lo, hi = 0.0, 1.0
    while p_value(m, r, v, hi, delta) < level:
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:  # q rounds to 1 long before this: the tail is 1 and the loop has ended
            return lo
    while hi - lo > tolerance:
        mid = 0.5 * (lo + hi)
        if p_value(m, r, v, mid, delta) < level:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class EpsilonBound:
    """The lower bound of ``lmleak dp-audit bound`` with the counts and settings it came from."""

    m: int
    r: int
    v: int
    delta: float
    confidence: float
    epsilon_lower_bound: float
    #: the f-DP bound from the same counts (None at δ = 0: ``fdp_note`` says why)
    epsilon_lower_bound_fdp: float | None = None
    mu_lower_bound: float | None = None
    fdp_assumption: str = GDP_ASSUMPTION
    fdp_note: str | None = None


def bound_from_counts(m: int, r: int, v: int, delta: float = 0.0, confidence: float = 0.95) -> EpsilonBound:
    """:func:`epsilon_lower_bound` for ``v`` correct of ``r`` guesses about ``m`` canaries, with its
    inputs, and beside it the f-DP bound from the same counts (:func:`lmleak.attacks.fdp_audit.fdp_bound`,
    which assumes a Gaussian trade-off and is not given at δ = 0).

    Example:
        >>> b = bound_from_counts(1000, 10, 10)
        >>> (b.m, b.r, b.v, round(b.epsilon_lower_bound, 4), b.epsilon_lower_bound_fdp)
        (1000, 10, 10, 1.0519, None)
        >>> b = bound_from_counts(1000, 1000, 900, 1e-5)
        >>> round(b.epsilon_lower_bound, 2), round(b.epsilon_lower_bound_fdp, 2)
        (2.02, 3.78)
    """
    eps = epsilon_lower_bound(m, r, v, delta, confidence)
    f = fdp_bound(m, r, v, delta, confidence)
    return EpsilonBound(
        m, r, v, delta, confidence, eps, f.epsilon_lower_bound_fdp, f.mu_lower_bound, fdp_note=f.reason
    )


# ------------------------------------------------------------------------------ planning an audit

#: The precisions ``lmleak dp-audit plan`` tabulates when none are given.
PLAN_PRECISIONS: tuple[float, ...] = (1.0, 0.99, 0.95, 0.9, 0.8, 0.7, 0.6)

#: The largest audit :func:`canaries_needed` considers.
MAX_PLAN_CANARIES = 10_000_000


def correct_at_precision(r: int, precision: float) -> int:
    """The fewest correct guesses of ``r`` whose share is at least ``precision``: ``ceil(P r)``.

    Example:
        >>> correct_at_precision(1000, 0.9), correct_at_precision(10, 0.95), correct_at_precision(7, 1.0)
        (900, 10, 7)
    """
    if not 0.0 <= precision <= 1.0 or math.isnan(precision):
        raise ConfigError(
            f"precision must lie in [0, 1], got {precision}", field="precision", hint="e.g. 0.9"
        )
    if r < 0:
        raise ConfigError(f"need r >= 0 guesses, got {r}", field="r")
    # round first so that 0.9 * 1000 = 900.0000000000001 asks for 900, not 901
    return min(r, math.ceil(round(precision * r, 9)))


def max_certifiable_epsilon(
    m: int, r: int | None = None, precision: float = 1.0, delta: float = 0.0, confidence: float = 0.95
) -> float:
    """The largest ε̂ an audit of ``m`` canaries with ``r`` guesses (default all ``m``) can certify
    when a share ``precision`` of its guesses is right (``ceil(precision·r)`` of them).

    With every guess right (``precision = 1``) this is the most the audit can ever show: a claimed
    ε above it cannot be refuted by an audit of this size, whatever the model leaks. With
    ``δ = 0`` it is ``logit`` of the one-sided Clopper–Pearson lower bound of the accuracy
    (``P[Binomial(r, q) >= v]`` is the regularised incomplete beta ``I_q(v, r - v + 1)``); for
    ``precision = 1`` simply ``log(q / (1 - q))`` with ``q = (1 - confidence)^(1/r)``.

    Example:
        >>> round(max_certifiable_epsilon(1000), 3)  # 1,000 guesses, all right: q = 0.05^(1/1000)
        5.809
        >>> round(max_certifiable_epsilon(1000, precision=0.9), 3)
        2.021
    """
    r = m if r is None else r
    return epsilon_lower_bound(m, r, correct_at_precision(r, precision), delta, confidence)


# long: the docstring explains the rounding zone that its scan handles; the body is short
def canaries_needed(
    target_epsilon: float,
    precision: float = 1.0,
    delta: float = 0.0,
    confidence: float = 0.95,
    *,
    max_m: int = MAX_PLAN_CANARIES,
    guess_share: float = 1.0,
) -> int | None:
    """The fewest canaries ``m`` from which on every audit that guesses ``floor(guess_share · m)``
    of its canaries (default all of them; ``dp-audit run`` guesses half, :func:`default_guesses`)
    with a share ``precision`` right certifies ``ε >= target_epsilon`` (the :func:`p_value` of the
    target falls below ``1 - confidence``). None when no audit of at most ``max_m`` canaries can: in
    particular when ``precision <= e^ε / (e^ε + 1)``, the accuracy of ε-DP randomised response,
    which no number of guesses beats.

    "From ``m`` on", not "at ``m``": ``ceil(precision·m)`` rounds up, so near the threshold an
    ``m`` whose rounding adds a correct guess certifies while ``m + 1`` does not (at 70 % right,
    ε = 0.5 at 90 % confidence is certified at m = 53, 56, 59, 62, 63, ... and at every m from 71);
    an audit planned at the first lucky ``m`` would fail with one canary more.

    Found by doubling ``m`` until the target is certified at some ``m = h``, then scanning every
    ``m`` below ``2h`` for the last one that does not certify (``2h`` is past the rounding zone:
    doubling the guesses outweighs the one guess that rounding adds).

    Example:
        >>> canaries_needed(1.0)  # all right: q_1^m < 0.05 with q_1 = e/(1+e), so m > 9.56
        10
        >>> canaries_needed(0.5, precision=0.7, confidence=0.9)
        71
        >>> canaries_needed(2.0, precision=0.85) is None  # 0.85 < e^2/(1+e^2) = 0.881
        True
        >>> canaries_needed(1.0, guess_share=0.5)  # half guessed, as dp-audit run does: twice the canaries
        20
    """
    if not target_epsilon > 0 or math.isinf(target_epsilon):
        raise ConfigError(
            f"the target epsilon must be a positive number, got {target_epsilon}", field="target_epsilon"
        )
    correct_at_precision(1, precision)  # checks the precision
    _check(1, 0, 0, delta)
    if not 0.0 < guess_share <= 1.0:
        raise ConfigError(f"guess_share must lie in (0, 1], got {guess_share}", field="r")
    if precision <= 1.0 / (1.0 + math.exp(-target_epsilon)):
        return None

    def guesses(m: int) -> int:
        return math.floor(round(guess_share * m, 9))

    def fails(m: int) -> bool:
        r = guesses(m)
        return p_value(m, r, correct_at_precision(r, precision), target_epsilon, delta) >= 1.0 - confidence

    hi = 1
    while fails(hi):
        if hi >= max_m:
            return None
        hi = min(2 * hi, max_m)
    top = min(2 * hi, max_m)
    last = _last_tail_failure(top, guess_share, precision, target_epsilon, confidence)
    if delta > 0:  # the δ term only above the last m the tail alone fails, from the top down
        for m in range(top, last, -1):
            if fails(m):
                return m + 1
    return last + 1


def _last_tail_failure(
    top: int, guess_share: float, precision: float, epsilon: float, confidence: float
) -> int:
    """The largest ``m <= top`` whose δ = 0 tail (every m at once) does not certify ``epsilon``; 0 if none."""
    from scipy.stats import binom

    ms = np.arange(1, top + 1)
    rs = np.floor(np.round(guess_share * ms, 9)).astype(np.int64)
    vs = np.minimum(rs, np.ceil(np.round(precision * rs, 9)).astype(np.int64))
    q = 1.0 / (1.0 + math.exp(-epsilon))
    tail_fails = np.flatnonzero(binom.sf(vs - 1, rs, q) >= 1.0 - confidence)
    return int(ms[tail_fails.max()]) if tail_fails.size else 0


def default_guesses(m: int) -> int:
    """The guesses ``dp-audit run`` makes about ``m`` canaries when ``--r`` is not given: ``m // 2``
    (the quarter most likely "in", the quarter least likely "out"); ``dp-audit plan`` uses the same.

    Example:
        >>> default_guesses(1000), default_guesses(7)
        (500, 3)
    """
    return m // 2


@dataclass(frozen=True)
class AuditPlan:
    """What ``lmleak dp-audit plan`` prints: per precision, the largest certifiable ε̂ for ``m``
    canaries and ``r`` guesses, and (with a target) the canaries needed to certify it."""

    m: int
    r: int
    delta: float
    confidence: float
    rows: tuple[dict[str, Any], ...]
    target_epsilon: float | None = None


def plan_audit(
    m: int,
    *,
    r: int | None = None,
    precisions: Sequence[float] = PLAN_PRECISIONS,
    delta: float = 0.0,
    confidence: float = 0.95,
    target_epsilon: float | None = None,
) -> AuditPlan:
    """Size a one-run audit before training: each row gives a precision, the correct guesses it
    means of ``r``, ``max_epsilon`` (:func:`max_certifiable_epsilon`) and, with a target,
    ``canaries_needed`` (:func:`canaries_needed` with the same share ``r / m`` of canaries guessed).

    ``r`` defaults to what ``dp-audit run`` guesses, :func:`default_guesses` (half the canaries), so
    that a plan and a run with the same ``m`` agree; ``r = m`` plans an audit that guesses all.

    Example:
        >>> plan = plan_audit(1000, precisions=[1.0, 0.9], target_epsilon=4.0)
        >>> plan.r, [(row["v"], round(row["max_epsilon"], 2), row["canaries_needed"]) for row in plan.rows]
        (500, [(500, 5.11, 332), (450, 1.95, None)])
        >>> plan_audit(1000, r=1000, precisions=[1.0], target_epsilon=4.0).rows[0]["canaries_needed"]
        166
    """
    r = default_guesses(m) if r is None else r
    _check(m, r, 0, delta)
    if not precisions:
        raise ConfigError("no precision to plan for", field="precision", hint="e.g. --precision 0.9")
    rows = []
    for p in precisions:
        v = correct_at_precision(r, p)
        row: dict[str, Any] = {
            "precision": float(p),
            "v": v,
            "max_epsilon": epsilon_lower_bound(m, r, v, delta, confidence),
        }
        if target_epsilon is not None:
            row["canaries_needed"] = canaries_needed(target_epsilon, p, delta, confidence, guess_share=r / m)
        rows.append(row)
    return AuditPlan(m, r, delta, confidence, tuple(rows), target_epsilon)


def guess_membership(scores: Sequence[float] | np.ndarray, r: int) -> np.ndarray:
    """Guesses ``T ∈ {-1, 0, +1}^m``: ``+1`` for the ``r/2`` highest scores, ``-1`` for the ``r/2``
    lowest, 0 (abstain) for the rest; an odd ``r`` gives the extra guess to "in". Ties are broken
    by canary order (a stable sort), never by the (secret) inclusion.

    Example:
        >>> guess_membership([0.1, 0.9, 0.5, 0.3], 2).tolist()
        [-1, 1, 0, 0]
    """
    s = np.asarray(scores, dtype=np.float64)
    if not 0 <= r <= len(s):
        raise ConfigError(
            f"r = {plural(r, 'guess')} for {plural(len(s), 'canary')}", field="r", hint="use 0 <= r <= m"
        )
    order = np.argsort(-s, kind="stable")
    guesses = np.zeros(len(s), dtype=np.int64)
    k_in = r - r // 2
    guesses[order[:k_in]] = 1
    if r // 2:
        guesses[order[len(s) - r // 2 :]] = -1
    return guesses


def count_correct(
    guesses: Sequence[int] | np.ndarray, included: Sequence[bool] | np.ndarray
) -> tuple[int, int]:
    """(r, v): non-abstaining guesses and how many of them match the inclusion.

    Example:
        >>> count_correct([1, -1, 0, 1], [True, True, False, True])
        (3, 2)
    """
    g = np.asarray(guesses)
    s = np.where(np.asarray(included, dtype=bool), 1, -1)
    return int(np.count_nonzero(g)), int(np.count_nonzero(g * s > 0))


# ---------------------------------------------------------------------------------------- the run


#: The name the library, its tests and docs used before the settings (issue 34).
DPAuditConfig = DPAuditSettings


def make_canaries(
    m: int, *, prefix: str = DEFAULT_PREFIX, digits: int = 6, seed: int = 0, design: str = "random"
) -> list[dict[str, Any]]:
    """``m`` canaries with distinct random secrets, each included with probability 1/2 (seeded).

    Each is ``{"canary_id", "user_id", "prefix", "secret", "text", "included"}``; the user id is the
    canary's own (one canary, one privacy unit). ``design="crafted"`` maps each digit of the same
    draws to its rune (:func:`lmleak.data.canaries.craft_secret`): the same coin flips, the same
    number of candidates, rare tokens instead of digits.

    Example:
        >>> c = make_canaries(3, seed=1)
        >>> [x["text"].startswith("My ID is: ") and len(x["secret"]) == 6 for x in c]
        [True, True, True]
        >>> k = make_canaries(3, prefix=CRAFTED_PREFIX, seed=1, design="crafted")
        >>> [x["included"] for x in k] == [x["included"] for x in c], k[0]["secret"] == craft_secret(c[0]["secret"])
        (True, True)
    """
    check_design(design)
    if m < 1 or digits < 1 or 10**digits < m:
        raise ConfigError(f"cannot draw {m} distinct {digits}-digit secrets", field="m")
    rng = random.Random(seed)
    secrets = rng.sample(range(10**digits), m)
    out = []
    for i, s in enumerate(secrets):
        secret = str(s).zfill(digits)
        if design == "crafted":
            secret = craft_secret(secret)
        out.append(
            {
                "canary_id": i,
                "user_id": f"dp-audit-canary-{i:05d}",
                "prefix": prefix,
                "secret": secret,
                "text": prefix + secret,
                "included": rng.random() < 0.5,
            }
        )
    return out


def canary_documents(
    canaries: Sequence[dict[str, Any]], documents: int = 1, *, placebo: bool = False
) -> list[tuple[str, str, str]]:
    """The training documents the canaries add, as ``(user_id, doc_id, text)``: ``documents`` copies
    of each included canary's text, all under the canary's own user id (one canary, one privacy
    unit: a user-level canary is a person who wrote the secret ``documents`` times, included or left
    out as a whole); none in a placebo run.

    Example:
        >>> c = make_canaries(3, seed=1)
        >>> docs = canary_documents(c, 2)
        >>> len(docs) == 2 * sum(x["included"] for x in c), {d[2] for d in docs} <= {x["text"] for x in c}
        (True, True)
        >>> canary_documents(c, 2, placebo=True)
        []
    """
    if documents < 1:
        raise ConfigError(f"a canary needs at least one document, got {documents}", field="canary_documents")
    if placebo:
        return []
    return [
        (c["user_id"], f"dp-audit-{c['canary_id']:05d}" + (f"-{j}" if documents > 1 else ""), c["text"])
        for c in canaries
        if c["included"]
        for j in range(documents)
    ]


def score_canaries(model: Any, canaries: Sequence[dict[str, Any]]) -> np.ndarray:
    """``log p(secret | prefix)`` in nats per canary (higher: more likely a member)."""
    require(model, Capability.SCORE, attack="dp-audit")
    enc = model.tokenizer.encode
    contexts, continuations = [], []
    for c in canaries:
        # split the tokenised text where the prefix's tokens end, so the secret is scored exactly as
        # it was trained (a separately tokenised secret can lose its leading-space token)
        full, ctx = enc(c["text"]), enc(c["prefix"])
        cut = len(ctx) if full[: len(ctx)] == ctx else 0  # the shared prefix only shifts every score alike
        contexts.append(full[:cut])
        continuations.append(full[cut:])
    return np.asarray(model.score_ids(contexts, continuations), dtype=np.float64)


def audit_scores(
    scores: Sequence[float] | np.ndarray,
    included: Sequence[bool] | np.ndarray,
    *,
    m: int | None = None,
    r: int | None = None,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Guess, count and bound: the ``dp_audit`` record (``m, r, v, delta, confidence,
    epsilon_lower_bound, accuracy``) from canary scores and the recorded inclusion.

    Beside the bound: ``max_certifiable_epsilon``, what the same ``r`` guesses would certify were
    every one right (no claimed ε above it can be refuted by this audit), and ``null``, the guesses
    on the excluded canaries (never trained on) beside those on the included ones. The excluded
    canaries are the audit's null: inclusion is a coin flip made before training, so a model that
    learnt nothing from its canaries guesses "in" as often for an excluded canary as for an
    included one, and its correct guesses are Binomial(r, 1/2).

    Example:
        >>> rec = audit_scores([5, 4, 3, 2, 1, 0], [True, True, True, False, False, False], r=6)
        >>> rec["v"], round(rec["epsilon_lower_bound"], 3), round(rec["max_certifiable_epsilon"], 3)
        (6, 0.435, 0.435)
        >>> rec["null"]["excluded_guessed_in"], rec["null"]["included_guessed_in"]
        (0, 3)
    """
    m = len(scores) if m is None else m
    r = default_guesses(m) if r is None else r
    guesses = guess_membership(scores, r)
    r_made, v = count_correct(guesses, included)
    eps = epsilon_lower_bound(m, r_made, v, delta, confidence)
    fdp = fdp_bound(m, r_made, v, delta, confidence)
    return {
        "m": m,
        "r": r_made,
        "v": v,
        "delta": delta,
        "confidence": confidence,
        "accuracy": v / r_made if r_made else None,
        "epsilon_lower_bound": eps,
        "max_certifiable_epsilon": epsilon_lower_bound(m, r_made, r_made, delta, confidence),
        "theorem": "Steinke, Nasr & Jagielski 2023, Theorem 3",
        **fdp_record(fdp),
        "null": null_record(guesses, included),
        "guesses": guesses,
    }


def fdp_record(fdp: Any) -> dict[str, Any]:
    """The f-DP bound's keys of a ``dp_audit`` record: ``epsilon_lower_bound_fdp`` (None at δ = 0,
    with ``fdp_note`` saying why), ``mu_lower_bound``, ``fdp_assumption`` and ``fdp_theorem``.

    Example:
        >>> from lmleak.attacks.fdp_audit import fdp_bound
        >>> rec = fdp_record(fdp_bound(1000, 1000, 900, 0.0))
        >>> rec["epsilon_lower_bound_fdp"], rec["fdp_note"].startswith("not given at δ = 0")
        (None, True)
    """
    return {
        "epsilon_lower_bound_fdp": fdp.epsilon_lower_bound_fdp,
        "mu_lower_bound": fdp.mu_lower_bound,
        "fdp_assumption": GDP_ASSUMPTION,
        "fdp_theorem": FDP_PAPER,
        "fdp_note": fdp.reason,
    }


#: How the audit's null is stated in its record and in docs/dp-audit.md.
NULL_STATEMENT = (
    "the excluded canaries are the null: each canary was included by a coin flip before training, "
    "so a model that learnt nothing from its canaries guesses 'in' as often for an excluded canary "
    "(never trained on) as for an included one, its correct guesses are Binomial(r, 1/2) and the "
    "bound is 0 with probability at least the confidence"
)


def null_record(guesses: Sequence[int] | np.ndarray, included: Sequence[bool] | np.ndarray) -> dict[str, Any]:
    """The guesses on the excluded canaries beside those on the included ones (the 2 × 2 table of
    guess against inclusion, abstentions left out), with :data:`NULL_STATEMENT`.

    Example:
        >>> rec = null_record([1, -1, 0, 1, -1], [True, False, True, False, True])
        >>> [rec[k] for k in ("included_guessed_in", "included_guessed_out", "excluded_guessed_in", "excluded_guessed_out")]
        [1, 1, 1, 1]
        >>> rec["excluded"], rec["included"]
        (2, 3)
    """
    g = np.asarray(guesses)
    inc = np.asarray(included, dtype=bool)
    return {
        "statement": NULL_STATEMENT,
        "included": int(inc.sum()),
        "excluded": int((~inc).sum()),
        "included_guessed_in": int(np.count_nonzero(inc & (g > 0))),
        "included_guessed_out": int(np.count_nonzero(inc & (g < 0))),
        "excluded_guessed_in": int(np.count_nonzero(~inc & (g > 0))),
        "excluded_guessed_out": int(np.count_nonzero(~inc & (g < 0))),
    }


def audit_statement(claimed: float | None, measured: float, confidence: float, unit: str = "sequence") -> str:
    """The one-line verdict for reports; a user-level audit says its numbers are per person.

    Example:
        >>> audit_statement(3.0, 0.4, 0.95)
        'claimed ε ≤ 3; measured ≥ 0.4 (95% confidence)'
        >>> audit_statement(None, 1.25, 0.95)
        'no DP claim (ε = ∞); measured ≥ 1.25 (95% confidence)'
        >>> audit_statement(3.0, 0.4, 0.95, unit="user")
        'claimed ε ≤ 3 per person; measured ≥ 0.4 per person (95% confidence)'
    """
    per = " per person" if unit == "user" else ""
    c = f"claimed ε ≤ {claimed:.3g}{per}" if claimed is not None else "no DP claim (ε = ∞)"
    return f"{c}; measured ≥ {measured:.3g}{per} ({confidence:.0%} confidence)"


def limit_statement(m: int, r: int, max_epsilon: float, claimed: float | None) -> str:
    """What the audit's size lets it show: the largest ε̂ that ``r`` guesses about ``m`` canaries
    certify were every guess right, and whether a claimed ε lies beyond it.

    Example:
        >>> limit_statement(256, 128, 3.3, 8.0)
        'with 128 guesses about 256 canaries this audit certifies at most ε ≥ 3.3 (every guess right): it cannot refute a claimed ε above 3.3, so the claimed ε ≤ 8 is beyond its reach (size an audit with `lmleak dp-audit plan`)'
    """
    text = (
        f"with {plural(r, 'guess')} about {plural(m, 'canary')} this audit certifies at most ε ≥ {max_epsilon:.3g} "
        f"(every guess right): it cannot refute a claimed ε above {max_epsilon:.3g}"
    )
    if claimed is not None and claimed >= max_epsilon:
        text += f", so the claimed ε ≤ {claimed:.3g} is beyond its reach (size an audit with `lmleak dp-audit plan`)"
    return text
