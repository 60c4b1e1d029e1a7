"""KART types: validation, access checks, YAML round trips, review catalogue, describe."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_dp_labels_carry_their_privacy_unit_and_selective_dp_has_its_own():
    from lmleak.errors import ConfigError
    from lmleak.scenarios.types import DPTraining, SelectiveDP, parse_anonymization

    user = parse_anonymization("dp[user]:2.9")
    assert user == DPTraining(2.9, "user") and user.notation() == "DP(ε=2.9 per user)"
    assert parse_anonymization({"kind": "dp", "epsilon": 3, "unit": "sequence"}).to_str() == "dp[sequence]:3"
    assert parse_anonymization("dp:3") == DPTraining(3.0, None)  # a label without a unit still reads
    sdp = parse_anonymization("sdp[user]:8")
    assert isinstance(sdp, SelectiveDP) and not isinstance(sdp, DPTraining)
    assert "detected secrets only" in sdp.notation()
    crt = parse_anonymization("redaction:balanced+dp[user]:2")
    assert (
        crt.to_str() == "redaction:balanced+dp[user]:2"
        and crt.notation() == "DP(ε=2 per user) ∘ f_redact[balanced]"
    )
    for bad in ("dp[person]:3", "redaction[user]:regex", "sdp[user]"):
        with pytest.raises(ConfigError):
            parse_anonymization(bad)


def test_epsilons_of_different_units_are_not_ordered():
    from lmleak.scenarios.runner import _more
    from lmleak.scenarios.types import Knowledge, Resources, Scenario

    def s(a):
        return Scenario("mia", Knowledge(), a, Resources((), access="scores"), "membership")

    assert _more(s("dp[user]:8"), s("dp[user]:1"))["A"] == 1
    assert _more(s("dp[user]:8"), s("dp[sequence]:1"))["A"] == 2  # incomparable
    assert _more(s("sdp[user]:8"), s("dp[user]:1"))["A"] == 2
