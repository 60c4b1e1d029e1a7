"""The curated public API (issues 17, 29): the exact exported names, each typed result's fields, and
a round trip on a tiny corpus in which every result's ``summary`` is the ``summary.json`` on disk.

Adding a public name or a result field is a deliberate act: it changes the sets pinned here.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import lmleak
import lmleak.api
from lmleak.cli.main import build_app
from lmleak.errors import ConfigError
from lmleak.settings import META, meta_of

EXPORTED = {
    "__version__",
    # the five analyses, one naming scheme: run_<analysis>(...) -> <Analysis>Result
    "run_audit",
    "run_report",
    "run_exposure",
    "run_membership",
    "run_probe",
    "AuditResult",
    "ReportResult",
    "ExposureResult",
    "MembershipResult",
    "ProbeResult",
    # their settings
    "AuditConfig",
    "ReportConfig",
    "ExposureOptions",
    "MembershipOptions",
    "ProbeOptions",
    # inputs
    "load_model",
    "load_corpus",
    "read_subjects",
    "Corpus",
    "Document",
    "LanguageModel",
    "Capability",
    "require",
    # errors
    "LmleakError",
    "InputError",
    "ModelError",
    "CapabilityError",
}

#: every result's fields, in order (``summary`` and ``run_dir`` first: RunResult)
RESULT_FIELDS = {
    "ReportResult": ("summary", "run_dir", "sequences", "occurrences"),
    "ExposureResult": ("summary", "run_dir", "exposure", "placebo_exposure", "canaries"),
    "MembershipResult": ("summary", "run_dir", "scores", "metrics", "roc"),
    "ProbeResult": ("summary", "run_dir", "likelihoods", "generations"),
    "AuditResult": ("summary", "run_dir", "report_html", "headlines", "stage_dirs", "verdict"),
}

OPTION_FIELDS = {
    "ExposureOptions": (  # lmleak.attacks.exposure.ExposureSettings; corpus_texts is run_exposure's
        "alphabet",
        "extrapolate",
        "sample_size",
        "max_candidates",
        "seed",
        "placebos",
        "canary_design",
    ),
    # the settings of `lmleak mia` (issue 34): the loaded reference/mlm and the users are run_membership keywords
    "MembershipOptions": (
        "members",
        "non_members",
        "corpus",
        "benchmark",
        "data",
        "benchmark_subset",
        "field",
        "num_per_side",
        "group_size",
        "num_groups",
        "methods",
        "reference",
        "min_k",
        "mlm",
        "recall_prefix",
        "recall_shots",
        "neighbours",
        "wbc_windows",
        "rmia_population",
        "rmia_offline_a",
        "rmia_references",
        "rmia_gamma",
        "samia_samples",
        "samia_prefix_share",
        "samia_max_new_tokens",
        "samia_temperature",
        "samia_top_k",
        "samia_ngram",
        "blind",
        "n_boot",
        "seed",
    ),
    "ProbeOptions": (  # issue 34: lmleak.probe.settings.ProbeSettings, the CLI's and the YAML's fields
        "targets",
        "level",
        "templates",
        "template_file",
        "beams",
        "samples",
        "generate",
        "likelihood",
        "made_up",
        "max_new_tokens",
        "limit",
        "seed",
        "figures",
        "subjects",
    ),
}


def test_the_exported_names_are_exactly_the_pinned_ones_and_each_resolves_documented():
    assert set(lmleak.__all__) == EXPORTED
    assert set(lmleak._EXPORTS) == EXPORTED - {"__version__"}  # every export resolvable, none unlisted
    assert sorted(lmleak.__all__) == lmleak.__all__ and dir(lmleak) == lmleak.__all__
    for name in lmleak.__all__:
        obj = getattr(lmleak, name)
        if callable(obj):
            assert inspect.getdoc(obj), f"{name} has no docstring"


def test_every_run_function_returns_its_typed_result():
    for analysis in ("audit", "report", "exposure", "membership", "probe"):
        fn = getattr(lmleak, f"run_{analysis}")
        assert fn.__module__ == "lmleak.api"
        hint = inspect.signature(fn).return_annotation
        assert hint == f"{analysis.capitalize()}Result", (analysis, hint)
        assert re.search(r"Returns:\s+:class:`", inspect.getdoc(fn) or ""), (
            f"run_{analysis} documents no result"
        )


def test_each_result_and_option_type_is_a_frozen_dataclass_with_the_pinned_fields():
    for name, fields in {**RESULT_FIELDS, **OPTION_FIELDS}.items():
        cls = getattr(lmleak, name)
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name
        assert tuple(f.name for f in dataclasses.fields(cls)) == fields, name
        doc = inspect.getdoc(cls) or ""
        helps = {  # a settings class documents each field by its help line (lmleak.settings.setting)
            f.name: meta_of(f).help for f in dataclasses.fields(cls) if META in f.metadata
        }
        for f in fields:  # each field named in the class's or RunResult's Attributes, or with its help
            documented = f in doc or f in (inspect.getdoc(lmleak.api.RunResult) or "") or bool(helps.get(f))
            assert documented, f"{name}.{f} undocumented"
        if name in RESULT_FIELDS:
            assert issubclass(cls, lmleak.api.RunResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        lmleak.MembershipOptions().seed = 1  # type: ignore[misc]


def test_no_module_is_callable_and_none_swaps_its_class():
    import lmleak.audit

    assert type(lmleak.audit) is types.ModuleType and not callable(lmleak.audit)
    assert lmleak.audit.audit.__doc__ and "old name" in lmleak.audit.audit.__doc__
    src = Path(lmleak.__file__).parent
    swaps = [
        p.name for p in src.rglob("*.py") if re.search(r"modules\[[^]]+\]\.__class__\s*=", p.read_text())
    ]
    assert swaps == []


def _on_disk(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / "summary.json").read_text())


def test_the_public_api_runs_every_analysis_on_a_tiny_corpus_and_each_summary_is_the_file(tmp_path):
    from lmleak import (
        ExposureOptions,
        MembershipOptions,
        ProbeOptions,
        load_corpus,
        load_model,
        run_audit,
        run_exposure,
        run_membership,
        run_probe,
        run_report,
    )
    from lmleak.data.synth.customersim import synthesize

    paths = synthesize(tmp_path / "data", users=6, dialogs_per_user=2, seed=1, canaries=1, canary_repeats=3)
    corpus = load_corpus(paths["corpus"])
    model = load_model(f"fake:{paths['corpus']}")

    report = run_report(model, corpus, tmp_path / "report")
    assert report.summary == _on_disk(tmp_path / "report") and report.summary_path.exists()
    assert report.run_dir == tmp_path / "report" and report.occurrences.exists()
    seqs = pd.read_parquet(report.sequences)
    # the fake model memorises its corpus, so it leaks; the headline counts the parquet's unique rows
    assert report.summary["num_documents"] == len(corpus)
    assert report.summary["unique_sequences"] == int((seqs.loc[seqs["k"] == 1, "users_in_d"] == 1).sum()) > 0

    exposure = run_exposure(
        model, paths["canaries"], tmp_path / "exposure", ExposureOptions(max_candidates=10_000)
    )
    assert exposure.summary == _on_disk(tmp_path / "exposure")
    table = pd.read_parquet(exposure.exposure)
    assert exposure.summary["num_canaries"] == len(exposure.canaries) == len(table) == 1
    assert exposure.summary["max_exposure"] == pytest.approx(table["exposure_bits"].max())
    assert exposure.placebo_exposure is not None and len(pd.read_parquet(exposure.placebo_exposure)) >= 1

    texts = [d.text for d in corpus]
    non = ["a text the model never saw number " + str(i) for i in range(6)]
    mia = run_membership(model, texts[:6], non, tmp_path / "mia", MembershipOptions(group_size=0, n_boot=50))
    assert mia.summary == _on_disk(tmp_path / "mia") and mia.summary["intervals"]["n_boot"] == 50
    assert mia.auc == mia.summary["mia_auc"] and 0.0 <= mia.auc <= 1.0
    assert mia.auc_ci is None or tuple(mia.summary["mia_auc_ci"]) == mia.auc_ci
    scores = pd.read_parquet(mia.scores)
    assert len(scores) == 12 and mia.metrics.exists() and mia.roc.exists()

    subjects = [json.loads(line) for line in paths["subjects"].read_text().splitlines()][:2]
    probe = run_probe(
        model,
        subjects,
        tmp_path / "probe",
        ProbeOptions(targets=("email",), templates=1, beams=1, figures=False),
    )
    assert probe.summary == _on_disk(tmp_path / "probe") and probe.summary["subjects"] == 2
    assert probe.generations is not None and len(pd.read_parquet(probe.generations)) == 2

    cfg = tmp_path / "audit.yaml"
    cfg.write_text(
        f"out: {tmp_path / 'audit'}\ncorpus: {{path: {paths['corpus']}}}\n"
        f"models: [{{name: m, path: 'fake:{paths['corpus']}'}}]\nanalyses: {{report: {{k: [1]}}}}\n"
        "gate: {max_unique: 0}\n"
    )
    audit = run_audit(cfg)
    assert audit.summary == _on_disk(tmp_path / "audit") and audit.report_html.exists()
    assert audit.headlines == {"m": audit.summary["models"]["m"]["headline"]}
    assert audit.stage_dirs == {"m": {"report": tmp_path / "audit" / "models" / "m" / "report"}}
    stage = _on_disk(audit.stage_dirs["m"]["report"])
    assert audit.headlines["m"]["unique_sequences"] == stage["unique_sequences"]
    # the verdict under the config's gate: the fake model leaks, so max_unique 0 fails, as `lmleak gate` says
    assert audit.verdict is not None and not audit.verdict.passed
    [check] = [c for c in audit.verdict.checks if c.metric.startswith("unique_sequences")]
    assert (check.model, check.value, check.verdict) == ("m", stage["unique_sequences"], "fail")
    gate = CliRunner().invoke(build_app(), ["gate", str(audit.run_dir)])
    assert gate.exit_code == 1


def test_options_refuse_a_string_where_names_belong_before_any_work(tmp_path):
    from lmleak import MembershipOptions, ProbeOptions, run_membership, run_probe

    with pytest.raises(ConfigError, match="targets"):
        run_probe(object(), [], tmp_path / "p", ProbeOptions(targets="email"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="methods"):
        run_membership(object(), ["a"], ["b"], tmp_path / "m", MembershipOptions(methods="zlib"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="users"):
        run_membership(object(), ["a"], ["b"], tmp_path / "m", users=(["u"], []))
    with pytest.raises(ConfigError, match="Did you mean .zlib."):
        MembershipOptions(methods=("zlibb",))
    assert not (tmp_path / "p").exists() and not (tmp_path / "m").exists()


def test_importing_the_errors_does_not_import_torch():
    code = "import sys, lmleak, lmleak.errors, lmleak.cli.common; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
