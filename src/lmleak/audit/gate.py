"""The CI gate: block a release when a headline metric exceeds its limit.

``lmleak gate RUN --max-unique N --max-leakage-epsilon X --max-exposure B --max-mia-auc A`` exits 0
when every given limit holds for every audited model, 1 otherwise. A limit on a metric the run did
not measure fails too (a gate must not pass because a stage was skipped).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lmleak.audit.headline import collect_headlines


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
        verdict = "ok" if self.passed else "FAILED"
        return f"{self.model}: {self.metric} = {self.value:g} (limit {self.limit:g}) {verdict}"


def check_gate(run_dir: str | Path, limits: dict[str, float]) -> list[GateCheck]:
    """One check per (model, limited metric).

    Example:
        >>> import tempfile, json, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "summary.json").write_text(json.dumps({"unique_sequences": 4}))
        >>> [c.passed for c in check_gate(d, {"unique_sequences": 3, "max_exposure": 10})]
        [False, False]
    """
    checks = []
    for model, headline in collect_headlines(run_dir).items():
        for metric, limit in limits.items():
            value = headline.get(metric)
            checks.append(GateCheck(model, metric, float(limit), None if value is None else float(value)))
    return checks
