"""One default per concept: ``lmleak report``'s options, the audit config's ``report:`` section and
:class:`lmleak.report.leakage.ReportConfig` agree on the values they share."""

from __future__ import annotations

import dataclasses

import typer

from lmleak.audit.config import ReportSpec
from lmleak.cli.main import app
from lmleak.report.leakage import ReportConfig


def _cli_defaults(name: str) -> dict[str, object]:
    cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {p.name: p.default for p in cmd.params}


def test_report_cli_audit_config_and_library_share_their_defaults():
    cli = _cli_defaults("report")
    lib = {f.name: f.default for f in dataclasses.fields(ReportConfig)}
    spec = {f.name: f.default for f in dataclasses.fields(ReportSpec)}
    for key in ("t", "p", "public_occurrences", "pii_policy", "min_tokens", "public_context_tokens"):
        assert cli[key] == lib[key] == spec[key], key
    assert lib["p"] == 5
