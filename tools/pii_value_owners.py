"""How much of an audit's "people affected" is a whole personal value reproduced: a measurement for
the design of the leaked-PII limit (docs/verdict.md, "What a stricter count would change").

The leakage report headlines a user-unique leaked sequence as leaked PII when a person-identifying
span *overlaps* it, detected in a window around it (``pii_headline``). On ``synth mail`` that makes
about half of the people a model never saw "leak" at k = 3: the sequences are template text that
touches the end of an address (``4@example.org>\\nTo:`` and the list header after it) or holds only a
mailing-list address everyone's documents hold. This script reads one model's report and sorts
every headline sequence into one of three kinds, by the person-identifying values the regex
detector finds in the owner's documents (whole values, each read in its document's context) that
the sequence's text holds:

- ``personal``: at least one of them that no other person's documents hold;
- ``shared``: some, each held by two or more people's documents (a list address, a correspondent
  quoted by many);
- ``fragment``: none (the span only overlaps the sequence: ``4@example.org>`` is the end of
  ``kowalski84@example.org``, and no value of the owner's is in it whole).

This is another path than the report's own ``pii_personal`` column, which reads the values detected
in a window around each sequence: the two are compared in tests/report/test_owners.py and on kept runs.

It prints, per k, the headline sequences by kind, and the people affected as the report counts them
and as a ``personal``-only count would, members against held-out people, with the members' share
minus the held-out share, its Newcombe 95 % interval and the decision at ``--limit`` (0.05, the
release profile's) by the verdict's rule (:func:`lmleak.render.decision.decide`). Given several
runs it also prints each run's release-profile verdict, and the verdict again with the leaked-PII
rows decided on the personal-value count (every other row as the gate decided it), then how many
runs went from which verdict to which. It changes nothing: it is the evidence for a future change of
the limit, measured on kept runs.

Usage: ``python tools/pii_value_owners.py RUN [RUN ...] [--corpus CORPUS] [--holdout MODEL_DIR]
[--limit 0.05]``: each ``RUN`` is a one-model ``lmleak audit`` run; the corpus and the model (whose
``holdout.json`` names the held-out people) default to the run's ``audit.yaml``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

PERSONAL, SHARED, FRAGMENT = "personal", "shared", "fragment"


def kind_of(text: str, owner_values: Collection[str], holders: Callable[[str], int]) -> str:
    """The kind of one headline sequence: which of the owner's values its text holds whole.

    Example:
        >>> holders = {"ann7@example.org": 1, "list@example.org": 40, "Ann Lee": 1}.get
        >>> owner = {"ann7@example.org", "list@example.org", "Ann Lee"}
        >>> kind_of("Ann Lee <ann7@example.org>", owner, holders), kind_of('"Ann Lee" <', owner, holders)
        ('personal', 'personal')
        >>> kind_of("To: list@example.org", owner, holders), kind_of("7@example.org>", owner, holders)
        ('shared', 'fragment')
    """
    whole = [v for v in owner_values if v and v in text]
    if any(holders(v) == 1 for v in whole):
        return PERSONAL
    return SHARED if whole else FRAGMENT


def people(owners: Iterable[str], held_out: Collection[str], users: Collection[str]) -> dict[str, int]:
    """Distinct members and held-out people among ``owners``, and how many of each the corpus has.

    Example:
        >>> people(["a", "a", "h"], {"h", "i"}, {"a", "b", "h", "i"})
        {'members': 1, 'members_n': 2, 'held_out': 1, 'held_out_n': 2}
    """
    found = set(owners)
    held = set(held_out) & set(users)
    return {
        "members": len(found - held),
        "members_n": len(set(users) - held),
        "held_out": len(found & held),
        "held_out_n": len(held),
    }


def _excess(p: Mapping[str, int], limit: float) -> tuple[float, tuple[float, float] | None, str]:
    """The members' share minus the held-out share, its Newcombe interval, and the decision at ``limit``."""
    from lmleak.intervals import newcombe_difference_interval
    from lmleak.render.decision import decide

    x1, n1, x2, n2 = p["members"], p["members_n"], p["held_out"], p["held_out_n"]
    ci = newcombe_difference_interval(x1, n1, x2, n2)
    d = x1 / n1 - x2 / n2
    return d, ci, decide(d, ci, limit)


def _line(label: str, p: Mapping[str, int], limit: float) -> str:
    d, ci, decision = _excess(p, limit)
    excess = f"{d:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")
    x1, n1, x2, n2 = p["members"], p["members_n"], p["held_out"], p["held_out_n"]
    return f"  {label}: members {x1} of {n1}, held-out {x2} of {n2}; excess {excess}: {decision}"


