"""The CI gate: block a release when a headline metric exceeds its limit.

``lmleak gate RUN --max-unique N --max-leakage-epsilon X --max-exposure B --max-mia-auc A`` exits 0
when every given limit holds for every audited model, 1 otherwise. A limit on a metric the run did
not measure fails too (a gate must not pass because a stage was skipped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.render.headline import PER_K, collect_headlines


@dataclass(frozen=True, slots=True)
class GateCheck:
    model: str
    metric: str
    limit: float
    value: float | None

    @property
    def passed(self) -> bool:
        return self.value is not None and self.value <= self.limit

    def describe(self) -> str:
        if self.value is None:
            return f"{self.model}: {self.metric} was not measured (limit {self.limit:g}); run that stage"
        if self.metric.startswith("leakage_epsilon") and self.value > 700:
            return f"{self.model}: {self.metric} = e^{math.log(self.value) if math.isfinite(self.value) else self.value:g} (limit {self.limit:g}) FAILED"
        verdict = "ok" if self.passed else "FAILED"
        return f"{self.model}: {self.metric} = {self.value:g} (limit {self.limit:g}) {verdict}"


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
    checks = []
    for model, headline in collect_headlines(run_dir).items():
        by_k = headline.get("by_k") or {}
        for metric, limit in limits.items():
            if metric in PER_K and by_k:
                for k in sorted(by_k, key=int):
                    checks.append(GateCheck(model, f"{metric} (k={k})", float(limit), _value(by_k[k], metric)))
            else:
                checks.append(GateCheck(model, metric, float(limit), _value(headline, metric)))
    return checks
