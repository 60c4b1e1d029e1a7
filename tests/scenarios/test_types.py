"""KART types: validation, access checks, YAML round trips, review catalogue, describe."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from lmleak.errors import CapabilityError, ConfigError
from lmleak.models.base import Capability
from lmleak.scenarios import Scenario, scenario_record
from lmleak.scenarios.spec import dump_scenarios, load_scenarios, load_scenarios_text
from lmleak.scenarios.types import (
    ACCESS_KINDS,
    DPTraining,
    Hipaa,
    Identity,
    Knowledge,
    NonTargetPII,
    OtherModel,
    PublicCorpus,
    Redaction,
    Resources,
    parse_target,
)


def test_an_attack_needing_scores_is_refused_by_a_generation_only_scenario():
    rec = scenario_record(attack="canary_exposure", access="generation", target="canary_secret")
    sc = Scenario.from_dict(rec)
    with pytest.raises(CapabilityError, match="needs 'scores' access.*grants only 'generation'"):
        sc.check_access("scores")
    with pytest.raises(CapabilityError):
        sc.check_access(Capability.SCORE)
    sc.check_access(Capability.GENERATE)  # granted: no error


def test_access_implications_follow_what_each_access_reveals():
    assert Resources(access="weights").grants("scores") and Resources(access="weights").grants("fill_mask")
    assert Resources(access="scores").grants("top_k") and Resources(access="scores").grants("generation")
    assert not Resources(access="top_k").grants("scores") and not Resources(access="generation").grants(
        "top_k"
    )


def test_scenario_record_validates_and_suggests():
    with pytest.raises(ConfigError, match="Did you mean 'scores'"):
        scenario_record(attack="x", access="scroes", target="any")
    with pytest.raises(ConfigError, match="Did you mean 'public_corpus'"):
        scenario_record(attack="x", access="scores", target="any", resources=("public_corpse",))
    with pytest.raises(ConfigError, match="Did you mean 'hipaa'"):
        scenario_record(attack="x", access="scores", target="any", anonymization="hipa")
    with pytest.raises(ConfigError, match="I_K ∩ I_T"):
        scenario_record(attack="x", access="scores", target="full_name,diseases", knowledge=("full_name",))


def test_records_from_other_attacks_are_json_and_read_back():
    rec = scenario_record(
        attack="membership_inference",
        access="scores",
        target="membership",
        knowledge=("candidate_texts",),
        resources=("reference_model",),
        notes="n",
    )
    assert json.loads(json.dumps(rec)) == rec
    back = Scenario.from_dict(rec)
    assert back.to_record() == rec and back.resources.items == (OtherModel("reference_model"),)


_cats = st.lists(st.sampled_from(["full_name", "age", "sex", "address", "phone"]), max_size=3, unique=True)
_anon = st.one_of(
    st.just(Identity()),
    st.just(Hipaa()),
    st.builds(Redaction, st.sampled_from(["regex", "presidio"])),
    st.builds(DPTraining, st.floats(1e-3, 1e4, allow_nan=False)),
)
_res = st.lists(
    st.one_of(
        st.just(PublicCorpus()),
        st.just(OtherModel("public_model")),
        st.builds(NonTargetPII, st.just(("full_name", "diseases"))),
    ),
    max_size=3,
    unique=True,
)


@settings(max_examples=40, deadline=None)
@given(
    k=_cats,
    a=_anon,
    r=_res,
    access=st.sampled_from(ACCESS_KINDS),
    tgt=st.sampled_from(["membership", "any", "diseases"]),
)
def test_scenario_yaml_and_record_round_trip(k, a, r, access, tgt):
    sc = Scenario(
        "attack_x", Knowledge(tuple(k)), a, Resources(tuple(r), access=access), parse_target(tgt), name="s1"
    )
    assert load_scenarios_text(dump_scenarios([sc])) == [sc]
    assert Scenario.from_dict(sc.to_dict()) == sc


def test_yaml_rejects_unknown_keys_with_a_suggestion(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("attack: mia\nknowlege: [full_name]\naccess: scores\ntarget: membership\n")
    with pytest.raises(
        ConfigError, match=r"s.yaml.*unknown scenario key 'knowlege'. Did you mean 'knowledge'"
    ):
        load_scenarios(p)
    p.write_text("scenarios:\n  - attack: mia\n    resources: {acess: scores}\n    target: membership\n")
    with pytest.raises(ConfigError, match="Did you mean 'access'"):
        load_scenarios(p)


def test_review_catalogue_parses_every_row_of_table2_and_table1():
    from lmleak.scenarios.catalogue import review, table1

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


def test_cli_review_and_describe(tmp_path):
    from lmleak.cli.main import app
    from lmleak.runs import write_summary

    r = CliRunner().invoke(app, ["kart", "review", "--json"])
    assert r.exit_code == 0 and len(json.loads(r.stdout)) == 13
    write_summary(tmp_path, {"scenario": scenario_record(attack="tab_attack", access="top_k", target="any")})
    r = CliRunner().invoke(app, ["kart", "describe", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["notation"] == "(∅, id, ∅, I_U)"
    r = CliRunner().invoke(app, ["kart", "describe", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no summary.json" in " ".join(r.output.split())


def test_kart_run_computes_ratios_from_prediction_files(tmp_path):
    from lmleak.cli.main import app

    (tmp_path / "gold.csv").write_text("subject,attribute\nAda Smith,asthma\nBo Li,gout\n")
    (tmp_path / "p1.csv").write_text("subject,attribute\nada smith,asthma\nbo li,asthma\n")
    (tmp_path / "p2.csv").write_text("subject,attribute\nbo li,asthma\n")
    (tmp_path / "s.yaml").write_text(
        "gold: gold.csv\nscenarios:\n"
        "  - {name: K+A+, attack: g, knowledge: [full_name], access: generation, target: diseases, predictions: p1.csv}\n"
        "  - {name: K-A+, attack: g, access: generation, target: [full_name, diseases], predictions: p2.csv}\n"
    )
    r = CliRunner().invoke(app, ["kart", "run", str(tmp_path / "s.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["ratios"] == {"K+A+": 50.0, "K-A+": 0.0}
    (m,) = d["margins"]
    assert {k: m[k] for k in ("anchor", "weakened", "factor", "margin", "violation")} == {
        "anchor": "K+A+",
        "weakened": "K-A+",
        "factor": "K",
        "margin": 50.0,
        "violation": False,
    }
    # 1 of 2 against 0 of 1: far too few predictions for a 50-point margin to mean anything
    assert m["ci_low"] < 0 < m["ci_high"] and m["significant"] is False
    assert d["ratio_intervals"]["K-A+"][0] == 0.0 and d["significant_violations"] == 0


def test_typed_severity_compares_scenarios_without_coded_names():
    from lmleak.scenarios.runner import severity_order

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