def _refuse(message: str) -> None:
    """Bad input: one line naming the run and the fix, exit 2."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def _relative_to(run: Path, path: str | None) -> Path | None:
    return None if not path else (Path(path) if Path(path).is_absolute() else run / path)


def measure(run: Path, corpus: Path | None = None, holdout: Path | None = None) -> dict[int, dict[str, Any]]:
    """Per k: the headline sequences by kind (``kinds``) and the people affected as the report counts
    them (``report``) and by personal values only (``personal``), each a :func:`people` record."""
    import pandas as pd

    from lmleak.data.loaders import load_corpus
    from lmleak.pii.regex import RegexDetector
    from lmleak.report.null import HEADLINE_PII_TYPES
    from lmleak.safe_yaml import load_yaml_file

    config = load_yaml_file(run / "audit.yaml") if (run / "audit.yaml").exists() else {}
    models = sorted((run / "models").glob("*/report/sequences.parquet"))
    if len(models) != 1:
        _refuse(
            f"{run}: expected one model's report/sequences.parquet, found {len(models)}; give a one-model audit run"
        )
    # audit.yaml's relative paths start at its folder, the run
    corpus_path = corpus or _relative_to(run, (config.get("corpus") or {}).get("path"))
    model_dir = holdout or _relative_to(run, ((config.get("models") or [{}])[0]).get("path"))
    if corpus_path is None or model_dir is None or not (model_dir / "holdout.json").is_file():
        _refuse(
            f"{run}: no corpus or no holdout.json; give --corpus CORPUS and --holdout MODEL_DIR (a folder with holdout.json)"
        )
    held = set(json.loads((Path(model_dir) / "holdout.json").read_text())["held_out_users"])
    texts: dict[str, list[str]] = {}
    for doc in load_corpus(corpus_path).documents:
        texts.setdefault(str(doc.user_id), []).append(doc.text)
    whole = {u: "\n".join(t) for u, t in texts.items()}
    detector = RegexDetector()

    def detected(text: str) -> list[str]:
        return [text[s.start : s.end] for s in detector.detect(text) if s.entity in HEADLINE_PII_TYPES]

    owner_values = {u: set(detected(t)) for u, t in whole.items()}
    held_by: dict[str, int] = {}

    def holders(value: str) -> int:
        if value not in held_by:
            held_by[value] = sum(1 for t in whole.values() if value in t)
        return held_by[value]

    seqs = pd.read_parquet(models[0])
    out: dict[int, dict[str, Any]] = {}
    for k in sorted(int(x) for x in seqs["k"].unique()):
        rows = seqs[(seqs["k"] == k) & seqs["pii_headline"].fillna(False).astype(bool)]
        owners = [str(u[0]) for u in rows["user_ids"]]
        kinds = [
            kind_of(str(t), owner_values.get(o, set()), holders)
            for t, o in zip(rows["text"], owners, strict=True)
        ]
        personal = [o for o, c in zip(owners, kinds, strict=True) if c == PERSONAL]
        out[k] = {
            "kinds": Counter(kinds),
            "report": people(owners, held, whole),
            "personal": people(personal, held, whole),
            "people": len(whole),
            "held_out_people": len(held & set(whole)),
        }
    return out


def _strict_row(
    row: dict[str, Any], measured: Mapping[int, Mapping[str, Any]], limit: float
) -> dict[str, Any]:
    """A gate row, its status replaced by the personal-value count's decision on the leaked-PII rows.

    Example:
        >>> m = {1: {"personal": {"members": 0, "members_n": 100, "held_out": 0, "held_out_n": 100}}}
        >>> _strict_row({"metric": "pii_people_excess (k=1)", "status": "inconclusive"}, m, 0.05)["status"]
        'pass'
        >>> _strict_row({"metric": "mia_auc", "status": "inconclusive"}, m, 0.05)["status"]
        'inconclusive'
    """
    found = re.fullmatch(r"pii_people_excess \(k=(\d+)\)", str(row.get("metric")))
    if found is None or int(found.group(1)) not in measured:
        return row
    return {**row, "status": _excess(measured[int(found.group(1))]["personal"], limit)[2]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="one-model lmleak audit runs")
    ap.add_argument("--corpus", type=Path, help="their corpus (default: each run's audit.yaml's)")
    ap.add_argument("--holdout", type=Path, help="the model folder with holdout.json (default: audit.yaml's)")
    ap.add_argument(
        "--limit", type=float, default=0.05, help="the limit on the excess (the release profile's)"
    )
    args = ap.parse_args()
    from lmleak.audit.nullmodel import release_status

    # docs/verdict.md's rule from a gate's rows, recomputed (bench_verdict's oracle); imported here,
    # since the benchmark sets thread variables for its own process on import
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from bench_verdict import _status

    verdicts: Counter[tuple[str, str]] = Counter()
    for run in args.runs:
        measured = measure(run, args.corpus, args.holdout)
        first = next(iter(measured.values()), {"people": 0, "held_out_people": 0})
        print(f"run: {run}  people: {first['people']} ({first['held_out_people']} held out)")
        for k, m in measured.items():
            counts = m["kinds"]
            print(
                f"k={k}: {sum(counts.values())} headline sequences: "
                + ", ".join(f"{c} {counts[c]}" for c in (PERSONAL, SHARED, FRAGMENT))
            )
            print(_line("people affected (the report)", m["report"], args.limit))
            print(_line("people with a personal value", m["personal"], args.limit))
        if len(args.runs) > 1:
            status, rows = release_status(run)
            if _status(rows) != status:  # the rule recomputed must give the gate's own status
                sys.exit(f"error: {run}: the gate says {status}, its rows say {_status(rows)}")
            strict = [_strict_row(r, measured, args.limit) for r in rows]
            verdicts[(status, _status(strict))] += 1
            print(f"verdict: {status} (release profile); with the personal-value count: {_status(strict)}")
    if len(args.runs) > 1:
        print("verdicts (the report's count -> the personal-value count): " + ", ".join(
            f"{a} -> {b}: {n}" for (a, b), n in sorted(verdicts.items())))  # fmt: skip


if __name__ == "__main__":
    main()
