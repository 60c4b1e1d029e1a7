"""The CI gate: block a release when a headline metric exceeds its limit.

``lmleak gate RUN --max-unique N --max-leakage-epsilon X --max-exposure B --max-mia-auc A`` exits 0
when every given limit holds for every audited model, 1 otherwise. A limit on a metric the run did
not measure fails too (a gate must not pass because a stage was skipped).

The one-run DP audit (issue 20) adds two checks. Wherever a run measured ``epsilon_lower_bound``
for a model that claims a DP ``ε``, the gate checks the claim itself: it fails when the measured
lower bound exceeds the claimed ε (the DP guarantee is then refuted at the audit's confidence),
whatever limits were given. ``--min-epsilon-lower-bound X`` is a floor, not a ceiling: it fails
when the bound is *below* X, and it applies to the models that claim no DP (plain-trained controls,
on which the audit must show its power: a weak audit proves nothing); a positive floor fails a run
without such a model, and ``--min-epsilon-lower-bound 0`` on a DP model's run checks only its claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.audit.provenance import refuse_changed_inputs
from lmleak.render.headline import PER_K, collect_headlines
from lmleak.runs import check_run


@dataclass(frozen=True, slots=True)
class GateCheck:
    model: str
    metric: str
    limit: float
    value: float | None
    direction: str = "max"  # "max": value <= limit passes; "min": value >= limit passes

    @property
    def passed(self) -> bool:
        if self.value is None:
            return False
        return self.value >= self.limit if self.direction == "min" else self.value <= self.limit

    def to_dict(self) -> dict[str, Any]:
        """The check in ``lmleak gate --json``: ``model, metric, limit, value, passed``."""
        return {"model": self.model, "metric": self.metric, "limit": self.limit, "value": self.value,
                "passed": self.passed}  # fmt: skip

    def describe(self) -> str:
        if self.value is None:
            return f"{self.model}: {self.metric} was not measured (limit {self.limit:g}); run that stage"
        if self.metric.startswith("leakage_epsilon") and self.value > 700:
            return f"{self.model}: {self.metric} = e^{math.log(self.value) if math.isfinite(self.value) else self.value:g} (limit {self.limit:g}) FAILED"
        verdict = "ok" if self.passed else "FAILED"
        kind = "floor" if self.direction == "min" else "limit"
        return f"{self.model}: {self.metric} = {self.value:g} ({kind} {self.limit:g}) {verdict}"


def _value(headline: dict[str, Any], metric: str) -> float | None:
    """A metric's value for the gate; leakage ε from its logarithm, so one too large for a float is
    +inf (fails every limit) rather than missing."""
    if metric == "leakage_epsilon" and headline.get("log_leakage_epsilon") is not None:
        x = float(headline["log_leakage_epsilon"])
        return math.inf if x > 709 else math.exp(x)
    value = headline.get(metric)
    return None if value is None else float(value)


def check_gate(run_dir: str | Path, limits: dict[str, float]) -> list[GateCheck]:
    """One check per (model, limited metric) — per (model, metric, k) for the report's metrics, so
    the verdict covers every k of the run, in any order.

    Example:
        >>> import tempfile, json, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "summary.json").write_text(json.dumps({"unique_sequences": 4}))
        >>> [c.passed for c in check_gate(d, {"unique_sequences": 3, "max_exposure": 10})]
        [False, False]
    """
    check_run(run_dir)
    checks = []
    for model, headline in collect_headlines(run_dir).items():
        by_k = headline.get("by_k") or {}
        if headline.get("epsilon_lower_bound") is not None and headline.get("dp_epsilon") is not None:
            checks.append(
                GateCheck(
                    model,
                    "epsilon_lower_bound <= claimed dp_epsilon",
                    float(headline["dp_epsilon"]),
                    float(headline["epsilon_lower_bound"]),
                )
            )
        for metric, limit in limits.items():
            if metric == "min_epsilon_lower_bound":
                if (
                    headline.get("dp_epsilon") is None
                ):  # the floor is for controls; a DP model has its claim check
                    checks.append(
                        GateCheck(
                            model,
                            "epsilon_lower_bound",
                            float(limit),
                            _value(headline, "epsilon_lower_bound"),
                            direction="min",
                        )
                    )
            elif metric in PER_K and by_k:
                for k in sorted(by_k, key=int):
                    checks.append(
                        GateCheck(model, f"{metric} (k={k})", float(limit), _value(by_k[k], metric))
                    )
            else:
                checks.append(GateCheck(model, metric, float(limit), _value(headline, metric)))
    floor = limits.get("min_epsilon_lower_bound")
    if floor is not None and floor > 0 and not any(c.direction == "min" for c in checks):
        # every model claims DP: nothing shows the audit's power, and a floor must not pass silently
        checks.append(
            GateCheck(
                "(none)",
                "epsilon_lower_bound of a model without a DP claim",
                float(limits["min_epsilon_lower_bound"]),
                None,
                direction="min",
            )
        )
    return checks


@dataclass(frozen=True, slots=True)
class GateResult:
    """Every check of a release gate; it passes when every check does."""

    checks: tuple[GateCheck, ...]

    @property
    def failed(self) -> list[GateCheck]:
        return [c for c in self.checks if not c.passed]

    @property
    def passed(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        """``lmleak gate --json``: ``{"passed": bool, "checks": [...]}``."""
        return {"passed": self.passed, "checks": [c.to_dict() for c in self.checks]}


def run_gate(
    run_dir: str | Path,
    limits: dict[str, float],
    *,
    allow_changed: bool = False,
    echo: Callable[[str], None] | None = None,
) -> GateResult:
    """:func:`check_gate` as one result (``lmleak gate``), refused when the run's model or corpus files
    changed since it was written (:mod:`lmleak.audit.provenance`; ``allow_changed`` overrides and
    says each change through ``echo``).

    Example:
        >>> import tempfile, json, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "summary.json").write_text(json.dumps({"unique_sequences": 4}))
        >>> r = run_gate(d, {"unique_sequences": 5})
        >>> r.passed, r.to_dict()["checks"][0]["value"]
        (True, 4.0)
    """
    checks = tuple(check_gate(run_dir, limits))
    refuse_changed_inputs(run_dir, allow_changed=allow_changed, echo=echo)
    return GateResult(checks)
