"""Scenario files: defaults, runner fields, and one-line errors naming the file and the key."""

from __future__ import annotations

import pytest

from lmleak.errors import ConfigError
from lmleak.scenarios.spec import dump_scenarios, load_entries, load_scenarios, load_scenarios_text

TWO = """
defaults:
  attack: kart
  access: scores
  target: [diseases]
gold: gold.jsonl
scenarios:
  - name: plain
    knowledge: [full_name]
    predictions: plain.jsonl
  - name: dp
    anonymization: "dp:8"
    knowledge: [full_name, age]
    predictions: dp.jsonl
"""


def test_defaults_fill_each_scenario_and_runner_fields_are_split_off():
    entries, top = load_entries(TWO, runner=True)
    assert top == {
        "defaults": {"attack": "kart", "access": "scores", "target": ["diseases"]},
        "gold": "gold.jsonl",
    }
    assert [(s.name, s.attack, s.resources.access, extra) for s, extra in entries] == [
        ("plain", "kart", "scores", {"predictions": "plain.jsonl"}),
        ("dp", "kart", "scores", {"predictions": "dp.jsonl"}),
    ]
    assert entries[1][0].knowledge.categories == ("full_name", "age")
    assert load_scenarios_text(dump_scenarios([s for s, _ in entries])) == [s for s, _ in entries]


def test_without_runner_mode_a_runner_field_is_an_unknown_key():
    with pytest.raises(ConfigError, match="scenario plain"):
        load_entries(TWO)


def test_a_single_mapping_is_one_scenario():
    (s,) = load_scenarios_text("attack: mia\naccess: scores\ntarget: membership\n")
    assert s.attack == "mia" and s.name is None


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "empty scenario file"),
        ("- 1\n- 2\n", "must be a mapping"),
        ("scenarios: []\n", "non-empty list"),
        ("scenarios: [1]\n", "scenario #1 must be a mapping"),
        ("scenarioz: []\nscenarios: [{attack: a, access: scores, target: any}]\n", "unknown top-level key"),
        (
            "scenarios:\n  - {name: a, attack: x, access: scores, target: any}\n"
            "  - {name: a, attack: y, access: scores, target: any}\n",
            r"duplicate scenario names \['a'\]",
        ),
    ],
)
def test_bad_files_are_refused_naming_the_file(text, message):
    with pytest.raises(ConfigError, match=message) as e:
        load_scenarios_text(text, path="s.yaml")
    assert "s.yaml" in str(e.value)


def test_files_missing_or_not_utf8(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_scenarios(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"attack: caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_scenarios(bad)
