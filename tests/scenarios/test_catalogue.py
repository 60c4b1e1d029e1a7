"""Paper 004 review catalogue: Table 2 (prior studies) and Table 1 (the factors), parsed into scenarios."""

from __future__ import annotations

from lmleak.scenarios.catalogue import review, table1
from lmleak.scenarios.types import Identity, parse_target


def test_review_catalogue_parses_every_row_of_table2_and_table1():
    rows = review()
    assert [r.study for r in rows].count("Lehman et al. (2021)") == 5 and len(rows) == 13
    lehman = rows[6].scenario
    assert lehman.knowledge.categories == ("full_name", "sex") and lehman.target.categories == ("diseases",)
    assert all(r.scenario.anonymization == Identity() for r in rows)  # every prior study used a = id
    assert {r["factor"] for r in table1()} == {"K", "A", "R", "T"} and len(table1()) == 10
    for r in table1():
        parsed = r["parsed"]
        if "target" in parsed:
            parse_target(parsed["target"])
