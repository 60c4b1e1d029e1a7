"""Leakage ratios and risk margins for any attack that yields (subject, attribute) predictions.

``lmleak kart run scenarios.yaml`` reads a scenario file (:mod:`lmleak.scenarios.spec`) whose
scenarios each name a ``predictions`` file (CSV or JSONL with columns ``subject`` and
``attribute``) and a ``gold`` file (per scenario or top-level). For each scenario Î_T is the set
of predicted pairs and I_T the gold set; the privacy leakage ratio and the margins follow
paper 004 §5.3.3 (:mod:`lmleak.scenarios.margins`).

Which pairs of scenarios are compared: when every name is a factor code (``K+A-R+``), pairs that
differ in one letter; otherwise the scenarios' types decide (:func:`severity_order`): two
scenarios are compared when exactly one factor differs and one value is clearly more severe.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from lmleak.errors import ConfigError, DataFileError
from lmleak.jsonl import iter_jsonl
from lmleak.runs import secure_dir, write_summary
from lmleak.scenarios.margins import (
    Margin,
    parse_scenario_name,
    ratio_intervals,
    ratios_pp,
    risk_margins,
    summarise_margins,
    with_intervals,
)
from lmleak.scenarios.spec import load_entries
from lmleak.scenarios.types import ACCESS_IMPLIES, DPTraining, Identity, Scenario


def read_pairs(path: str | Path, *, base: Path | None = None) -> set[tuple[str, str]]:
    """(subject, attribute) pairs from CSV or JSONL, compared case- and space-insensitively."""
    p = Path(path)
    if base is not None and not p.is_absolute():
        p = base / p
    if not p.is_file():
        raise DataFileError("file not found", path=p)
    rows: list[tuple[int, dict[str, Any]]] = []
    if p.suffix == ".jsonl":
        rows = list(iter_jsonl(p))
    else:
        with p.open(newline="", encoding="utf-8") as f:
            rows = [(i, r) for i, r in enumerate(csv.DictReader(f), start=2)]
    out: set[tuple[str, str]] = set()
    for i, r in rows:
        for col in ("subject", "attribute"):
            if not str(r.get(col) or "").strip():
                raise DataFileError(
                    f"missing {col!r}", path=p, line=i, field=col, hint="each row needs subject and attribute"
                )
        out.add((" ".join(str(r["subject"]).lower().split()), " ".join(str(r["attribute"]).lower().split())))
    return out


def _more(a: Scenario, b: Scenario) -> dict[str, int]:
    """Per factor: +1 when a is more severe, -1 when less, 0 when equal, 2 when incomparable."""
    res: dict[str, int] = {}
    ka, kb = set(a.knowledge.categories), set(b.knowledge.categories)
    res["K"] = 0 if ka == kb else 1 if ka > kb else -1 if ka < kb else 2
    aa, ab = a.anonymization, b.anonymization
    if aa == ab:
        res["A"] = 0
    elif isinstance(aa, Identity) or isinstance(ab, Identity):
        res["A"] = 1 if isinstance(aa, Identity) else -1  # no anonymisation leaks at least as much
    elif (
        isinstance(aa, DPTraining) and isinstance(ab, DPTraining) and aa.unit == ab.unit
    ):  # ε per user ≠ per sequence
        res["A"] = 1 if aa.epsilon > ab.epsilon else -1
    else:
        res["A"] = 2
    ra, rb = set(a.resources.items), set(b.resources.items)
    ia, ib = ACCESS_IMPLIES[a.resources.access], ACCESS_IMPLIES[b.resources.access]
    if ra == rb and ia == ib:
        res["R"] = 0
    elif ra >= rb and ia >= ib:
        res["R"] = 1
    elif ra <= rb and ia <= ib:
        res["R"] = -1
    else:
        res["R"] = 2
    # the paper's K- scenarios add the known category to the target (I_K ∩ I_T = ∅): a target that
    # differs exactly by the knowledge moved across is part of the K change, not a T change
    ta, tb = set(a.target.categories), set(b.target.categories)
    same_t = a.target == b.target or (res["K"] in (1, -1) and ta | ka == tb | kb)
    res["T"] = 0 if same_t else 2
    if a.attack != b.attack:
        res["attack"] = 2
    return res


def severity_order(a: Scenario, b: Scenario) -> tuple[str, int] | None:
    """``(factor, +1 | -1)`` when a and b differ in exactly one comparable factor, else None."""
    diff = {f: v for f, v in _more(a, b).items() if v != 0}
    if len(diff) != 1:
        return None
    ((f, v),) = diff.items()
    return None if v == 2 else (f, v)


def typed_margins(
    scenarios: list[Scenario], ratios: dict[str, float | None], decimals: int | None = 2
) -> list[Margin]:
    out = []
    for a in scenarios:
        for b in scenarios:
            rel = severity_order(a, b)
            if rel is None or rel[1] != 1:
                continue
            ra, rb = ratios[a.name or ""], ratios[b.name or ""]
            m = None if ra is None or rb is None else ra - rb
            if m is not None and decimals is not None:
                m = round(m, decimals) + 0.0
            out.append(Margin(a.name or "", b.name or "", rel[0], m))
    return out


def run_spec(path: str | Path, *, decimals: int | None = 2) -> dict[str, Any]:
    """Compute counts, ratios and margins for the scenario file at ``path``."""

    p = Path(path)
    if not p.is_file():
        raise ConfigError("scenario file not found", path=p)
    entries, top = load_entries(p.read_text(encoding="utf-8"), path=str(p), runner=True)
    counts: dict[str, dict[str, int]] = {}
    scenarios = []
    for i, (sc, extra) in enumerate(entries):
        if sc.name is None:
            raise ConfigError(f"scenario #{i + 1} needs a name", path=p, field="name")
        if "predictions" not in extra:
            raise ConfigError(
                f"scenario {sc.name} needs 'predictions'",
                path=p,
                field="predictions",
                hint="a CSV/JSONL of subject,attribute pairs",
            )
        gold_file = extra.get("gold", top.get("gold"))
        if gold_file is None:
            raise ConfigError(
                f"scenario {sc.name}: no gold file",
                path=p,
                field="gold",
                hint="add gold: <file> at the top level or in the scenario",
            )
        pred = read_pairs(extra["predictions"], base=p.parent)
        gold = read_pairs(gold_file, base=p.parent)
        counts[sc.name] = {"valid": len(pred), "correct": len(pred & gold)}
        scenarios.append(sc)
    pairs = {n: (c["correct"], c["valid"]) for n, c in counts.items()}
    ratios = ratios_pp(pairs, decimals=decimals)
    try:
        for n in ratios:
            parse_scenario_name(n)
        coded = True
    except ConfigError:
        coded = False
    margins = risk_margins(ratios, decimals=decimals) if coded else typed_margins(scenarios, ratios, decimals)
    margins = with_intervals(margins, pairs, decimals=decimals)
    return {
        "counts": counts,
        "ratios": ratios,
        "ratio_intervals": ratio_intervals(pairs, decimals=decimals),
        "margins": [m.to_dict() for m in margins],
        **summarise_margins(margins),
        "scenarios": {s.name: s.to_record() for s in scenarios},
    }


def run_spec_to(path: str | Path, out_dir: str | Path | None) -> dict[str, Any]:
    """:func:`run_spec`, and with ``out_dir`` its result in ``out_dir/summary.json`` (with the
    command and the spec file)."""
    res = run_spec(path)
    if out_dir is not None:
        write_summary(secure_dir(out_dir), {"command": "kart run", "spec": str(path), **res})
    return res
