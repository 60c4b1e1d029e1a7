"""The leakage report's analysis on an in-memory ledger, for the tests that build one by hand."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from lmleak.ledger.ledger import Ledger
from lmleak.report.leakage import ReportConfig, analyse, build_index


def report_from_ledger(
    ledger: Ledger,
    tokenizer: Any,
    config: ReportConfig,
    *,
    public_model: Any | None = None,
    held_out: Collection[str] = (),
) -> tuple[Any, Any, dict[str, Any]]:
    """What :func:`~lmleak.report.leakage.run_report` computes after the ledger pass, with the
    corpus index built from the ledger."""
    return analyse(
        ledger, build_index(ledger), tokenizer, config, public_model=public_model, held_out=held_out
    )
