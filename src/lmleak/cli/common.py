"""Shared pieces of the CLI: consoles, JSON output, the --quiet switch, offline environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from lmleak import progress
from lmleak.runs import to_json

# The options every area shares, declared once (docs/GLOSSARY.md lists each concept's names).
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or progress messages.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout (nothing else).")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Random seed (same seed, same result).")]
# where a sharded pass runs on Ray (the ledger, probing, membership scoring): one meaning everywhere
RayAddressOpt = Annotated[
    str | None, typer.Option("--ray-address", help="An existing Ray cluster (default: start a local Ray).")
]
NumWorkersOpt = Annotated[
    int, typer.Option("--num-workers", help="Ray model actors (one per worker or GPU).")
]
GpusPerWorkerOpt = Annotated[
    float, typer.Option("--gpus-per-worker", help="GPUs each Ray actor reserves (0: CPU).")
]
OutDirOpt = Annotated[
    Path, typer.Option("--out", help="Run directory (created owner-only; summary.json and results).")
]
ModelOpt = Annotated[
    str,
    typer.Option(
        "--model", "-m", help="Model: lmleak or HF folder, .gguf, smollm2-135m, fake:<corpus.jsonl>, ..."
    ),
]
CorpusOpt = Annotated[
    Path, typer.Option("--corpus", help="Corpus file (JSONL/CSV/Parquet/text; see `lmleak corpus check`).")
]

# Bars and messages go to stderr; results (tables, --json) to stdout.
err = Console(stderr=True)
out = Console()


def offline_environment() -> None:
    """No command may reach the network: switch the hub clients to offline mode."""
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(key, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # transformers' own "Loading weights" tqdm bar wrote carriage-return noise into logs and ignored
    # --quiet; lmleak reports its own progress (lmleak.progress)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # On a shared 2-core machine, spinning OpenMP threads cost 2-30x (ENVIRONMENT.md); must be set
    # before torch is first imported, which the CLI does lazily inside commands.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def quiet(enabled: bool) -> None:
    """Turn progress off for --quiet and --json (never back on: a global --quiet or LMLEAK_QUIET wins)."""
    if enabled:
        progress.set_enabled(False)


def print_json(obj: Any) -> None:
    sys.stdout.write(to_json(obj))
    sys.stdout.flush()


def info(message: str) -> None:
    if progress.enabled():
        err.print(message)
