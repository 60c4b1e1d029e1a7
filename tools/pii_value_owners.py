"""How much of an audit's "people affected" is a whole personal value reproduced: a measurement for
the design of the leaked-PII limit (docs/verdict.md, "What a stricter count would change").

The leakage report headlines a user-unique leaked sequence as leaked PII when a person-identifying
span *overlaps* it, detected in a window around it (``pii_headline``). On ``synth mail`` that makes
about half of the people a model never saw "leak" at k = 3: the sequences are template text that
touches the end of an address (``4@example.org>\\nTo: proj-dev@lists.example.org``) or holds only a
mailing-list address everyone's documents hold. This script reads one model's report and sorts
every headline sequence into one of three kinds, by the person-identifying values the regex
detector finds in the sequence's own text:

- ``personal``: at least one *whole* value of the owner's (one the detector also finds in the owner's
  documents, so not a fragment of a longer one) that no other person's documents hold;
- ``shared``: whole values only, each held by two or more people's documents (a list address, a
  correspondent quoted by many);
- ``fragment``: no whole value (the span only overlaps the sequence, or the detector finds a piece of
  a longer value: ``4@example.org`` of ``kowalski84@example.org``).

It prints, per k, the headline sequences by kind, and the people affected as the report counts them
and as a ``personal``-only count would, members against held-out people, with the members' share
minus the held-out share, its Newcombe 95 % interval and the decision at ``--limit`` (0.05, the
release profile's) by the verdict's rule (:func:`lmleak.render.decision.decide`). It changes nothing: it is the evidence for a future change of the limit, measured on kept runs.

Usage: ``python tools/pii_value_owners.py RUN [--corpus CORPUS] [--holdout MODEL_DIR] [--limit 0.05]``: ``RUN`` is a
one-model ``lmleak audit`` run; the corpus and the model (whose ``holdout.json`` names the held-out
people) default to the run's ``audit.yaml``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

PERSONAL, SHARED, FRAGMENT = "personal", "shared", "fragment"


def kind_of(values: Iterable[str], owner_values: Collection[str], holders: Callable[[str], int]) -> str:
    """The kind of one headline sequence from the values detected in its text (module docstring).

    Example:
        >>> holders = {"ann7@example.org": 1, "list@example.org": 40, "7@example.org": 1}.get
        >>> owner = {"ann7@example.org", "list@example.org"}
        >>> kind_of(["ann7@example.org", "list@example.org"], owner, holders)
        'personal'
        >>> kind_of(["list@example.org"], owner, holders), kind_of(["7@example.org"], owner, holders)
        ('shared', 'fragment')
    """
    whole = [v for v in values if v in owner_values]
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


def _line(label: str, p: Mapping[str, int], limit: float) -> str:
    from lmleak.intervals import newcombe_difference_interval
    from lmleak.render.decision import decide

    x1, n1, x2, n2 = p["members"], p["members_n"], p["held_out"], p["held_out_n"]
    ci = newcombe_difference_interval(x1, n1, x2, n2)
    d = x1 / n1 - x2 / n2
    excess = f"{d:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")
    return f"  {label}: members {x1} of {n1}, held-out {x2} of {n2}; excess {excess}: {decide(d, ci, limit)}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a one-model lmleak audit run")
    ap.add_argument("--corpus", type=Path, help="its corpus (default: audit.yaml's)")
    ap.add_argument("--holdout", type=Path, help="the model folder with holdout.json (default: audit.yaml's)")
    ap.add_argument(
        "--limit", type=float, default=0.05, help="the limit on the excess (the release profile's)"
    )
    args = ap.parse_args()

    import pandas as pd

    from lmleak.data.loaders import load_corpus
    from lmleak.pii.regex import RegexDetector
    from lmleak.report.null import HEADLINE_PII_TYPES
    from lmleak.safe_yaml import load_yaml_file

    config = load_yaml_file(args.run / "audit.yaml") if (args.run / "audit.yaml").exists() else {}
    models = sorted((args.run / "models").glob("*/report/sequences.parquet"))
    if len(models) != 1:
        sys.exit(f"error: {args.run}: expected one model's report/sequences.parquet, found {len(models)}")
    corpus_path = args.corpus or (config.get("corpus") or {}).get("path")
    model_dir = args.holdout or ((config.get("models") or [{}])[0]).get("path")
    if not corpus_path or not model_dir or not (Path(model_dir) / "holdout.json").is_file():
        sys.exit("error: give --corpus and --holdout MODEL_DIR (a folder with holdout.json)")
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
    print(f"run: {args.run}  people: {len(whole)} ({len(held & set(whole))} held out)")
    for k in sorted(seqs["k"].unique()):
        rows = seqs[(seqs["k"] == k) & seqs["pii_headline"].fillna(False).astype(bool)]
        owners = [str(u[0]) for u in rows["user_ids"]]
        kinds = [
            kind_of(detected(str(t)), owner_values.get(o, set()), holders)
            for t, o in zip(rows["text"], owners, strict=True)
        ]
        counts = Counter(kinds)
        print(
            f"k={k}: {len(rows)} headline sequences: "
            + ", ".join(f"{c} {counts[c]}" for c in (PERSONAL, SHARED, FRAGMENT))
        )
        print(_line("people affected (the report)", people(owners, held, whole), args.limit))
        personal = [o for o, c in zip(owners, kinds, strict=True) if c == PERSONAL]
        print(_line("people with a personal value", people(personal, held, whole), args.limit))


if __name__ == "__main__":
    main()
