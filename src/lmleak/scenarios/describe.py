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


def privacy_unit_of(privacy: dict[str, Any]) -> str | None:
    """``user`` or ``sequence`` from a ``privacy.json`` record, None when it does not say.

    Records written before the unit was a choice said ``"one training sequence (a chunk of one
    document)"``: that is ``sequence``.

    Example:
        >>> privacy_unit_of({"privacy_unit": "user"}), privacy_unit_of({"privacy_unit": "one training sequence (a chunk)"})
        ('user', 'sequence')
    """
    unit = privacy.get("privacy_unit")
    if not isinstance(unit, str):
        return None
    if unit in ("user", "sequence"):
        return unit
    return "sequence" if "sequence" in unit else None


def anonymization_of(model_dir: str | Path | None) -> str:
    """KART's A factor from the model's ``privacy.json`` (identity when unknown).

    ``lmleak train`` records the training mode, the accountant's epsilon and the privacy unit there:
    DP-SGD gives ``dp[UNIT]:EPS`` (``dp[user]:2.9`` protects a person, ``dp[sequence]:2.9`` one
    training sequence), CRT ``redaction:POLICY+dp[UNIT]:EPS``, selective DP its own
    ``sdp[UNIT]:EPS`` (it protects detected secrets only, so it is never labelled ``dp``); a record
    without a unit gives ``dp:EPS``. A model folder without the file, a plain run, or no folder at
    all (a GGUF file, a model behind an API) gives ``identity``.

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
    unit = privacy_unit_of(priv)
    tag = f"[{unit}]" if unit else ""
    if eps is None:
        return "identity"
    if mode == "dp":
        return f"dp{tag}:{eps:.3g}"
    if mode == "crt":
        return f"redaction:{priv.get('policy') or 'balanced'}+dp{tag}:{eps:.3g}"
    if mode == "sdp":
        return f"sdp{tag}:{eps:.3g}"
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
