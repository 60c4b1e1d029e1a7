"""``lmleak report`` end to end: the ledger pass on the chosen engine, then the report (paper 001).

The local engine lets :func:`~lmleak.report.leakage.run_report` build the ledger in-process. The
Ray and vLLM engines run the ledger pass first into ``out_dir/ledger``; ``run_report`` then finds
it complete and reuses it (same model, corpus and settings give the same fingerprint).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Corpus
from lmleak.data.loaders import load_corpus
from lmleak.errors import ConfigError
from lmleak.ledger.ledger import ModelSpec, run_ledger_pass
from lmleak.report.leakage import ReportSettings, never_seen_null, run_report
from lmleak.report.redaction import redactor_from
from lmleak.report.settings import LedgerEngine
from lmleak.report.users import users_beside
from lmleak.runs import secure_dir
from lmleak.shards import ShardEngine
from lmleak.words import plural


@dataclass(frozen=True, slots=True)
class ReportRun:
    """A finished report: where it was written, the engine of its ledger pass, and its summary
    (the content of ``out_dir/summary.json``)."""

    out_dir: Path
    engine: str
    summary: dict[str, Any]


def _ledger_on_ray(
    lm: Any, spec: ModelSpec, corpus: Corpus, out_dir: Path, *, k: int, shard_size: int, engine: LedgerEngine
) -> None:
    try:
        import ray  # lazy: an optional, heavy dependency needed by --engine ray only
    except ImportError:
        raise ConfigError(
            "--engine ray needs the 'ray' package",
            field="--engine",
            hint="pip install ray, or use --engine local",
        ) from None
    started = not ray.is_initialized()
    secure_dir(out_dir)
    try:
        run_ledger_pass(
            lm,
            corpus,
            out_dir,
            k=k,
            shard_size=shard_size,
            engine=ShardEngine("ray", engine.ray_address, engine.num_workers, engine.gpus_per_worker),
            model_spec=spec,
        )
    finally:
        if started and ray.is_initialized():
            ray.shutdown()


def _ledger_on_vllm(
    lm: Any, spec: ModelSpec, corpus: Corpus, out_dir: Path, *, k: int, shard_size: int
) -> None:
    secure_dir(out_dir)
    run_ledger_pass(lm, corpus, out_dir, k=k, shard_size=shard_size, engine="vllm", model_spec=spec)


def run_leakage_report(
    lm: Any,
    corpus: Corpus,
    out_dir: str | Path,
    config: ReportSettings,
    *,
    model: str,
    engine: LedgerEngine = LedgerEngine(),
    public_model: str | None = None,
    never_seen: Corpus | None = None,
) -> ReportRun:
    """The leakage report of ``lm`` (loaded from the spec ``model``) on ``corpus``, into ``out_dir``,
    and ``users.parquet`` beside it (risk per person, :mod:`lmleak.report.users`; its record the
    summary's ``users``), as an audit writes. ``never_seen``: people the model never saw, the null of
    leaked PII when the model holds out none of the corpus's users (:func:`never_seen_null`).

    ``model`` is the spec ``lm`` was loaded from: Ray actors and vLLM load their own copies from it
    (with ``engine``'s ``allow_pickle`` and ``api_top_k``), and a model directory is where a
    fine-tune records its base model (``--public-model base``) and a DP model its guarantee.

    Raises:
        ConfigError: a redacted report on Ray, or ``ray`` requested and not installed.
    """
    if config.redact and engine.engine == "ray":
        raise ConfigError(
            "a redacted report builds its ledger outside the run, on the local engine",
            field="--engine",
            hint="drop --engine ray, or run without --redact",
        )
    out = Path(out_dir)
    model_dir = Path(model) if Path(model).is_dir() else None
    # one key for the report's ids and users.parquet's (a random one is discarded after the run)
    redactor = redactor_from(config.redact_key_file, run_dir=out) if config.redact else None
    k = max(config.k)
    if engine.engine == "ray":
        _ledger_on_ray(lm, engine.spec(model), corpus, out, k=k, shard_size=config.shard_size, engine=engine)
    elif engine.engine == "vllm":
        _ledger_on_vllm(lm, ModelSpec(model), corpus, out, k=k, shard_size=config.shard_size)
    summary = run_report(
        lm,
        corpus,
        out,
        config,
        public_model=public_model,
        model_dir=model_dir,
        redactor=redactor,
        never_seen=never_seen_null(model_dir, corpus, never_seen),  # as the audit's report stage
    )
    summary = users_beside(
        out, "report", corpus=corpus, model_dir=model_dir, redactor=redactor, redacted=config.redact
    )
    return ReportRun(out, engine.engine, summary)


def _say_nothing(message: str) -> None:
    """The default progress callback of :func:`leakage_report_from_files`."""


def leakage_report_from_files(
    model: str,
    corpus: str | Path,
    out_dir: str | Path,
    config: ReportSettings,
    *,
    engine: LedgerEngine = LedgerEngine(),
    public_model: str | None = None,
    never_seen: str | Path | None = None,
    progress: Callable[[str], None] = _say_nothing,
) -> ReportRun:
    """``lmleak report``: load the corpus file (and ``never_seen``, a corpus of people the model never
    saw), then the model spec (a top-k-only black box with ``engine.api_top_k``), say what runs
    through ``progress``, and :func:`run_leakage_report`."""
    data = load_corpus(corpus)
    people = load_corpus(never_seen) if never_seen is not None else None
    lm = engine.spec(model).load()
    progress(
        f"report: {plural(len(data), 'document')}, model {getattr(lm, 'name', model)}, k={list(config.k)}, engine {engine.engine}"
    )
    return run_leakage_report(
        lm, data, out_dir, config, model=model, engine=engine, public_model=public_model, never_seen=people
    )
