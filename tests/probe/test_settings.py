"""Probing's settings (issue 34): one class for ``probe run``, ``analyses.probe`` and the API."""

from __future__ import annotations

import pytest

import lmleak
from lmleak.audit.config import parse_config
from lmleak.errors import ConfigError
from lmleak.probe.settings import ProbeSettings, SoftPromptSettings

BASE = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]}


def test_targets_are_read_from_comma_lists_and_checked():
    assert ProbeSettings(targets=("phone,email", "address")).targets == ("phone", "email", "address")
    with pytest.raises(ConfigError):
        ProbeSettings(targets=("phonee",))
    assert lmleak.ProbeOptions is ProbeSettings


def test_the_older_yaml_spelling_of_a_template_source_is_read():
    cfg = parse_config({**BASE, "analyses": {"probe": {"templates": "mined", "shots": 2, "beams": 1}}})
    p = cfg.analyses.probe
    assert (p.template_file, p.templates, p.beams) == ("mined", 2, 1)
    with pytest.raises(ConfigError, match="analyses.probe.level.*Did you mean 'twin'"):
        parse_config({**BASE, "analyses": {"probe": {"level": "twn"}}})


def test_soft_prompt_settings_check_their_names_before_any_training():
    with pytest.raises(ConfigError, match="unknown init 'wrd'"):
        SoftPromptSettings(init="wrd")
    assert SoftPromptSettings(target="email").target == "email"
