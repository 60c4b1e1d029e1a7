"""Membership inference's one settings class (issue 34): the CLI, the audit YAML and the API read it."""

from __future__ import annotations

import dataclasses

import pytest
import typer

from lmleak.attacks.mia_settings import MembershipSettings, method_options
from lmleak.audit.config import mia_settings, parse_config
from lmleak.cli.main import build_app
from lmleak.errors import ConfigError

BASE = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]}


def test_the_cli_the_yaml_and_the_api_take_the_same_class():
    import lmleak

    assert lmleak.MembershipOptions is MembershipSettings
    cfg = parse_config({**BASE, "analyses": {"mia": {"num_per_side": 50, "samia_samples": 3}}})
    assert cfg.analyses.mia == MembershipSettings(num_per_side=50, samia_samples=3)
    mia = typer.main.get_command(build_app()).commands["mia"]  # type: ignore[attr-defined]
    options = {p.name for p in mia.params}
    cli_fields = {
        f.name for f in dataclasses.fields(MembershipSettings) if f.name not in ("methods", "wbc_windows")
    }
    assert cli_fields <= options  # every field an option, generated (methods/wbc windows: greedy lists)


def test_the_older_membership_section_merges_into_mia_and_mia_wins():
    cfg = parse_config(
        {**BASE, "analyses": {"mia": {"min_k": 0.3}, "membership": {"methods": ["zlib"], "min_k": 0.5}}}
    )
    s = mia_settings(cfg)
    assert s is not None and (s.methods, s.min_k) == (("zlib",), 0.3)


def test_yaml_errors_name_the_key_and_did_you_mean():
    with pytest.raises(ConfigError, match="analyses.mia.num_per_sid.*Did you mean 'num_per_side'"):
        parse_config({**BASE, "analyses": {"mia": {"num_per_sid": 5}}})
    with pytest.raises(
        ConfigError, match="field 'analyses.mia.samia_ngram': must be a whole number >= 1 and <= 2"
    ):
        parse_config({**BASE, "analyses": {"mia": {"samia_ngram": 3}}})


def test_method_options_loads_what_the_settings_name_and_checks_the_models(tmp_path):
    (tmp_path / "p.txt").write_text("one\ntwo\n")
    s = MembershipSettings(methods=("recall", "wbc"), recall_prefix="p.txt", wbc_windows=(2, 4), seed=7)
    with pytest.raises(ConfigError, match="reference"):  # wbc compares with a reference model
        method_options(s, resolve=lambda p: str(tmp_path / p))
    o = method_options(s, reference=object(), resolve=lambda p: str(tmp_path / p))
    assert (o.methods, o.recall_prefix, o.wbc_windows, o.seed, o.samia) == (
        ("recall", "wbc"),
        "one\ntwo\n",
        (2, 4),
        7,
        s.samia(),
    )
