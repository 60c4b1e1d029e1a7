"""Audit a model from Python: the leakage report and membership inference, then the headlines.

    python examples/audit_in_python.py MODEL CORPUS [OUT]

MODEL is what ``lmleak.load_model`` reads (a Hugging Face folder, a model ``lmleak train`` wrote,
a .gguf file, smollm2-135m); CORPUS its training data (JSONL with ``user_id`` and ``text``). The
run goes to OUT (default ``audit-run``); ``OUT/report.html`` is the report to open.

Membership inference needs texts the model never saw: the users held out of training, which
``lmleak train`` records in MODEL/holdout.json. Without that file the audit skips the stage and
says why (the printout shows it). Uses only the public API (``from lmleak import ...``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lmleak import AuditResult, run_audit


def audit(model: str, corpus: str, out: str = "audit-run") -> AuditResult:
    """Write an audit config for one model and run it (``lmleak audit`` does the same from a file)."""
    config = Path(f"{out}.yaml")
    # YAML, each path quoted as a JSON string (JSON is YAML) so that no character in it can break it
    run_dir, data, spec = (json.dumps(str(x)) for x in (Path(out).resolve(), Path(corpus).resolve(), model))
    config.write_text(
        f"out: {run_dir}\n"
        f"corpus: {{path: {data}}}\n"
        f"models: [{{name: audited, path: {spec}}}]\n"
        "analyses:\n"
        "  report: {k: [1]}   # which sequences the model reproduces that one user alone wrote\n"
        "  mia: {}            # members vs the held-out users (MODEL/holdout.json)\n"
        "gate: {profile: release}  # the shipped release limits: result.verdict, `lmleak gate`\n"
    )
    return run_audit(config)


def show(value: object) -> str:
    """A count as it is, a measurement to three significant digits, an interval as [lo, hi]."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return "not measured" if value is None else str(value)


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    result = audit(*argv)
    for name, h in result.headlines.items():
        print(
            f"{name}: unique_sequences = {show(h.get('unique_sequences'))} (95 % interval {show(h.get('unique_sequences_ci'))})"
        )
        # a membership AUC means little without its interval and its null (0.5 in theory; the
        # placebo measures it: the same attack between two halves of the held-out users)
        print(
            f"{name}: mia_auc = {show(h.get('mia_auc'))} (95 % interval {show(h.get('mia_auc_ci'))}; "
            f"placebo {show(h.get('placebo_auc'))}, blind baseline {show(h.get('blind_auc'))})"
        )
        for stage, why in result.summary["models"][name]["skipped"].items():
            print(f"{name}: {stage} skipped: {why}")
    assert result.verdict is not None  # the config sets limits
    print(f"verdict: {'pass' if result.verdict.passed else 'fail'}")
    for check in result.verdict.checks:
        print(
            f"  {check.model}: {check.metric} = {show(check.value)} (limit {show(check.limit)}): {check.verdict}"
        )
    print(f"report: {result.report_html}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
