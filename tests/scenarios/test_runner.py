"""KART runner: prediction files read as normalised pairs, and which scenario is more severe."""

from __future__ import annotations

import json

import pytest

from lmleak.errors import DataFileError
from lmleak.scenarios import scenario_record
from lmleak.scenarios.runner import read_pairs, severity_order, typed_margins
from lmleak.scenarios.types import (
    DPTraining,
    Hipaa,
    Identity,
    Knowledge,
    PublicCorpus,
    Resources,
    Scenario,
    parse_target,
)


def _s(name, **kw):
    rec = scenario_record(**{"attack": "g", "access": "generation", "target": "diseases", **kw})
    return Scenario.from_dict({**rec, "name": name})


def test_pairs_from_csv_and_jsonl_ignore_case_and_spacing(tmp_path):
    (tmp_path / "p.csv").write_text(
        "subject,attribute\n  Ada   Smith ,Asthma\nada smith,asthma\nBo Li,gout\n"
    )
    (tmp_path / "p.jsonl").write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"subject": "ADA SMITH", "attribute": "asthma"},
                {"subject": "bo li", "attribute": "Gout"},
            ]
        )
    )
    want = {("ada smith", "asthma"), ("bo li", "gout")}
    assert read_pairs(tmp_path / "p.csv") == want
    assert read_pairs("p.jsonl", base=tmp_path) == want


def test_a_row_without_an_attribute_names_its_line(tmp_path):
    (tmp_path / "p.csv").write_text("subject,attribute\nAda,asthma\nBo,\n")
    with pytest.raises(DataFileError, match="p.csv:3: field 'attribute'"):
        read_pairs(tmp_path / "p.csv")
    with pytest.raises(DataFileError, match="file not found"):
        read_pairs(tmp_path / "none.csv")


def test_severity_follows_one_factor_at_a_time():
    plain = _s("plain")
    dp1, dp8 = _s("dp1", anonymization="dp:1"), _s("dp8", anonymization="dp:8")
    scores = _s("scores", access="scores")
    assert severity_order(plain, dp8) == ("A", 1)  # no anonymisation leaks at least as much
    assert severity_order(dp8, dp1) == ("A", 1) and severity_order(dp1, dp8) == ("A", -1)
    assert severity_order(scores, plain) == ("R", 1)  # scores imply generation
    assert severity_order(plain, plain) is None
    assert severity_order(scores, dp8) is None  # two factors differ
    margins = typed_margins([plain, dp1, dp8], {"plain": 40.0, "dp1": 5.0, "dp8": 12.5})
    assert sorted((m.anchor, m.weakened, m.factor, m.margin) for m in margins) == [
        ("dp8", "dp1", "A", 7.5),
        ("plain", "dp1", "A", 35.0),
        ("plain", "dp8", "A", 27.5),
    ]


def test_typed_severity_compares_scenarios_without_coded_names():
    base = dict(attack="g", knowledge=Knowledge(("full_name",)), target=parse_target("diseases"))
    a = Scenario(**base, anonymization=Identity(), resources=Resources((PublicCorpus(),), access="fill_mask"))
    b = Scenario(**base, anonymization=Hipaa(), resources=Resources((PublicCorpus(),), access="fill_mask"))
    c = Scenario(**base, anonymization=DPTraining(8), resources=Resources((), access="fill_mask"))
    assert severity_order(a, b) == ("A", 1) and severity_order(b, a) == ("A", -1)
    assert severity_order(b, c) is None  # two factors differ
    k_minus = Scenario(
        "g",
        Knowledge(),
        Identity(),
        Resources((PublicCorpus(),), access="fill_mask"),
        parse_target("full_name,diseases"),
    )
    assert severity_order(a, k_minus) == ("K", 1)  # the paper's K-: the name moves into the target
