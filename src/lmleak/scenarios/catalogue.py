"""The paper's Table 1 (factor examples) and Table 2 (KART review of prior studies) as package data.

Each Table 2 row keeps the cells as printed (``paper``) and the same scenario as a
:class:`~lmleak.scenarios.types.Scenario`, so the review can be filtered and compared by factor
(paper 004 §4). The access kind is not in the paper's table: it is our reading, with its basis.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from lmleak.scenarios.types import Scenario


@dataclass(frozen=True, slots=True)
class ReviewRow:
    """One row of Table 2: the study, the printed cells, and the parsed scenario."""

    study: str
    paper: dict[str, str]
    scenario: Scenario
    access_basis: str


def _load(name: str) -> Any:
    import yaml

    return yaml.safe_load(
        resources.files("lmleak.scenarios").joinpath("data", name).read_text(encoding="utf-8")
    )


@cache
def table1() -> tuple[dict[str, Any], ...]:
    """Table 1 rows: ``factor``, ``value`` (paper notation), ``scenario`` (text), ``parsed``."""
    return tuple(_load("table1.yaml"))


@cache
def review() -> tuple[ReviewRow, ...]:
    """Table 2 as :class:`ReviewRow` values, in the paper's order.

    Example:
        >>> rows = review()
        >>> len(rows), rows[0].study, rows[0].scenario.target.to_str()
        (13, 'Misra (2019)', 'membership')
    """
    rows = []
    for i, r in enumerate(_load("table2.yaml")):
        sc = Scenario.from_dict({**r["scenario"], "name": f"{r['study']} #{i + 1}"}, where="table2.yaml")
        rows.append(ReviewRow(r["study"], dict(r["paper"]), sc, r.get("access_basis", "")))
    return tuple(rows)


def review_records() -> list[dict[str, Any]]:
    """Table 2 as JSON-ready records: the study, the paper's cells, the scenario record, the access basis.

    Example:
        >>> r = review_records()[0]
        >>> r["study"], r["scenario"]["access"]
        ('Misra (2019)', 'scores')
    """
    return [
        {"study": r.study, **r.paper, "scenario": r.scenario.to_record(), "access_basis": r.access_basis}
        for r in review()
    ]
