"""Sweeps of Fig. 4 (paper 003 §4.2): exact-match rate vs number of templates, association level, beam
size, and model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lmleak.probe.blackbox import generate_probes
from lmleak.probe.probing import collect_probes
from lmleak.probe.settings import ProbeSettings
from lmleak.runs import secure_dir, write_parquet, write_summary


def _rate(rows: list[dict[str, Any]]) -> float:
    hit: dict[str, bool] = {}
    for r in rows:
        hit[r["subject_id"]] = hit.get(r["subject_id"], False) or bool(r["exact_match"])
    return sum(hit.values()) / max(1, len(hit))


def sweep(
    models: dict[str, Any],
    subjects: list[dict[str, Any]],
    *,
    target: str = "email",
    templates: tuple[int, ...] = (1, 2, 3, 4, 5),
    levels: tuple[str, ...] = ("twin", "triplet", "quadruplet"),
    beams: tuple[int, ...] = (1, 2, 3),
    base_level: str = "triplet",
    base_beams: int = 3,
) -> list[dict[str, Any]]:
    """Rows (model, axis, value, exact_match_rate). Each axis varies one knob with the others at the
    paper's defaults (triplet, 5 templates, 3 beams). The templates axis reuses one generation run:
    k-shot with the first k templates is the max over templates 0..k-1 (A.3)."""
    out: list[dict[str, Any]] = []
    for name, model in models.items():
        probes = collect_probes(subjects, target, level=base_level, k=max(templates))
        rows = generate_probes(model, probes, ProbeSettings(beams=base_beams))
        for k in templates:
            out.append(
                {
                    "model": name,
                    "axis": "templates",
                    "value": k,
                    "exact_match_rate": _rate([r for r in rows if r["template"] < k]),
                }
            )
        for lv in levels:
            r = (
                rows
                if lv == base_level
                else generate_probes(
                    model,
                    collect_probes(subjects, target, level=lv, k=max(templates)),
                    ProbeSettings(beams=base_beams),
                )
            )
            out.append({"model": name, "axis": "level", "value": lv, "exact_match_rate": _rate(r)})
        for b in beams:
            r = rows if b == base_beams else generate_probes(model, probes, ProbeSettings(beams=b))
            out.append({"model": name, "axis": "beams", "value": b, "exact_match_rate": _rate(r)})
    return out


def run_sweep(
    models: dict[str, Any], subjects: list[dict[str, Any]], out_dir: str | Path, *, target: str = "email"
) -> list[dict[str, Any]]:
    """:func:`sweep`, written to ``out_dir`` as ``sweep.parquet`` (``value`` as text) and ``summary.json``;
    returns the rows."""
    import pandas as pd

    rows = sweep(models, subjects, target=target)
    d = secure_dir(out_dir)
    # "value" holds counts (templates, beams) and names (levels); a Parquet column holds one type
    write_parquet(pd.DataFrame(rows).astype({"value": str}), d / "sweep.parquet")
    write_summary(d, {"attack": "propile_sweep", "target": target, "rows": rows}, name="summary.json")
    return rows
