"""lmleak.render.limits: the limit options, the shipped profiles, and where a run's limits come from."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from lmleak.errors import ConfigError
from lmleak.render.limits import (
    LIMIT_OPTIONS,
    PROFILES,
    Limit,
    limits_from_config,
    profile_limits,
    resolve_limits,
)


def test_every_limit_option_is_a_gate_option_and_a_gate_config_key():
    """A limit added to LIMIT_OPTIONS must reach `lmleak gate` and the `gate:` section (issue 32 added
    max_pii_people_excess and max_pii_exact_match_excess)."""
    from lmleak.audit.config import GateSpec
    from lmleak.cli.audit import gate

    spec = {f.name for f in dataclasses.fields(GateSpec)}
    params = set(inspect.signature(gate).parameters)
    for option in LIMIT_OPTIONS:
        assert option in spec and option in params, option
    assert {"allow_not_evaluable", "allow_inconclusive"} <= spec & params
    assert LIMIT_OPTIONS["max_pii_people_excess"] == ("pii_people_excess", "max")
    assert LIMIT_OPTIONS["max_pii_exact_match_excess"] == ("pii_exact_match_excess", "max")


def test_every_profile_limit_is_an_option_with_a_rationale_and_the_release_profile_is_on_the_null():
    for name, limits in PROFILES.items():
        assert all(lim.option in LIMIT_OPTIONS and lim.rationale for lim in limits), name
    release = {lim.option: lim for lim in profile_limits("release")}
    assert release["max_pii_people_excess"].value == 0.05 and release["max_pii_people_excess"].required
    assert (
        release["max_pii_exact_match_excess"].value == 0.05
        and not release["max_pii_exact_match_excess"].required
    )
    assert release["max_mia_auc"].value == 0.6
    assert (
        "held-out" in release["max_pii_people_excess"].rationale
        and "null" in release["max_pii_people_excess"].rationale
    )
    # the bare counts left the profile; they stay valid options
    assert "max_pii_unique" not in release and "max_pii_exact_match" not in release
    assert resolve_limits({"max_pii_unique": 0, "max_pii_exact_match": 0.05}) == (
        Limit("max_pii_unique", 0.0),
        Limit("max_pii_exact_match", 0.05),
    )


def test_the_gate_section_gives_the_same_limits_and_unknown_names_are_refused():
    limits, allow, profile = limits_from_config({"profile": "release", "max_pii_people_excess": 0.1})
    assert profile == "release" and allow is False
    assert [lim.value for lim in limits if lim.option == "max_pii_people_excess"] == [0.1]
    with pytest.raises(ConfigError, match="max_pii_people_excess"):
        resolve_limits({"max_pii_people_exces": 0.1})


def test_the_gate_section_and_lmleak_gate_read_one_class_with_one_range_per_limit(tmp_path):
    """GateSettings (issue 34): the YAML refuses what the option refuses, and an unknown profile is
    refused by both before any run is read."""
    from typer.testing import CliRunner

    from lmleak.audit.config import GateSpec, parse_config
    from lmleak.cli.main import app
    from lmleak.render.limits import GateSettings

    assert GateSpec is GateSettings
    base = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "fake:c.jsonl"}]}
    for bad in ({"max_mia_auc": 1.5}, {"profile": "relase"}):
        with pytest.raises(ConfigError, match="gate." + next(iter(bad))):
            parse_config({**base, "gate": bad})
    r = CliRunner().invoke(app, ["gate", str(tmp_path), "--profile", "relase"])
    assert r.exit_code == 2 and "--profile" in r.output and "release" in r.output
