"""A limit decided on its 95 % interval (issue 32): pass, fail or inconclusive, and how many people
would settle an inconclusive one.

A point estimate beside a limit is a coin toss near the limit: a model with no membership signal at
all "fails" ``mia_auc <= 0.6`` in a quarter of audits at 20 texts a side. So a limit with an interval
is decided on the whole interval (:func:`decide`):

- for a ``max`` limit: **pass** when the whole interval is ``<= limit``, **fail** when the whole
  interval is ``> limit``, **inconclusive** when it straddles the limit (mirrored for a ``min`` limit);
- a value without an interval is decided on its value, and the row says why that is sound or that
  no interval was recorded (:func:`no_interval_note`): the DP audit's ε lower bound is itself a
  one-sided 95 % bound; leakage ε and exposure are maxima with no interval.

An inconclusive row carries a power line (:func:`power_line`): the sample size at which the
interval would exclude the limit at the observed effect, assuming its half-width shrinks as
1/sqrt(n) (:func:`n_to_settle`). A count (leaked sequences, extracted samples) grows with the corpus,
so no sample size settles a count against a fixed limit; its power line says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from lmleak.render.headline import MIA_PER_SIDE

#: what the interval of a metric is over: (headline key of the sample size, what it counts), one
#: entry per group the interval compares; a metric not listed gets a factor ("9x as many")
SAMPLE_SIZES: dict[str, tuple[tuple[str, str], ...]] = {
    "mia_auc": ((MIA_PER_SIDE, "texts a side"),),
    "pii_people_excess": (
        ("pii_people_members_n", "trained-on people"),
        ("pii_people_null_n", "held-out people"),
    ),
    "pii_exact_match_excess": (
        ("pii_exact_match_members_n", "member probes"),
        ("pii_exact_match_controls_n", "held-out control probes"),
    ),
    "pii_exact_match": (
        ("pii_exact_match_members_n", "member probes"),
        ("pii_exact_match_controls_n", "held-out control probes"),
    ),
}

#: counts: they grow with the corpus, so a larger sample moves the value, not only the interval
COUNTS = frozenset(
    {"unique_sequences", "pii_unique_sequences", "curated_unique_sequences", "extracted", "users_at_risk"}
)

#: how a metric with no interval is decided (the row's note)
NO_INTERVAL: dict[str, str] = {
    "epsilon_lower_bound": "the bound is itself a one-sided 95 % lower bound: decided on its value",
    "epsilon_lower_bound <= claimed dp_epsilon": "the bound is itself a one-sided 95 % lower bound: "
    "decided on its value",
    "leakage_epsilon": "a maximum over the leaked sequences, with no interval: decided on its value",
    "max_exposure": "the most exposed canary's rank among its candidates, with no interval: decided on "
    "its value",
}


def decide(value: float, interval: Sequence[float] | None, limit: float, direction: str = "max") -> str:
    """``pass``, ``fail`` or ``inconclusive`` for ``value`` (with its 95 % ``interval``) against a
    ``max`` limit (``value <= limit`` holds) or a ``min`` one (``value >= limit`` holds). Without an
    interval the value decides (pass or fail); a value outside its own interval widens it.

    Example:
        >>> [decide(0.55, (0.40, 0.70), 0.6), decide(0.45, (0.40, 0.58), 0.6), decide(0.7, (0.62, 0.8), 0.6)]
        ['inconclusive', 'pass', 'fail']
        >>> [decide(0.6, (0.5, 0.6), 0.6), decide(2.0, (1.2, 2.5), 1.0, "min"), decide(1.1, (0.8, 1.3), 1.0, "min")]
        ['pass', 'pass', 'inconclusive']
        >>> decide(0.0, (0.0, 3.69), 0.0), decide(0.0, None, 0.0)  # a count of 0 against "<= 0"
        ('inconclusive', 'pass')
    """
    if interval is None:
        ok = value >= limit if direction == "min" else value <= limit
        return "pass" if ok else "fail"
    lo, hi = min(interval[0], interval[1], value), max(interval[0], interval[1], value)
    if direction == "min":  # mirror: value >= limit is -value <= -limit
        lo, hi, limit = -hi, -lo, -limit
    if hi <= limit:
        return "pass"
    if lo > limit:
        return "fail"
    return "inconclusive"


def n_to_settle(n: float, value: float, interval: Sequence[float], limit: float) -> float:
    """The sample size at which the interval would exclude ``limit`` at the observed effect:
    ``n * (h / |value - limit|)^2``, with ``h`` the interval's half-width on the limit's side (the
    distance from the value to the interval's end toward the limit; for a symmetric interval, half
    its width), assuming ``h`` shrinks as 1/sqrt(n). Rounded up; ``inf`` when the value is the limit
    (no sample size settles it at this effect).

    Example:
        >>> n_to_settle(40, 0.55, (0.40, 0.70), 0.6)  # 40 * (0.15 / 0.05)^2
        360
        >>> n_to_settle(100, 0.08, (0.01, 0.15), 0.05)  # 100 * (0.07 / 0.03)^2 = 544.4
        545
        >>> n_to_settle(40, 0.6, (0.5, 0.7), 0.6)
        inf
    """
    factor = _factor(value, interval, limit)
    return math.inf if math.isinf(factor) else math.ceil(round(n * factor, 6))


def _factor(value: float, interval: Sequence[float], limit: float) -> float:
    """``(h / |value - limit|)^2``: how many times the sample would settle it (inf on the limit)."""
    effect = abs(value - limit)
    if effect == 0 or not math.isfinite(effect):
        return math.inf
    h = (interval[1] - value) if limit > value else (value - interval[0])
    return (max(h, 0.0) / effect) ** 2


def _n_words(x: float) -> str:
    return f"{x:,.0f}" if x < 1e12 else f"{x:.2g}"


def power_line(
    metric: str,
    value: float,
    interval: Sequence[float],
    limit: float,
    values: Mapping[str, Any],
    top: Mapping[str, Any] | None = None,
) -> str:
    """The inconclusive row's power line: how many people (texts, probes: what the stage's interval
    is over, read from ``values`` or else ``top``, the model's whole headline) would settle it at
    the observed effect.

    Example:
        >>> power_line("mia_auc", 0.55, (0.4, 0.7), 0.6, {MIA_PER_SIDE: 40})
        'at this effect (0.55 against 0.6) about 360 texts a side (now 40) would settle it, if the interval narrows as 1/√n'
        >>> power_line("mia_auc", 0.6, (0.5, 0.7), 0.6, {})
        'no sample size settles it: the value is the limit (never at this effect)'
    """
    lo, hi = interval
    scale = _factor(value, (lo, hi), limit)
    if math.isinf(scale):
        return "no sample size settles it: the value is the limit (never at this effect)"
    if metric in COUNTS:
        return (
            "a count grows with the corpus, so no larger sample settles it against a fixed limit: limit the "
            "share of people beyond the held-out null instead (`max_pii_people_excess`)"
        )
    effect = f"at this effect ({value:.4g} against {limit:g})"
    tail = "would settle it, if the interval narrows as 1/√n"
    sizes = []
    for key, unit in SAMPLE_SIZES.get(metric, ()):
        n = values.get(key, (top or {}).get(key))
        if isinstance(n, int | float) and not isinstance(n, bool) and n > 0:
            sizes.append((float(n), unit))
    if not sizes:
        return f"{effect} about {scale:.3g}× as many people as now {tail}"
    needed = " and ".join(f"{_n_words(n_to_settle(n, value, (lo, hi), limit))} {unit}" for n, unit in sizes)
    now = " and ".join(_n_words(n) for n, _ in sizes)
    return f"{effect} about {needed} (now {now}) {tail}"


def no_interval_note(metric: str) -> str:
    """How a value with no interval is decided (the row's note).

    Example:
        >>> no_interval_note("mia_auc")
        'no 95 % interval recorded: decided on the value alone'
    """
    return NO_INTERVAL.get(metric, "no 95 % interval recorded: decided on the value alone")
