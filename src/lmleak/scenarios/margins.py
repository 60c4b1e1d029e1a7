"""Privacy leakage ratio and privacy risk margins between scenarios (paper 004, §5.3.3 and §5.4).

- privacy leakage ratio = |I_T ∩ Î_T| / |Î_T| (correct predictions over valid ones); "NA" when
  no valid prediction exists (|Î_T| = 0), never 0;
- for every pair of scenarios that differ in exactly one factor, the more severe one (``X+``) is
  the *anchor*, the other (``X-``) the *weakened* one, and the privacy risk margin is the
  anchor's ratio minus the weakened one's; it is NA when either ratio is NA. A negative margin
  means the measured risk contradicts the scenario ordering and is flagged as a violation.

Scenario names are factor letters each followed by ``+`` (more severe) or ``-``: ``K+A+R-``.

Rounding, as in the paper: Table 3 reports ratios in percent with two decimals and its margins
are differences of those *rounded* ratios (K+A+R+ vs K+A-R+: 3.50 − 3.14 = 0.36, while the exact
difference of 352/10,065 and 306/9,737 is 0.3546 pp). :func:`risk_margins` therefore rounds the
ratios first when ``decimals`` is given (the default, 2) and reports the exact difference with
``decimals=None``.

Uncertainty (not in the paper, which prints bare ratios): a ratio is a binomial proportion, so
each carries a Wilson score interval (Wilson 1927), and each margin, a difference of two
independent proportions, carries Newcombe's hybrid score interval built from the two Wilson
intervals (Newcombe 1998, method 10). A margin is *significant* when its interval excludes 0;
a negative margin whose interval contains 0 is noise, not evidence against the ordering.

Multiplicity: Newcombe's interval assumes two *independent* samples, but the scenarios of one
experiment probe the same subjects, so their counts are correlated and the intervals approximate;
and each interval covers one comparison at 95 %, so among many margins some exclude 0 by chance.
Every result says so (``multiplicity_note``); no adjustment is applied.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.errors import ConfigError, DataFileError
from lmleak.intervals import wilson_interval as wilson_interval  # moved there; re-exported

_FACTOR = re.compile(r"([A-Za-z])\s*([+\-−⁺⁻])")


def leakage_ratio(correct: int, valid: int) -> float | None:
    """|I_T ∩ Î_T| / |Î_T| as a fraction, or ``None`` (the paper's "NA") when nothing is valid.

    Example:
        >>> round(leakage_ratio(352, 10_065), 6)
        0.034973
        >>> leakage_ratio(0, 0) is None
        True
    """
    if valid < 0 or correct < 0 or correct > valid:
        raise ValueError(f"need 0 <= correct <= valid, got correct={correct}, valid={valid}")
    return None if valid == 0 else correct / valid


def difference_interval(
    correct_a: int, valid_a: int, correct_b: int, valid_b: int, *, z: float = 1.959963984540054
) -> tuple[float, float] | None:
    """Newcombe's hybrid score interval for p_a - p_b from two independent samples (method 10).

    With (l_i, u_i) the Wilson interval of p_i and d = p_a - p_b:
    L = d - sqrt((p_a - l_a)^2 + (u_b - p_b)^2) and U = d + sqrt((u_a - p_a)^2 + (p_b - l_b)^2).
    None when either sample is empty.

    Example:
        >>> [round(x, 4) for x in difference_interval(56, 70, 48, 80)]  # Newcombe 1998, Table II (a)
        [0.0524, 0.3339]
    """
    wa, wb = wilson_interval(correct_a, valid_a, z=z), wilson_interval(correct_b, valid_b, z=z)
    if wa is None or wb is None:
        return None
    pa, pb = correct_a / valid_a, correct_b / valid_b
    d = pa - pb
    lower = d - math.sqrt((pa - wa[0]) ** 2 + (wb[1] - pb) ** 2)
    upper = d + math.sqrt((wa[1] - pa) ** 2 + (pb - wb[0]) ** 2)
    return lower, upper


def parse_scenario_name(name: str) -> tuple[tuple[str, bool], ...]:
    """``"K+A-R+"`` -> ``(("K", True), ("A", False), ("R", True))`` (True = the severe value).

    Example:
        >>> parse_scenario_name("K+A-R+")
        (('K', True), ('A', False), ('R', True))
    """
    s = str(name).replace(" ", "").replace("^", "")
    parts = _FACTOR.findall(s)
    if not parts or "".join(a + b for a, b in parts) != s:
        raise ConfigError(
            f"cannot read scenario name {name!r}",
            field="scenario",
            hint="write factor letters each followed by + or -, e.g. K+A+R-",
        )
    letters = [a.upper() for a, _ in parts]
    if len(set(letters)) != len(letters):
        raise ConfigError(f"scenario name {name!r} repeats a factor", field="scenario")
    return tuple((a.upper(), b in "+⁺") for a, b in parts)


def _canonical(parsed: tuple[tuple[str, bool], ...]) -> str:
    return "".join(f"{a}{'+' if s else '-'}" for a, s in parsed)


def _order_key(parsed: tuple[tuple[str, bool], ...]) -> tuple[int, tuple[bool, ...]]:
    # Table 3's order: fewer weakened factors first, then '+' before '-' from the first factor on
    return (sum(not s for _, s in parsed), tuple(not s for _, s in parsed))


@dataclass(frozen=True, slots=True)
class Margin:
    """One anchor/weakened pair: ``margin`` in percentage points (None = NA).

    ``ci_low``/``ci_high`` bound the margin (pp, 95 %, Newcombe's method 10) when the counts
    behind both ratios are known; ``significant`` is whether that interval excludes 0 (None when
    unknown).
    """

    anchor: str
    weakened: str
    factor: str
    margin: float | None
    ci_low: float | None = None
    ci_high: float | None = None

    @property
    def violation(self) -> bool:
        """A negative margin: the weakened scenario leaked more than its anchor."""
        return self.margin is not None and self.margin < 0

    @property
    def significant(self) -> bool | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_low > 0 or self.ci_high < 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "anchor": self.anchor,
            "weakened": self.weakened,
            "factor": self.factor,
            "margin": self.margin,
            "violation": self.violation,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "significant": self.significant,
        }


def with_intervals(
    margins: list[Margin], counts: dict[str, tuple[int, int]], *, decimals: int | None = 2
) -> list[Margin]:
    """The same margins with their 95 % intervals from ``{scenario: (correct, valid)}`` counts.

    Example:
        >>> m = with_intervals([Margin("K+", "K-", "K", 1.0)], {"K+": (3, 100), "K-": (2, 100)})[0]
        >>> m.ci_low < 0 < m.ci_high, m.significant
        (True, False)
    """
    out = []
    for m in margins:
        ca, cb = counts.get(m.anchor), counts.get(m.weakened)
        ci = None if ca is None or cb is None else difference_interval(ca[0], ca[1], cb[0], cb[1])
        if ci is None:
            out.append(m)
            continue
        lo, hi = 100.0 * ci[0], 100.0 * ci[1]
        if decimals is not None:
            lo, hi = round(lo, decimals) + 0.0, round(hi, decimals) + 0.0
        out.append(Margin(m.anchor, m.weakened, m.factor, m.margin, lo, hi))
    return out


def ratio_intervals(
    counts: dict[str, tuple[int, int]], *, decimals: int | None = 2
) -> dict[str, list[float] | None]:
    """Wilson 95 % intervals of each scenario's leakage ratio, in percentage points.

    Example:
        >>> ratio_intervals({"K+": (0, 10), "K-": (0, 0)})
        {'K+': [0.0, 27.75], 'K-': None}
    """
    out: dict[str, list[float] | None] = {}
    for name, (correct, valid) in counts.items():
        w = wilson_interval(correct, valid)
        if w is None:
            out[name] = None
            continue
        lo, hi = 100.0 * w[0], 100.0 * w[1]
        out[name] = [lo, hi] if decimals is None else [round(lo, decimals) + 0.0, round(hi, decimals) + 0.0]
    return out


def summarise_margins(margins: list[Margin]) -> dict[str, Any]:
    """The verdict fields every margins result carries.

    ``all_nonnegative`` is the paper's check (every calculable margin >= 0);
    ``significant_violations`` counts negative margins whose 95 % interval excludes 0 — the only
    ones that are evidence against the scenario ordering. ``multiplicity_note`` says what the
    intervals do not account for: scenarios share their subjects, while Newcombe's interval assumes
    independent samples, and each interval covers one of ``num_calculable`` comparisons.

    Example:
        >>> s = summarise_margins([Margin("K+", "K-", "K", 1.0), Margin("A+", "A-", "A", None)])
        >>> s["num_calculable"], s["multiplicity_note"][:46]
        (1, 'Each margin interval assumes independent sampl')
    """
    n = sum(m.margin is not None for m in margins)
    return {
        "all_nonnegative": not any(m.violation for m in margins),
        "significant_violations": sum(m.violation and bool(m.significant) for m in margins),
        "num_calculable": n,
        "interval": "95% Wilson (ratios), Newcombe method 10 (margins)",
        "multiplicity_note": (
            "Each margin interval assumes independent samples, but the scenarios probe the same subjects "
            "(their counts are correlated), so the intervals are approximate; each covers one comparison "
            f"at 95 %, not all {n} together: about {0.05 * n:.1f} of {n} margins may exclude 0 by chance."
        ),
    }


def ratios_pp(counts: dict[str, tuple[int, int]], *, decimals: int | None = 2) -> dict[str, float | None]:
    """Leakage ratios in percentage points from ``{scenario: (correct, valid)}``.

    Example:
        >>> ratios_pp({"K+": (1, 3), "K-": (0, 0)})
        {'K+': 33.33, 'K-': None}
    """
    out: dict[str, float | None] = {}
    for name, (correct, valid) in counts.items():
        r = leakage_ratio(correct, valid)
        out[name] = None if r is None else (100.0 * r if decimals is None else round(100.0 * r, decimals))
    return out


def risk_margins(ratios: dict[str, float | None], *, decimals: int | None = 2) -> list[Margin]:
    """Every pair of scenarios differing in exactly one factor, the severe one as anchor.

    ``ratios`` are in percentage points (None for NA). Margins are rounded to ``decimals``
    (the float noise of subtracting two rounded numbers removed); pairs come in Table 3's order.

    Example:
        >>> [(m.anchor, m.weakened, m.margin) for m in risk_margins({"K+A+": 3.5, "K+A-": 3.14, "K-A+": 0.0, "K-A-": None})]
        [('K+A+', 'K+A-', 0.36), ('K+A+', 'K-A+', 3.5), ('K+A-', 'K-A-', None), ('K-A+', 'K-A-', None)]
    """
    parsed = {name: parse_scenario_name(name) for name in ratios}
    by_canon: dict[str, str] = {}
    for name, p in parsed.items():
        c = _canonical(p)
        if c in by_canon:
            raise ConfigError(f"scenario {name!r} appears twice (as {by_canon[c]!r})", field="scenario")
        by_canon[c] = name
    factor_sets = {tuple(a for a, _ in p) for p in parsed.values()}
    if len(factor_sets) > 1:
        raise ConfigError(
            f"scenario names use different factors: {sorted(factor_sets)}",
            field="scenario",
            hint="name every scenario with the same factor letters in the same order",
        )
    names = sorted(ratios, key=lambda n: _order_key(parsed[n]))
    out: list[Margin] = []
    for a in names:
        for w in names:
            diff = [
                i for i, ((_, sa), (_, sw)) in enumerate(zip(parsed[a], parsed[w], strict=True)) if sa != sw
            ]
            if len(diff) != 1 or not parsed[a][diff[0]][1]:
                continue
            ra, rw = ratios[a], ratios[w]
            m = None if ra is None or rw is None else ra - rw
            if m is not None and decimals is not None:
                m = round(m, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0
            out.append(Margin(a, w, parsed[a][diff[0]][0], m))
    return out


def per_generations(count: int, generated: int, per: int = 10_000) -> int:
    """Counts normalised per ``per`` generated documents, rounded half-up (Table 3's "per 10k").

    Example:
        >>> per_generations(10_065, 10_016), per_generations(1_127, 111_968)
        (10049, 101)
    """
    if generated <= 0:
        raise ValueError("generated must be positive")
    return int(count * per / generated + 0.5)


def read_counts(path: str | Path) -> dict[str, dict[str, int]]:
    """Read a counts CSV (columns ``scenario``, ``valid``, ``correct``, optional ``generated``)."""
    path = Path(path)
    if not path.exists():
        raise DataFileError("file not found", path=path)
    rows: dict[str, dict[str, int]] = {}
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields = [c.strip() for c in (reader.fieldnames or [])]
        for need in ("scenario", "valid", "correct"):
            if need not in fields:
                raise DataFileError(
                    f"missing column {need!r} (have {fields})",
                    path=path,
                    line=1,
                    hint="columns: scenario,valid,correct[,generated]",
                )
        for i, raw in enumerate(reader, start=2):
            row = {(k or "").strip(): (v or "").strip() for k, v in raw.items()}
            name = row["scenario"]
            try:
                parse_scenario_name(name)
            except ConfigError as e:
                raise DataFileError(e.reason, path=path, line=i, field="scenario", hint=e.hint) from None
            vals: dict[str, int] = {}
            for col in ("valid", "correct", "generated"):
                if col not in row or (col == "generated" and not row[col]):
                    continue
                try:
                    vals[col] = int(row[col].replace(",", "").replace("_", ""))
                except ValueError:
                    raise DataFileError(
                        f"not an integer: {row[col]!r}", path=path, line=i, field=col
                    ) from None
                if vals[col] < 0:
                    raise DataFileError("counts cannot be negative", path=path, line=i, field=col)
            if vals["correct"] > vals["valid"]:
                raise DataFileError("correct exceeds valid", path=path, line=i, field="correct")
            if name in rows:
                raise DataFileError(f"scenario {name!r} appears twice", path=path, line=i, field="scenario")
            rows[name] = vals
    if not rows:
        raise DataFileError("no rows", path=path)
    return rows


def margins_table(counts: dict[str, dict[str, int]], *, decimals: int | None = 2) -> dict[str, Any]:
    """Ratios (pp), margins and, when ``generated`` is known, Table 3's per-10k counts.

    Returns ``{"ratios": {scenario: pp | None}, "ratio_intervals": {scenario: [lo, hi] | None},
    "margins": [{"anchor", "weakened", "factor", "margin", "violation", "ci_low", "ci_high",
    "significant"}], "per_10k": {scenario: {"correct", "valid"}}, "all_nonnegative": bool,
    "significant_violations": int, ...}``.
    """
    pairs = {n: (c["correct"], c["valid"]) for n, c in counts.items()}
    ratios = ratios_pp(pairs, decimals=decimals)
    margins = with_intervals(risk_margins(ratios, decimals=decimals), pairs, decimals=decimals)
    out: dict[str, Any] = {
        "ratios": ratios,
        "ratio_intervals": ratio_intervals(pairs, decimals=decimals),
        "margins": [m.to_dict() for m in margins],
    }
    per = {
        n: {
            "correct": per_generations(c["correct"], c["generated"]),
            "valid": per_generations(c["valid"], c["generated"]),
        }
        for n, c in counts.items()
        if c.get("generated")
    }
    if per:
        out["per_10k"] = per
    out.update(summarise_margins(margins))
    return out


def margins_from_csv(path: str | Path, *, decimals: int | None = 2) -> dict[str, Any]:
    """:func:`margins_table` of the counts CSV at ``path`` (:func:`read_counts`): ``lmleak kart margins``."""
    return margins_table(read_counts(path), decimals=decimals)
