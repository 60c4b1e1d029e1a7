"""Configs fail fast (issue 16, item 4): alias-bounded YAML and complete validation before any work;
the error names the file, the key and the rule and never echoes an expanded document."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from lmleak.audit.config import load_config
from lmleak.cli.main import app
from lmleak.errors import ConfigError
from lmleak.safe_yaml import MAX_ALIASES, load_yaml

LAUGHS = 'lol: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.fixture()
def project(tmp_path):
    """A config folder whose corpus and model exist (the model folder only needs its marker here)."""
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"text": "hello", "user_id": "u"}) + "\n")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "canaries.jsonl").write_text("")
    return tmp_path


def _write(project, data, name="audit.yaml"):
    p = project / name
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return p


def _base(**analyses):
    return {
        "out": "run",
        "corpus": {"path": "corpus.jsonl"},
        "models": [{"name": "m", "path": "model"}],
        "analyses": analyses or {"report": {"k": [1]}},
    }


def test_a_billion_laughs_fails_fast_without_echoing_the_document(project):
    cfg = _write(project, LAUGHS)
    res = CliRunner().invoke(app, ["audit", str(cfg)])
    assert res.exit_code == 2, res.output
    assert len(res.output) < 400 and res.output.count("lol") == 0, res.output
    assert "audit.yaml" in res.output and "aliases would expand" in res.output
    assert not (project / "run").exists()


def test_too_many_aliases_are_refused_with_their_line():
    doc = "a: &x 1\nb: [" + ", ".join(["*x"] * (MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(ConfigError, match=r"t\.yaml:2: more than 100 YAML aliases"):
        load_yaml(doc, path="t.yaml")
    assert load_yaml("a: &x 1\nb: [*x, *x]") == {"a": 1, "b": [1, 1]}  # a few aliases are fine


def test_yaml_syntax_errors_name_the_line_and_do_not_quote_the_file():
    secret = "555-0100-secret"
    with pytest.raises(ConfigError) as e:
        load_yaml(f"a: 1\nb: [{secret}\nc: 2\n", path="x.yaml")
    assert str(e.value).startswith("x.yaml:") and secret not in str(e.value)


def test_alias_bombs_in_templates_and_scenario_files_fail_too(project):
    from lmleak.probe.templates import load_templates
    from lmleak.scenarios.spec import load_scenarios_text

    with pytest.raises(ConfigError, match="aliases would expand"):
        load_templates(_write(project, LAUGHS, "templates.yaml"))
    with pytest.raises(ConfigError, match="aliases would expand"):
        load_scenarios_text(LAUGHS, path="scen.yaml")


@pytest.mark.parametrize(
    ("analyses", "key", "rule"),
    [
        ({"report": {"k": [0]}}, "analyses.report.k", "k >= 1"),
        ({"report": {"k": [1, -3]}}, "analyses.report.k", "k >= 1"),
        ({"report": {"k": []}}, "analyses.report.k", "empty list"),
        ({"report": {"p": -1}}, "analyses.report.p", "must be a whole number >= 0"),
        ({"report": {"t": -0.5}}, "analyses.report.t", "must be a finite number >= 0"),
        ({"report": {"t": float("nan")}}, "analyses.report.t", "must be a finite number >= 0"),
        ({"report": {"t": float("inf")}}, "analyses.report.t", "must be a finite number >= 0"),
        ({"report": {"public_context_tokens": -1}}, "analyses.report.public_context_tokens", ">= 0"),
        ({"report": {"min_tokens": 0}}, "analyses.report.min_tokens", ">= 1"),
        ({"report": {"k": "x"}}, "analyses.report.k", "expected"),
        ({"report": {"p": 2.5}}, "analyses.report.p", "expected"),
        ({"report": {"k": [True]}}, "analyses.report.k", "expected"),
        ({"mia": {"group_size": -1}}, "analyses.mia.group_size", ">= 0"),
        ({"probe": {"beams": 0, "subjects": "corpus.jsonl"}}, "analyses.probe.beams", ">= 1"),
        ({"probe": {"templates": 0, "subjects": "corpus.jsonl"}}, "analyses.probe.templates", ">= 1"),
        ({"exposure": {"canaries": "missing.jsonl"}}, "analyses.exposure.canaries", "does not exist"),
        ({"probe": {"subjects": "nobody.jsonl"}}, "analyses.probe.subjects", "does not exist"),
        (
            {"mia": {"members": "no.jsonl", "non_members": "corpus.jsonl"}},
            "analyses.mia.members",
            "does not exist",
        ),
    ],
)
def test_every_wrong_value_names_file_key_and_rule_before_any_work(project, analyses, key, rule):
    cfg = _write(project, _base(**analyses))
    with pytest.raises(ConfigError) as e:
        load_config(cfg)
    msg = str(e.value)
    assert msg.startswith(str(cfg)) and f"'{key}'" in msg and rule in msg, msg
    res = CliRunner().invoke(app, ["audit", str(cfg)])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert not (project / "run").exists()  # nothing written: validation comes first


@pytest.mark.parametrize(
    ("change", "key", "rule"),
    [
        ({"corpus": {"path": "nope.jsonl"}}, "corpus.path", "does not exist"),
        ({"models": [{"name": "m", "path": "gone"}]}, "models[0].path", "does not exist"),
        ({"models": [{"name": "m", "path": "."}]}, "models[0].path", "not a model"),
        ({"public_model": "missing-public"}, "public_model", "does not exist"),
        ({"out": "corpus.jsonl"}, "out", "is a file"),
    ],
)
def test_files_and_models_must_exist(project, change, key, rule):
    cfg = _write(project, {**_base(), **change})
    with pytest.raises(ConfigError) as e:
        load_config(cfg)
    assert f"'{key}'" in str(e.value) and rule in str(e.value), str(e.value)


def test_a_valid_config_loads(project):
    cfg = load_config(
        _write(project, _base(report={"k": [1, 3], "t": 0, "p": 0}, exposure={"canaries": "canaries.jsonl"}))
    )
    assert cfg.analyses.report.k == (1, 3) and cfg.analyses.exposure.canaries == "canaries.jsonl"
    assert load_config(_write(project, {**_base(), "public_model": "leave-out"})).public_model == "leave-out"


def test_a_lora_fine_tune_folder_audited_against_its_base_loads(project):
    """What `lmleak demo --base` writes: adapters and the manifest, no config.json; public model `base`."""
    ft = project / "ft"
    ft.mkdir()
    (ft / "lmleak_finetune.json").write_text(json.dumps({"base": "smollm2-135m", "kind": "lora"}))
    (ft / "adapter_config.json").write_text("{}")
    cfg = load_config(
        _write(project, {**_base(), "models": [{"name": "ft", "path": "ft"}], "public_model": "base"})
    )
    assert cfg.public_model == "base" and cfg.models[0].path == "ft"
    (ft / "lmleak_finetune.json").unlink()  # peft adapters alone are a fine-tune folder too
    assert (
        load_config(_write(project, {**_base(), "models": [{"name": "ft", "path": "ft"}]})).models[0].path
        == "ft"
    )


@pytest.mark.parametrize(("flag", "value"), [("--t", "-0.5"), ("--t", "nan"), ("--p", "-1"), ("--k", "0")])
def test_the_report_command_checks_its_ranges_before_loading_anything(tmp_path, flag, value):
    res = CliRunner().invoke(
        app,
        [
            "report",
            "--model",
            str(tmp_path / "no-model"),
            "--corpus",
            str(tmp_path / "none.jsonl"),
            "--out",
            str(tmp_path / "run"),
            flag,
            value,
        ],
    )
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert flag.lstrip("-") in res.output and ">= " in res.output
    assert not (tmp_path / "run").exists()


# every leaf of the audit config, and a value of each YAML type for it
LEAVES = [
    "out",
    "public_model",
    "device",
    "corpus.path",
    "corpus.format",
    "corpus.text_field",
    "corpus.skip_bad_rows",
    "models.0.name",
    "models.0.path",
    "analyses.report.k",
    "analyses.report.t",
    "analyses.report.p",
    "analyses.report.public_context_tokens",
    "analyses.report.public_occurrences",
    "analyses.report.pii_policy",
    "analyses.report.min_tokens",
    "analyses.exposure.canaries",
    "analyses.mia.group_size",
    "analyses.probe.level",
    "analyses.probe.templates",
    "analyses.probe.shots",
    "analyses.probe.beams",
    "analyses.kart",
    "render.show_text",
]


def _with(doc, dotted, value):
    node = doc
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[parts[-1]] = value
    return doc


def test_every_key_with_every_wrong_type_fails_before_any_work_naming_file_and_key(project):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    values = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-5, 5),
        st.floats(allow_nan=True),
        st.text(max_size=6),
        st.lists(st.integers(-2, 3), max_size=3),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    )

    @settings(max_examples=50, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
    @given(leaf=st.sampled_from(LEAVES), value=values)
    def check(leaf, value):
        doc = _with(
            {**_base(), "analyses": {"report": {}, "mia": {}, "probe": {"subjects": "corpus.jsonl"}}},
            leaf,
            value,
        )
        cfg = project / "fuzz.yaml"
        cfg.write_text(yaml.safe_dump(doc))
        try:
            loaded = load_config(cfg)
        except ConfigError as e:
            msg = str(e)
            assert msg.startswith(str(cfg)), msg
            key = leaf.replace(".0.", "[0].")
            assert f"'{key}'" in msg or f"'{key.rsplit('.', 1)[0]}'" in msg, (leaf, value, msg)
            assert "\n" not in msg
        else:  # accepted: then the value is one the stages can use
            assert isinstance(loaded.out, str) and all(
                isinstance(k, int) and k >= 1 for k in loaded.analyses.report.k
            )
        assert not (project / "run").exists()

    check()


# ----------------------------------------------- bad numbers in the library's configs (issue 25 item 6)
NAN, INF = float("nan"), float("inf")


def _configs():
    from lmleak.attacks.dp_audit import DPAuditConfig
    from lmleak.attacks.extraction import ExtractConfig
    from lmleak.attacks.mia_methods import MethodOptions
    from lmleak.report.leakage import ReportConfig
    from lmleak.train.config import TrainConfig
    from lmleak.train.finetune import FinetuneConfig

    return [
        (DPAuditConfig, {"m": 8, "r": 100}, "r"),
        (DPAuditConfig, {"confidence": 1.0}, "confidence"),
        (DPAuditConfig, {"confidence": NAN}, "confidence"),
        (DPAuditConfig, {"delta": -0.1}, "delta"),
        (DPAuditConfig, {"m": 0}, "m"),
        (TrainConfig, {"mode": "dp", "noise_multiplier": NAN}, "noise_multiplier"),
        (TrainConfig, {"mode": "dp", "target_epsilon": INF}, "target_epsilon"),
        (TrainConfig, {"lr": -1.0}, "lr"),
        (TrainConfig, {"max_grad_norm": 0.0}, "max_grad_norm"),
        (TrainConfig, {"target_delta": 1.0}, "target_delta"),
        (TrainConfig, {"holdout_users": NAN}, "holdout_users"),
        (TrainConfig, {"seed": -1}, "seed"),
        (FinetuneConfig, {"base": "b", "mode": "dp", "noise_multiplier": INF}, "noise_multiplier"),
        (FinetuneConfig, {"base": "b", "lora_alpha": NAN}, "lora_alpha"),
        (ExtractConfig, {"p": NAN}, "p"),
        (ExtractConfig, {"temperature_start": 0.0}, "temperature_start"),
        (ExtractConfig, {"top_k": 0}, "top_k"),
        (ReportConfig, {"t": NAN}, "t"),
        (ReportConfig, {"k": (0,)}, "k"),
        (ReportConfig, {"min_tokens": 0}, "min_tokens"),
        (MethodOptions, {"recall_shots": 0}, "recall_shots"),
    ]


@pytest.mark.parametrize("case", range(21))
def test_config_dataclasses_refuse_bad_numbers_when_built(case):
    """A library caller gets the CLI's checks too: the config refuses at construction, before any work."""
    cls, kw, field = _configs()[case]
    with pytest.raises(ConfigError, match=f"field '{field}'"):
        cls(**kw)


def test_there_are_as_many_config_cases_as_parametrized():
    assert len(_configs()) == 21


def test_the_accountants_refuse_nan_at_once_instead_of_looping():
    from lmleak.train.accounting import epsilon_dp_accounting, epsilon_opacus

    for fn in (epsilon_opacus, epsilon_dp_accounting):
        with pytest.raises(ConfigError, match="noise_multiplier"):
            fn(NAN, 0.01, 100, 1e-5)
        with pytest.raises(ConfigError, match="delta"):
            fn(1.0, 0.01, 100, INF)
