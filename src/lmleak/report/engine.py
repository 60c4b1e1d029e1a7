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
from lmleak.report.leakage import ReportConfig, run_report
from lmleak.runs import secure_dir
from lmleak.words import plural

ENGINES = ("local", "ray", "vllm")


@dataclass(frozen=True, slots=True)
class LedgerEngine:
    """Where the ledger pass runs, and the Ray settings when it runs on Ray.

    Example:
        >>> LedgerEngine("ray", num_workers=4).num_workers
        4
    """

    name: str = "local"
    ray_address: str | None = None
    num_workers: int = 2
    gpus_per_worker: float = 0.0


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
            engine="ray",
            ray_address=engine.ray_address,
            num_workers=engine.num_workers,
            num_gpus_per_worker=engine.gpus_per_worker,
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
    config: ReportConfig,
    *,
    model: str,
    engine: LedgerEngine = LedgerEngine(),
    public_model: str | None = None,
    leave_out_folds: int | None = None,
    allow_pickle: bool = False,
    api_top_k: int | None = None,
) -> ReportRun:
    """The leakage report of ``lm`` (loaded from the spec ``model``) on ``corpus``, into ``out_dir``.

    ``model`` is the spec ``lm`` was loaded from: Ray actors and vLLM load their own copies from it,
    and a model directory is where a fine-tune records its base model (``--public-model base``).
    ``allow_pickle`` and ``api_top_k`` are passed on to the Ray actors' copies.

    Raises:
        ConfigError: an unknown engine, or ``ray`` requested and not installed.
    """
    if engine.name not in ENGINES:
        raise ConfigError(f"unknown engine {engine.name!r}", field="--engine", hint="use local, ray or vllm")
    out = Path(out_dir)
    k = max(config.ks)
    if engine.name == "ray":
        spec = ModelSpec(model, allow_pickle=allow_pickle, api_top_k=api_top_k)
        _ledger_on_ray(lm, spec, corpus, out, k=k, shard_size=config.shard_size, engine=engine)
    elif engine.name == "vllm":
        _ledger_on_vllm(lm, ModelSpec(model), corpus, out, k=k, shard_size=config.shard_size)
    summary = run_report(
        lm,
        corpus,
        out,
        config,
        public_model=public_model,
        model_dir=Path(model) if Path(model).is_dir() else None,
        leave_out_folds=leave_out_folds,
    )
    return ReportRun(out, engine.name, summary)


def _say_nothing(message: str) -> None:
    """The default progress callback of :func:`leakage_report_from_files`."""


def leakage_report_from_files(
    model: str,
    corpus: str | Path,
    out_dir: str | Path,
    config: ReportConfig,
    *,
    engine: LedgerEngine = LedgerEngine(),
    public_model: str | None = None,
    leave_out_folds: int | None = None,
    allow_pickle: bool = False,
    api_top_k: int | None = None,
    progress: Callable[[str], None] = _say_nothing,
) -> ReportRun:
    """``lmleak report``: load the corpus file, then the model spec (a top-k-only black box with
    ``api_top_k``), say what runs through ``progress``, and :func:`run_leakage_report`."""
    data = load_corpus(corpus)
    lm = ModelSpec(model, allow_pickle=allow_pickle, api_top_k=api_top_k).load()
    progress(
        f"report: {plural(len(data), 'document')}, model {getattr(lm, 'name', model)}, k={list(config.ks)}, engine {engine.name}"
    )
    return run_leakage_report(lm, data, out_dir, config, model=model, engine=engine, public_model=public_model,
                              leave_out_folds=leave_out_folds, allow_pickle=allow_pickle, api_top_k=api_top_k)  # fmt: skip
