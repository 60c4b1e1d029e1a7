"""lmleak.audit.config: parsing, defaults, the suggestions for unknown keys, and the range checks."""

from __future__ import annotations

import pytest
import yaml

from lmleak.audit.config import EXAMPLE, load_config, parse_config
from lmleak.errors import ConfigError


def test_the_new_analyses_parse_with_defaults_and_reject_unknown_keys():
    base = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]}
    cfg = parse_config({**base, "analyses": {"dp_audit": {"m": 64}, "extract": True}})
    assert cfg.analyses.dp_audit.m == 64 and cfg.analyses.dp_audit.confidence == 0.95
    assert cfg.analyses.extract.num_samples == 1000 and cfg.analyses.extract.top_k == 40
    assert parse_config(base).analyses.dp_audit is None
    with pytest.raises(ConfigError, match="num_sample"):
        parse_config({**base, "analyses": {"extract": {"num_sample": 5}}})


def test_the_example_config_parses_and_unknown_keys_get_a_suggestion(tmp_path):
    parse_config(yaml.safe_load(EXAMPLE))
    assert [line for line in EXAMPLE.splitlines() if len(line) > 118] == []
    assert "regex" in EXAMPLE and '"regex"' not in EXAMPLE  # a plain word is written plain
    with pytest.raises(ConfigError, match="Did you mean 'exposure'"):
        parse_config(
            {"corpus": {"path": "c"}, "models": [{"name": "m", "path": "m"}], "analyses": {"exposur": {}}}
        )
    with pytest.raises(ConfigError, match="analyses.report.k"):
        parse_config(
            {
                "corpus": {"path": "c"},
                "models": [{"name": "m", "path": "m"}],
                "analyses": {"report": {"k": "x"}},
            }
        )
    bad = tmp_path / "bad.yaml"
    bad.write_text("corpus: [unclosed\n")
    with pytest.raises(ConfigError, match="bad.yaml"):
        load_config(bad)


BASE = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]}


@pytest.mark.parametrize(
    ("analyses", "field"),
    [
        ({"report": {"k": [1, 0]}}, "analyses.report.k"),
        ({"mia": {"group_size": -1}}, "analyses.mia.group_size"),
        ({"exposure": {"canaries": "c.jsonl", "sample_size": 1}}, "analyses.exposure.sample_size"),
        ({"probe": {"subjects": "s.jsonl", "beams": 0}}, "analyses.probe.beams"),
    ],
)
def test_a_number_out_of_range_names_its_field(analyses, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        parse_config({**BASE, "analyses": analyses})


def test_model_names_must_be_unique_and_membership_parses_without_mia():
    with pytest.raises(ConfigError, match="model names must be unique"):
        parse_config({**BASE, "models": [{"name": "m", "path": "a"}, {"name": "m", "path": "b"}]})
    cfg = parse_config({**BASE, "analyses": {"membership": {"methods": ["zlib"]}}})
    assert cfg.analyses.mia is None and cfg.analyses.membership.methods == ("zlib",)


def test_a_dp_audit_spec_is_checked_when_the_config_loads_and_names_its_field():
    """Issue 25 item 6 for the audit config: `r <= m` and the privacy unit fail at load, not after the
    other stages ran; issue 27: canary people through the config."""
    from lmleak.audit.config import parse_config
    from lmleak.errors import ConfigError

    base = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]}
    with pytest.raises(ConfigError) as e:
        parse_config({**base, "analyses": {"dp_audit": {"m": 8, "r": 100}}})
    assert "analyses.dp_audit" in str(e.value) and "r" in str(e.value)
    with pytest.raises(ConfigError) as e:
        parse_config({**base, "analyses": {"dp_audit": {"privacy_unit": "person"}}})
    assert "analyses.dp_audit.privacy_unit" in str(e.value)
    cfg = parse_config(
        {**base, "analyses": {"dp_audit": {"m": 64, "privacy_unit": "user", "canary_documents": 3}}}
    )
    audit = cfg.analyses.dp_audit  # issue 34: the section is the library's DPAuditSettings
    assert (audit.m, audit.privacy_unit, audit.documents_per_canary) == (64, "user", 3)
