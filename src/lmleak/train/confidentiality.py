"""Confidentiality guarantees of redaction, deduplication and CRT (paper 002, §3.3 and A.2).

Pure functions of the DP guarantee (ε, δ) of the training algorithm and the redaction policy's
miss rate γ = 1 − recall. Confidentiality (Definition 2) compares training on D with training on
D' where a secret is replaced by ``<MASK>``; a redaction policy that catches the secret makes the
two runs identical, which is where the amplification comes from.

Which Bayesian number lmleak reports: Proposition 6 applied to the *final* (ε, δ) of training,
ε_conf = log(1 + γ(e^ε − 1)), δ_conf = γδ. It holds for any (ε, δ)-DP algorithm. The official
accounting notebook of the paper instead amplifies the subsampled Gaussian mechanism itself
(through autodp) and composes afterwards, which is tighter: it reports ≈ 0.374 for ε = 2
(δ = 1e-5, q = 0.1, 100 steps, γ = 0.1) where Proposition 6 on ε = 2 gives ≈ 0.494. lmleak reports
the proposition's bound because it is the one the paper states and proves for every mechanism,
and it needs nothing but the (ε, δ) that the accountant printed.

Which γ and which group size, so that no number runs backwards:

- a *measured* γ (k misses of n secrets) enters Proposition 6 as its one-sided 95 % Clopper-Pearson
  upper bound (the ``gamma_upper95`` the trainer records), never the point estimate: 0 misses of 562
  would otherwise print ∞ and 1 miss a finite 0.348, while the upper bound gives 1.09 ≥ 0.81
  (:func:`measured_bayesian_confidentiality`; monotone in the misses);
- a group of m secrets is charged for the number of them the policy misses at a stated quantile of
  Binomial(m, γ) (95 % by default, 1.0 for the worst case m), never ``round(γ·m)``: with 5 secrets at
  γ = 0.1 a secret of the group is missed 41 % of the time, yet banker's rounding gave 0
  (:func:`missed_secrets`); and the chance that *more* are missed goes into δ
  (:func:`group_tail_confidentiality`): at ε = 2, δ = 1e-5 that group is (4, 0.0097), not the
  (4, 0.0011) of the quantile alone — the 0.86 % of runs in which 3 or more are missed are
  protected by nothing the bound states;
- Theorem 8.3's δ₂ (1 − recall of the conservative policy π_c on μ) is measured like γ: the
  one-sided 95 % Clopper–Pearson upper bound of π_c's misses (:func:`delta2_upper_bound`; 0 misses
  of 696 secrets: 4.3e-3), never the point estimate 0; given none, it is reported as the
  assumption δ₂ = 0 (``theorem8_delta2_assumed``), never silently 0.

A δ of 1 or more is no guarantee at all (any two distributions are (ε, 1)-indistinguishable):
:func:`delta_text` prints it as "no protection", never as 3.1e147.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


def bayesian_confidentiality(epsilon: float, delta: float, gamma: float) -> tuple[float, float]:
    """Proposition 6: (log(1 + γ(e^ε − 1)), γδ)-Bayesian confidentiality under redaction.

    γ is the policy's false-negative rate (1 − recall) under the secret distribution μ.

    Example (paper 002 Fig. 6: ε' = 1, γ = 0.1; the paper's figure rounds it to 0.2):
        >>> round(bayesian_confidentiality(1.0, 1e-5, 0.1)[0], 4)
        0.1586
        >>> round(bayesian_confidentiality(2.0, 1e-5, 0.1)[0], 3)
        0.494
    """
    _check(epsilon, delta, gamma)
    if epsilon <= _EXP_SAFE:
        # log1p(γ·expm1(ε)) is exact for tiny γ and ε, where log(1 + γ(e^ε − 1)) loses digits
        return math.log1p(gamma * math.expm1(epsilon)), gamma * delta
    # e^ε overflows: log(1 + γ(e^ε − 1)) = ε + log(γ + (1 − γ)e^−ε); γ = 0 leaves log 1 = 0
    return (epsilon + math.log(gamma + (1 - gamma) * math.exp(-epsilon)) if gamma > 0 else 0.0), gamma * delta


def measured_bayesian_confidentiality(
    epsilon: float,
    delta: float,
    gamma: float | None,
    *,
    gamma_upper: float | None = None,
    level: float = 0.95,
    support: int | None = None,
) -> dict[str, Any]:
    """Proposition 6 for a *measured* γ, never a bound it does not support.

    With ``gamma_upper`` (the one-sided ``level`` Clopper-Pearson upper bound of γ from ``support``
    secrets, ``gamma_upper95`` in ``privacy.json``) the bound is Proposition 6 at that γ: it holds
    with confidence ``level`` over the measurement, stays finite when no secret was missed, and grows
    with the misses. Without it, a measured γ = 0 does not show that the policy misses nothing and
    Propositions 5-6 need γ > 0: the bound is then infinite (``epsilon`` None in JSON) with the
    reason; a γ > 0 (a nominal recall) is used as given and said so. γ unknown: no bound.

    Returns ``epsilon, delta, reason`` and ``gamma_used`` / ``gamma_basis`` (which γ went in).

    Example:
        >>> measured_bayesian_confidentiality(2.0, 1e-5, 0.0)["reason"][:22]
        'the measured miss rate'
        >>> round(measured_bayesian_confidentiality(2.0, 1e-5, 0.1)["epsilon"], 3)
        0.494
        >>> r = measured_bayesian_confidentiality(5.46, 1e-5, 0.0, gamma_upper=1 - 0.05 ** (1 / 562), support=562)
        >>> round(r["epsilon"], 2), r["gamma_basis"]  # 0 misses of 562: finite
        (0.81, '95% Clopper-Pearson upper bound of gamma (562 secrets)')
    """
    if gamma_upper is not None:
        n = (
            f" ({support} secret{'' if support == 1 else 's'})" if support is not None else ""
        )  # pure maths: no lmleak.words
        used, basis = float(gamma_upper), f"{level:.0%} Clopper-Pearson upper bound of gamma{n}"
    elif gamma is None:
        reason = "the policy's miss rate gamma is unknown: train with --secrets to measure it"
        return {"epsilon": None, "delta": None, "reason": reason, "gamma_used": None, "gamma_basis": None}
    elif gamma <= 0.0:
        reason = (
            "the measured miss rate gamma is 0 and no upper confidence bound was recorded: a finite sample "
            "cannot show that the policy misses nothing, and Props. 5-6 need gamma > 0; the bound is infinite"
        )
        return {
            "epsilon": math.inf,
            "delta": None,
            "reason": reason,
            "gamma_used": 0.0,
            "gamma_basis": "point estimate",
        }
    else:
        used, basis = float(gamma), "point estimate (no upper confidence bound recorded)"
    eps, dlt = bayesian_confidentiality(epsilon, delta, used)
    return {"epsilon": eps, "delta": dlt, "reason": None, "gamma_used": used, "gamma_basis": basis}


def missed_secrets(unique: int, gamma: float, quantile: float = 0.95) -> int:
    """How many of a group's ``unique`` secrets a policy with miss rate γ misses, at ``quantile``:
    the smallest k with P(Binomial(unique, γ) <= k) >= quantile; ``quantile=1`` is the worst case
    (every secret, when γ > 0). Each secret is assumed missed independently with probability γ.

    Example (5 secrets at γ = 0.1: P(0 missed) = 0.59, P(<= 1) = 0.919, P(<= 2) = 0.991):
        >>> missed_secrets(5, 0.1), missed_secrets(5, 0.1, 0.5), missed_secrets(5, 0.1, 1.0), missed_secrets(5, 0.0)
        (2, 0, 5, 0)
    """
    if unique < 0:
        raise ValueError("the number of secrets must be >= 0")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    if not 0.0 < quantile <= 1.0:
        raise ValueError(f"quantile must be in (0, 1], got {quantile}")
    if gamma == 0.0 or unique == 0:
        return 0
    if gamma == 1.0 or quantile == 1.0:
        return unique
    cdf = 0.0
    for k in range(unique + 1):
        log_pmf = (
            math.lgamma(unique + 1)
            - math.lgamma(k + 1)
            - math.lgamma(unique - k + 1)
            + k * math.log(gamma)
            + (unique - k) * math.log1p(-gamma)
        )
        cdf += math.exp(log_pmf)
        if cdf >= quantile - 1e-12:  # the float sum of the pmf may fall short of 1 by rounding
            return k
    return unique


def missed_tail(unique: int, gamma: float, missed: int) -> float:
    """P(Binomial(unique, γ) > missed): the chance that a policy with miss rate γ misses more of a
    group's ``unique`` secrets than the ``missed`` a group bound charges (0 when missed >= unique).

    Example (5 secrets at γ = 0.1: P(> 2 missed) = 1 − 0.99144):
        >>> round(missed_tail(5, 0.1, 2), 5), missed_tail(5, 0.1, 5), missed_tail(5, 0.0, 0)
        (0.00856, 0.0, 0.0)
    """
    if missed >= unique or gamma == 0.0:
        return 0.0
    cdf = sum(
        math.exp(
            math.lgamma(unique + 1) - math.lgamma(k + 1) - math.lgamma(unique - k + 1)
            + k * math.log(gamma) + (unique - k) * math.log1p(-gamma)
        )
        for k in range(missed + 1)
    ) if gamma < 1.0 else 0.0  # fmt: skip
    return min(1.0, max(0.0, 1.0 - cdf))


def group_tail_confidentiality(
    epsilon: float, delta: float, unique: int, gamma: float, quantile: float = 0.95
) -> tuple[float, float, int]:
    """Group confidentiality of ``unique`` secrets each missed independently with probability γ,
    charged k̃ = :func:`missed_secrets` at ``quantile``: ``(k̃ε, k̃ e^{k̃ε} δ + P(K > k̃), k̃)``.

    Paper 002 Prop. 5 (§3.2, group statement; proof in A.2) holds for a *given* number k̃ of
    missed secrets. Here K ~ Binomial(m, γ) is random: for an event E,
    P[A(D) ∈ E] = Σ_j P(K = j) P[A(D) ∈ E | K = j] ≤ Σ_{j ≤ k̃} P(K = j) (e^{jε} P[A(D') ∈ E] +
    j e^{jε} δ) + P(K > k̃) ≤ e^{k̃ε} P[A(D') ∈ E] + k̃ e^{k̃ε} δ + P(K > k̃), since D' (every
    secret masked) does not depend on which were missed. The tail is the δ a quantile leaves out;
    ``quantile=1`` charges every secret and has none. δ is capped at 1.

    Example (ε 2, δ 1e-5, γ 0.1, 5 secrets: 2 missed at the 95 % quantile):
        >>> eps, dlt, k = group_tail_confidentiality(2.0, 1e-5, 5, 0.1)
        >>> eps, round(dlt, 4), k
        (4.0, 0.0097, 2)
    """
    k = missed_secrets(unique, gamma, quantile)
    eps, dlt = group_confidentiality(epsilon, delta, k)
    return eps, min(1.0, dlt + missed_tail(unique, gamma, k)), k


def delta2_upper_bound(misses: int, secrets: int, *, level: float = 0.95) -> float | None:
    """Theorem 8.3's δ₂ (paper 002 §3.3: π_c has recall 1 − δ₂ on μ) from ``misses`` of
    ``secrets`` secrets that π_c did not catch: the one-sided ``level`` Clopper–Pearson upper bound,
    as γ's (``gamma_upper95``); a finite sample never shows that π_c misses nothing. None without
    secrets.

    Example (0 misses of 696: 1 − 0.05^(1/696)):
        >>> round(delta2_upper_bound(0, 696), 5), delta2_upper_bound(3, 3), delta2_upper_bound(0, 0)
        (0.00429, 1.0, None)
    """
    if secrets < 0 or not 0 <= misses <= secrets:
        raise ValueError(f"need 0 <= misses <= secrets, got misses={misses}, secrets={secrets}")
    if secrets == 0:
        return None
    if misses == secrets:
        return 1.0
    from scipy.stats import beta  # scipy is a core dependency; imported here to keep import light

    return float(beta.ppf(level, misses + 1, secrets - misses))


def delta_text(delta: float | None, digits: int = 3) -> str:
    """A δ as a guarantee prints it: ``"no protection"`` at 1 or more (any two distributions are
    (ε, 1)-indistinguishable, so such a δ says nothing; a group δ reached 3.1e147), else the number.

    Example:
        >>> delta_text(1e-5), delta_text(0.0097), delta_text(3.1e147), delta_text(1.0), delta_text(None)
        ('1e-05', '0.0097', 'no protection', 'no protection', '—')
    """
    if delta is None:
        return "—"
    if not delta < 1.0:  # NaN too: no bound
        return "no protection"
    return f"{delta:.{digits}g}"


def per_secret_confidentiality(epsilon: float, detected: bool) -> float:
    """Proposition 5, first statement: ε̃(x) = ε(x) if π misses x, 0 if π redacts it.

    Example:
        >>> per_secret_confidentiality(3.0, detected=True), per_secret_confidentiality(3.0, detected=False)
        (0.0, 3.0)
    """
    return 0.0 if detected else float(epsilon)


def group_confidentiality(epsilon: float, delta: float, missed: int) -> tuple[float, float]:
    """Proposition 5, second statement, for a uniform per-secret ε: the k̃ secrets of a group that π
    misses give ε̃(S) = k̃ε and δ̃(S) = k̃ e^{ε̃(S)} δ (detected secrets contribute nothing).

    Example:
        >>> group_confidentiality(1.0, 1e-6, 0)
        (0.0, 0.0)
        >>> eps, dlt = group_confidentiality(0.5, 1e-6, 3)
        >>> eps, round(dlt / 1e-6, 4)
        (1.5, 13.4451)
    """
    _check(epsilon, delta, 0.0)
    if missed < 0:
        raise ValueError("missed must be >= 0")
    eps = missed * epsilon
    return eps, _group_delta(missed, eps, delta)


def dedup_group_confidentiality(
    epsilon: float,
    delta: float,
    occurrences: int,
    unique: int,
    missed_fraction: float = 1.0,
    *,
    quantile: float = 0.95,
) -> dict[str, float]:
    """Proposition 7: after Dedup, a group of ``occurrences`` secrets (``unique`` distinct values)
    costs only what its unique secrets cost; combined with Proposition 5 for the secrets the policy
    misses (miss rate ``missed_fraction``), counted at ``quantile`` with the tail beyond it in δ
    (:func:`group_tail_confidentiality`).

    Example:
        >>> r = dedup_group_confidentiality(1.0, 1e-6, occurrences=20, unique=1)
        >>> r["epsilon"], r["epsilon_without_dedup"]
        (1.0, 20.0)
    """
    if unique > occurrences or unique < 0:
        raise ValueError("unique must be between 0 and occurrences")
    _check(epsilon, delta, missed_fraction)
    with_dedup = group_tail_confidentiality(epsilon, delta, unique, missed_fraction, quantile)
    without = group_tail_confidentiality(epsilon, delta, occurrences, missed_fraction, quantile)
    return {
        "epsilon": with_dedup[0],
        "delta": with_dedup[1],
        "epsilon_without_dedup": without[0],
        "delta_without_dedup": without[1],
    }


@dataclass(frozen=True, slots=True)
class CRTGuarantees:
    """Theorem 8's three statements for Algorithm 1 with DP part (ε, δ)."""

    per_secret_epsilon_missed: float  # (1): ε for secrets π misses (π_c catches them), 0 otherwise
    per_secret_epsilon_detected: float
    per_secret_delta: float
    group_epsilon: float  # (2): γ̃ m ε for m unique secrets of which γ̃ m are missed by π
    group_delta: float  # (2): γ̃ m e^{γ̃ m ε} δ + P(more than γ̃ m missed) (group_tail_confidentiality)
    bayesian_epsilon: float  # (3): log(1 + γ(e^ε − 1))
    bayesian_delta: float  # (3): γδ + δ₂, δ₂ = 1 − recall of π_c
    group_missed: int = 0  # γ̃ m: the group's secrets π misses, at the stated quantile (missed_secrets)
    delta2: float = 0.0  # δ₂ used in (3)
    delta2_assumed: bool = False  # True: δ₂ was not given, and 0 is the assumption π_c misses nothing
    delta2_basis: str = "given"  # how δ₂ was obtained: given, an upper confidence bound, or assumed 0


def crt_guarantees(
    epsilon: float,
    delta: float,
    gamma: float,
    *,
    unique_secrets: int = 1,
    delta2: float | None = None,
    quantile: float = 0.95,
    delta2_basis: str | None = None,
) -> CRTGuarantees:
    """Theorem 8 of paper 002 for CRT (Algorithm 1) whose DP-SGD part is (ε, δ)-DP.

    Statement (2) as printed says π "detects" a γ̃ share of the unique secrets, yet its bound
    grows with that share; by Proposition 5, which its proof applies, the bound counts the secrets
    π *misses*: γ̃ m is that count, taken at ``quantile`` of Binomial(m, γ) (:func:`missed_secrets`).
    The group δ includes the chance that more are missed (:func:`group_tail_confidentiality`).
    ``delta2``: π_c's miss rate, best its upper confidence bound (:func:`delta2_upper_bound`, said
    in ``delta2_basis``); None: statement (3) is printed with δ₂ = 0 and ``delta2_assumed`` set, the
    assumption that π_c catches every secret π misses (1 − π_c's sentence recall measures it:
    ``lmleak pii evaluate --policy conservative``).

    Example:
        >>> g = crt_guarantees(2.0, 1e-5, 0.1, unique_secrets=10, delta2=1e-4)
        >>> round(g.bayesian_epsilon, 3), round(g.bayesian_delta, 7), g.group_missed, g.group_epsilon
        (0.494, 0.000101, 3, 6.0)
        >>> crt_guarantees(2.0, 1e-5, 0.1).delta2_assumed
        True
    """
    _check(epsilon, delta, gamma)
    if delta2 is not None and not 0.0 <= delta2 <= 1.0:
        raise ValueError("delta2 must be in [0, 1]")
    b_eps, b_delta = bayesian_confidentiality(epsilon, delta, gamma)
    g_eps, g_delta, missed = group_tail_confidentiality(epsilon, delta, unique_secrets, gamma, quantile)
    return CRTGuarantees(
        per_secret_epsilon_missed=float(epsilon),
        per_secret_epsilon_detected=0.0,
        per_secret_delta=float(delta),
        group_epsilon=g_eps,
        group_delta=g_delta,
        bayesian_epsilon=b_eps,
        bayesian_delta=min(1.0, b_delta + (delta2 or 0.0)),
        group_missed=missed,
        delta2=float(delta2 or 0.0),
        delta2_assumed=delta2 is None,
        delta2_basis="assumed 0" if delta2 is None else (delta2_basis or "given"),
    )


def confidentiality_report(
    epsilon: float,
    delta: float,
    gamma: float,
    *,
    unique_secrets: int = 1,
    occurrences: int | None = None,
    delta2: float | None = None,
    quantile: float = 0.95,
    delta2_misses: int | None = None,
    delta2_secrets: int | None = None,
) -> dict[str, Any]:
    """Every guarantee above in one flat mapping, keys named after the result they come from.

    Group bounds count the secrets missed at ``quantile`` (``group_missed``, ``group_quantile``;
    :func:`missed_secrets`) and add the chance that more are (``group_missed_tail``) to δ.
    ``delta2_misses`` of ``delta2_secrets`` (π_c's misses, measured): δ₂ is their 95 % upper
    bound (:func:`delta2_upper_bound`), which a given ``delta2`` must not contradict;
    ``theorem8_delta2_assumed`` says δ₂ was neither given nor measured (0 assumed)."""
    delta2, basis = _measured_delta2(delta2, delta2_misses, delta2_secrets)
    b_eps, b_delta = bayesian_confidentiality(epsilon, delta, gamma)
    g_eps, g_delta, missed = group_tail_confidentiality(epsilon, delta, unique_secrets, gamma, quantile)
    out: dict[str, Any] = {
        "epsilon": epsilon,
        "delta": delta,
        "gamma": gamma,
        "recall": 1.0 - gamma,
        "per_secret_epsilon_detected": per_secret_confidentiality(epsilon, True),
        "per_secret_epsilon_missed": per_secret_confidentiality(epsilon, False),
        "bayesian_epsilon": b_eps,
        "bayesian_delta": b_delta,
        "unique_secrets": unique_secrets,
        "group_quantile": quantile,
        "group_missed": missed,
        "group_missed_tail": missed_tail(unique_secrets, gamma, missed),
        "group_epsilon": g_eps,
        "group_delta": g_delta,
    }
    if occurrences is not None:
        d = dedup_group_confidentiality(epsilon, delta, occurrences, unique_secrets, gamma, quantile=quantile)
        out.update(
            {
                "dedup_group_epsilon": d["epsilon"],
                "dedup_group_delta": d["delta"],
                "group_epsilon_without_dedup": d["epsilon_without_dedup"],
                "group_delta_without_dedup": d["delta_without_dedup"],
            }
        )
    t8 = crt_guarantees(
        epsilon, delta, gamma, unique_secrets=unique_secrets, delta2=delta2, quantile=quantile,
        delta2_basis=basis,
    )  # fmt: skip
    out.update({f"theorem8_{k}": v for k, v in asdict(t8).items()})
    return out


def _measured_delta2(
    delta2: float | None, misses: int | None, secrets: int | None
) -> tuple[float | None, str | None]:
    """δ₂ and how it was obtained: given, or the upper bound of ``misses`` of ``secrets``."""
    if (misses is None) != (secrets is None):
        raise ValueError("give both delta2_misses and delta2_secrets (pi_c's misses of how many secrets)")
    if misses is None or secrets is None:
        return delta2, None
    if delta2 is not None:
        raise ValueError("give delta2 or delta2_misses/delta2_secrets, not both")
    basis = f"95% Clopper-Pearson upper bound ({misses} misses of {secrets} secrets)"
    return delta2_upper_bound(misses, secrets), basis


_EXP_SAFE = 700.0  # math.exp overflows a float64 just above 709


def _group_delta(count: float, epsilon: float, delta: float) -> float:
    """``min(1, count · e^ε · δ)``, also where e^ε overflows; a δ of 1 or more is vacuous (any two
    distributions are (ε, 1)-indistinguishable).

    Example:
        >>> _group_delta(3, 1.5, 1e-6) == min(1.0, 3 * math.exp(1.5) * 1e-6), _group_delta(2, 1e300, 1e-9)
        (True, 1.0)
    """
    if count == 0 or delta == 0:
        return 0.0
    if epsilon <= _EXP_SAFE:
        return min(1.0, count * math.exp(epsilon) * delta)
    return math.exp(min(0.0, math.log(count) + epsilon + math.log(delta)))


def _check(epsilon: float, delta: float, gamma: float) -> None:
    if epsilon < 0 or not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon}")
    if not 0.0 <= delta <= 1.0:
        raise ValueError(f"delta must be in [0, 1], got {delta}")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
