"""Reading the KART scenarios a run recorded, and paper 004's notation of a record."""

from __future__ import annotations

import json

import pytest

from lmleak.errors import RunError
from lmleak.scenarios import scenario_record
from lmleak.scenarios.describe import notation, run_scenarios
from lmleak.scenarios.types import Scenario


def _rec(**kw):
    return scenario_record(
        **{"attack": "membership_inference", "access": "scores", "target": "membership", **kw}
    )


def test_notation_is_the_scenarios_own():
    rec = _rec(knowledge=("candidate_texts",), resources=("reference_model",))
    assert notation({**rec, "notation": "ignored"}) == Scenario.from_dict(rec).notation()


def test_a_run_with_several_scenarios_lists_them_labelled_and_one_scenario_is_run(tmp_path):
    many = tmp_path / "many"
    many.mkdir()
    recs = {"plain": _rec(), "dp": _rec(anonymization="dp:8")}
    (many / "summary.json").write_text(json.dumps({"scenarios": {**recs, "note": "not a record"}}))
    found = run_scenarios(many)
    assert [label for label, _ in found] == ["plain", "dp"]
    assert [s for _, s in found] == [Scenario.from_dict(r) for r in recs.values()]
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"scenario": _rec()}))
    assert run_scenarios(one) == [("run", Scenario.from_dict(_rec()))]


@pytest.mark.parametrize(
    "content,message", [(None, "no summary.json"), ("{", "not valid JSON"), ("{}", "no KART")]
)
def test_runs_without_a_scenario_are_refused(tmp_path, content, message):
    if content is not None:
        (tmp_path / "summary.json").write_text(content)
    with pytest.raises(RunError, match=message):
        run_scenarios(tmp_path)


@pytest.mark.parametrize(
    ("privacy", "expected"),
    [
        ({"mode": "dp", "epsilon": 3.14159}, "dp:3.14"),
        ({"mode": "sdp", "epsilon": 8.0}, "sdp:8"),
        ({"mode": "dp", "epsilon": 2.9, "privacy_unit": "user"}, "dp[user]:2.9"),
        ({"mode": "dp", "epsilon": 2.9, "privacy_unit": "sequence"}, "dp[sequence]:2.9"),
        (
            {"mode": "dp", "epsilon": 1.0, "privacy_unit": "one training sequence (a chunk of one document)"},
            "dp[sequence]:1",
        ),
        ({"mode": "sdp", "epsilon": 8.0, "privacy_unit": "user"}, "sdp[user]:8"),
        ({"mode": "crt", "epsilon": 2.0, "privacy_unit": "user"}, "redaction:balanced+dp[user]:2"),
        ({"mode": "crt", "epsilon": 2.0, "policy": "strict"}, "redaction:strict+dp:2"),
        ({"mode": "crt", "epsilon": 2.0}, "redaction:balanced+dp:2"),
        ({"mode": "dp", "epsilon": None}, "identity"),
        ({"mode": "nodp", "epsilon": None}, "identity"),
    ],
)
def test_the_a_factor_comes_from_the_models_privacy_json(tmp_path, privacy, expected):
    from lmleak.scenarios.describe import anonymization_of
    from lmleak.scenarios.types import parse_anonymization

    (tmp_path / "privacy.json").write_text(json.dumps(privacy))
    assert anonymization_of(tmp_path) == expected
    assert anonymization_of(str(tmp_path)) == expected
    assert parse_anonymization(expected).to_str() == expected  # the label reads back as written


def test_no_folder_or_no_privacy_json_is_identity(tmp_path):
    from lmleak.scenarios.describe import anonymization_of

    assert anonymization_of(None) == "identity"
    assert anonymization_of(tmp_path) == "identity"


def test_describe_run_records_each_labelled_scenario_with_its_notation(tmp_path):
    from lmleak.scenarios.describe import describe_run

    recs = {"plain": _rec(), "dp": _rec(anonymization="dp:8")}
    (tmp_path / "summary.json").write_text(json.dumps({"scenarios": recs}))
    res = describe_run(tmp_path)
    assert res.run == str(tmp_path) and list(res.scenarios) == run_scenarios(tmp_path)
    assert res.records() == [
        {
            "label": lab,
            "notation": Scenario.from_dict(r).notation(),
            "scenario": Scenario.from_dict(r).to_record(),
        }
        for lab, r in recs.items()
    ]
    with pytest.raises(RunError):
        describe_run(tmp_path / "missing")
