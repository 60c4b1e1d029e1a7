"""State any lmleak run's scenario in paper 004's notation ``(I_K, a, R, I_T)`` (§3, "Summary").

Every attack writes its KART record under ``"scenario"`` in ``summary.json`` (and experiments with
several scenarios a ``"scenarios"`` mapping); these functions read them back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.errors import RunError
from lmleak.scenarios.types import Scenario


def notation(record: dict[str, Any]) -> str:
    """``(I_K, a, R, I_T)`` of a scenario record.

    Example:
        >>> notation({"attack": "tab_attack", "knowledge": [], "anonymization": "identity",
        ...           "resources": [], "access": "top_k", "target": "any"})
        '(∅, id, ∅, I_U)'
    """
    return Scenario.from_dict({k: v for k, v in record.items() if k != "notation"}).notation()


def run_scenarios(run: str | Path) -> list[tuple[str, Scenario]]:
    """The scenarios recorded by a run directory (or a ``summary.json`` path), labelled."""
    p = Path(run)
    summary_path = p / "summary.json" if p.is_dir() else p
    if not summary_path.is_file():
        raise RunError(f"{summary_path}: no summary.json (is this an lmleak run directory?)")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RunError(f"{summary_path}: not valid JSON ({e})") from None
    found: list[tuple[str, Scenario]] = []
    many = summary.get("scenarios")
    if isinstance(many, dict):
        for label, rec in many.items():
            if isinstance(rec, dict) and "access" in rec:
                found.append((str(label), _read(rec, summary_path)))
    if not found and isinstance(summary.get("scenario"), dict):
        found.append(("run", _read(summary["scenario"], summary_path)))
    if not found:
        raise RunError(f"{summary_path}: the run records no KART scenario (key 'scenario')")
    return found


def _read(rec: dict[str, Any], path: Path) -> Scenario:
    return Scenario.from_dict({k: v for k, v in rec.items() if k != "notation"}, where=str(path))


def anonymization_of(model_dir: str | Path | None) -> str:
    """KART's A factor from the model's ``privacy.json`` (identity when unknown).

    ``lmleak train`` records the training mode and the accountant's epsilon there: DP-SGD and
    selective DP give ``dp:EPS``, CRT ``redaction:POLICY+dp:EPS``; a model folder without the file,
    a plain run, or no folder at all (a GGUF file, a model behind an API) gives ``identity``.

    Example:
        >>> anonymization_of(None)
        'identity'
    """
    if not model_dir:
        return "identity"
    p = Path(model_dir) / "privacy.json"
    if not p.exists():
        return "identity"
    priv = json.loads(p.read_text())
    eps = priv.get("epsilon")
    mode = priv.get("mode")
    if mode == "dp" and eps is not None:
        return f"dp:{eps:.3g}"
    if mode == "crt" and eps is not None:
        return f"redaction:{priv.get('policy') or 'balanced'}+dp:{eps:.3g}"
    if mode == "sdp" and eps is not None:
        return f"dp:{eps:.3g}"
    return "identity"


@dataclass(frozen=True, slots=True)
class RunScenarios:
    """The labelled scenarios of one run directory (``lmleak kart describe``)."""

    run: str
    scenarios: tuple[tuple[str, Scenario], ...]

    def records(self) -> list[dict[str, Any]]:
        """``kart describe --json``: one ``{"label", "notation", "scenario"}`` object per scenario."""
        return [
            {"label": lab, "notation": s.notation(), "scenario": s.to_record()} for lab, s in self.scenarios
        ]


def describe_run(run: str | Path) -> RunScenarios:
    """:func:`run_scenarios` of ``run`` as one result.

    Raises:
        RunError: no ``summary.json``, invalid JSON, or no scenario recorded.
    """
    return RunScenarios(str(run), tuple(run_scenarios(run)))
