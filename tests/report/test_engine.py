"""report.engine: the local engine is run_report itself; bad engines are refused before any work.

The Ray engine is compared with the local one end to end in tests/scale/test_ray_report.py, the vLLM
engine in tests/models/test_vllm_engine.py.
"""

from __future__ import annotations

import json

import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.errors import ConfigError
from lmleak.models.fake import FakeLM
from lmleak.report.engine import LedgerEngine, run_leakage_report
from lmleak.report.leakage import ReportConfig, run_report
from lmleak.runs import to_json

TEXTS = [
    "alice pays with card 4 4 1 2",
    "the weather is nice today",
    "bob lives at 12 oak road",
    "the weather is nice today",
]


def _corpus() -> Corpus:
    return Corpus([Document(f"u{i % 3}", f"d{i}", t) for i, t in enumerate(TEXTS)])


def test_local_engine_gives_the_report_of_run_report(tmp_path):
    lm, cfg = FakeLM.from_texts(TEXTS), ReportConfig(k=(1, 2))
    run = run_leakage_report(lm, _corpus(), tmp_path / "a", cfg, model="fake-not-a-dir")
    direct = run_report(FakeLM.from_texts(TEXTS), _corpus(), tmp_path / "b", cfg)
    assert run.engine == "local" and run.out_dir == tmp_path / "a"
    assert run.summary["by_k"] == direct["by_k"] and run.summary["num_tokens"] == direct["num_tokens"] > 0
    written = json.loads((tmp_path / "a" / "summary.json").read_text(encoding="utf-8"))
    summary = json.loads(to_json(run.summary))
    assert {k: written[k] for k in summary} == summary  # the file adds the schema fields in front


def test_an_unknown_engine_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ConfigError, match="unknown engine 'spark'"):
        run_leakage_report(
            FakeLM.from_texts(TEXTS),
            _corpus(),
            tmp_path / "run",
            ReportConfig(),
            model="x",
            engine=LedgerEngine("spark"),
        )
    assert not (tmp_path / "run").exists()


def test_leakage_report_from_files_loads_the_spec_and_the_file_like_run_leakage_report(tmp_path):
    from lmleak.data.loaders import load_corpus
    from lmleak.ledger.ledger import ModelSpec
    from lmleak.report.engine import leakage_report_from_files

    path = _corpus().write_jsonl(tmp_path / "corpus.jsonl")
    spec, cfg = f"fake:{path}", ReportConfig(k=(1,))
    said: list[str] = []
    top1 = LedgerEngine(api_top_k=1)
    got = leakage_report_from_files(spec, path, tmp_path / "a", cfg, engine=top1, progress=said.append)
    lm = ModelSpec(spec, api_top_k=1).load()
    want = run_leakage_report(lm, load_corpus(path), tmp_path / "b", cfg, model=spec, engine=top1)
    assert got.summary["by_k"] == want.summary["by_k"] and got.out_dir == tmp_path / "a"
    assert said == [f"report: 4 documents, model {lm.name}, k=[1], engine local"]
    with pytest.raises(ConfigError, match="unknown engine"):
        leakage_report_from_files(spec, path, tmp_path / "c", cfg, engine=LedgerEngine("nope"))


def test_the_standalone_report_on_a_dp_model_writes_what_the_audit_writes(tmp_path):
    """Issue 34: `lmleak report` on a DP model wrote neither users.parquet nor the privacy unit; it
    now writes users.parquet beside the report (the audit's users_of_model over the same stage files)
    and the summary's privacy record and KART A factor from the model's privacy.json."""
    import pandas as pd

    from lmleak.report.users import users_of_model
    from lmleak.scenarios.describe import anonymization_of

    model_dir = tmp_path / "dp-model"
    model_dir.mkdir()
    privacy = {"mode": "dp", "epsilon": 2.9, "delta": 1e-5, "privacy_unit": "user", "sampler": "poisson"}
    (model_dir / "privacy.json").write_text(json.dumps(privacy))
    run = run_leakage_report(
        FakeLM.from_texts(TEXTS), _corpus(), tmp_path / "run", ReportConfig(k=(1,)), model=str(model_dir)
    )
    assert run.summary["privacy"] == {
        "mode": "dp", "dp_epsilon": 2.9, "dp_delta": 1e-5, "privacy_unit": "user", "sampler": "poisson",
    }  # fmt: skip
    assert run.summary["scenario"]["anonymization"] == anonymization_of(model_dir) == "dp[user]:2.9"
    users = pd.read_parquet(tmp_path / "run" / "users.parquet")
    assert sorted(users["user_id"]) == ["u0", "u1", "u2"]  # every user of the corpus a row
    audit = users_of_model(
        tmp_path / "audit", {"report": tmp_path / "run"}, corpus=_corpus(), model_dir=model_dir
    )
    assert audit is not None and pd.read_parquet(tmp_path / "audit" / "users.parquet").equals(users)
    plain = run_report(FakeLM.from_texts(TEXTS), _corpus(), tmp_path / "plain", ReportConfig(k=(1,)))
    assert plain["privacy"] is None and plain["scenario"]["anonymization"] == "identity"
