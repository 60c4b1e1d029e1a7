"""The release verdict's own error rates: null models against leaking models (issue 32 item 5).

A verdict is a statistical decision; this script measures its two error rates. For each corpus size
and each replicate r it writes two ``lmleak synth mail`` corpora of different seeds — the *audited*
people and *other* people — and trains, with the same recipe (the small GPT, plain training):

- a **leaking model**: trained ``--epochs`` epochs on the audited corpus with ``--holdout`` of its
  people held out (``lmleak train --holdout-users``);
- a **null model**: trained only on the other people (their ids renamed), whose ``holdout.json``
  records the leaking model's held-out people (:func:`lmleak.audit.nullmodel.null_model`), so the
  audit treats the audited corpus's other people as trained on, which they were not.

Each model is audited with ``lmleak audit --model M --corpus AUDITED`` and gated with the release
profile (``lmleak gate RUN --profile release --json``). It prints, pooled over sizes and per size,

- ``verdict_null_fail_rate``: null models whose verdict is Fail (a false alarm; goal <= 0.05),
- ``verdict_null_inconclusive_rate``: null models left Inconclusive (the audit could not tell),
- ``verdict_leak_pass_rate``: leaking models whose verdict is Pass (a missed leak; goal <= 0.05),
- ``verdict_leak_fail_rate``: leaking models whose verdict is Fail (the power),

each with its Wilson 95 % interval over the models, and ``verdict_placebo_coverage``: the models
whose membership placebo interval (the attack on two halves of the held-out people, who are
never-seen for both models of a pair) covers 0.5, which it should in 95 % of them. Then one line
per model (its status and the limits that decided it). Correctness in the same run: each verdict's
status is recomputed from its rows by the rule of docs/verdict.md (any Fail row: Fail; else a
blocking Inconclusive: Inconclusive; ...), and a mismatch exits 1.

Usage: ``python benchmarks/bench_verdict.py [--replicates 3] [--scales 0.03,0.06] [--epochs 5]
[--first-replicate 0]`` (about 1.5 minutes a model pair at scale 0.03 on 2 cores). A pair's corpora,
seeds and models depend only on its scale and replicate index, so ``--first-replicate 3`` adds
replicates 3, 4, ... to an earlier run of 0-2 (another process, another core) without repeating its
models, and ``--pool KEPT [KEPT ...]`` then trains nothing: it gates again the runs those runs'
``--keep`` folders hold (each pair once) and prints the same lines over all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402


def _row(c: dict) -> str:
    ci = "" if c["interval"] is None else " [" + ", ".join(f"{x:.3g}" for x in c["interval"]) + "]"
    value = "—" if c["value"] is None else f"{c['value']:.3g}"
    return f"{c['metric']} = {value}{ci}: {c['status']}"


def _status(rows: list[dict]) -> str:
    """The model's status from the gate's rows, by docs/verdict.md's rule recomputed (the benchmark's
    oracle): any Fail row fails; else any Inconclusive row (optional limits too: the analysis ran and
    did not settle it); else a required limit not evaluable; else Pass."""
    statuses = [r["status"] for r in rows]
    if "fail" in statuses:
        return "fail"
    if "inconclusive" in statuses:
        return "inconclusive"
    if any(r["status"] == "not_evaluable" and r.get("required", True) for r in rows):
        return "not_evaluable"
    return "pass"


def _pair(root: Path, scale: float, r: int, args: argparse.Namespace) -> list[dict]:
    from lmleak.audit.nullmodel import audit_release, null_model
    from lmleak.data.holdout import read_holdout
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.mail import synthesize
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model

    here = root / f"s{scale}-r{r}"
    audited = synthesize(here / "audited", scale=scale, seed=1000 + r)["corpus"]
    other = synthesize(here / "other", scale=scale, seed=2000 + r)["corpus"]
    cfg = TrainConfig(epochs=args.epochs, holdout_users=args.holdout, seed=r, n_embd=args.width)
    t0 = time.perf_counter()
    train_model(load_corpus(audited), here / "leak", cfg, progress=False)
    held = read_holdout(here / "leak")
    assert held is not None and held.users
    null_model(load_corpus(other), here / "null", held.users, audited_corpus=str(audited), config=cfg)
    out = []
    for kind in ("leak", "null"):
        run = here / f"audit-{kind}"
        status, rows = audit_release(here / kind, audited, run)
        out.append(_result(kind, scale, r, status, rows, run))
    print(f"# pair s{scale} r{r}: {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def _result(kind: str, scale: float, r: int, status: str, rows: list[dict], run: Path) -> dict:
    """One model's record, its status checked against the rule recomputed from its rows, with the
    placebo AUC's interval of its membership stage (None: the stage wrote none)."""
    if status != _status(rows):
        print(f"MISMATCH: {kind} s{scale} r{r}: the verdict says {status}, its rows say {_status(rows)}")
        sys.exit(1)
    deciding = [_row(c) for c in rows if c.get("required", True)]
    summaries = sorted(run.glob("models/*/mia/summary.json"))
    placebo = (
        json.loads(summaries[0].read_text(encoding="utf-8")).get("placebo_auc_ci") if summaries else None
    )
    return {
        "kind": kind,
        "scale": scale,
        "replicate": r,
        "status": status,
        "rows": deciding,
        "placebo": placebo,
    }


def _pooled(folders: list[str]) -> list[dict]:
    """The kept runs of earlier ``--keep`` folders (``s<scale>-r<r>/audit-{leak,null}``) gated again,
    one record a model; the same pair kept in two folders is an error (it would count twice)."""
    from lmleak.audit.nullmodel import release_status

    results: dict[tuple[str, float, int], dict] = {}
    for folder in folders:
        runs = sorted(Path(folder).glob("s*-r*/audit-*/summary.json"))
        if not runs:
            print(
                f"error: {folder}: no kept run (s<scale>-r<r>/audit-leak/summary.json). Fix: a --keep folder",
                file=sys.stderr,
            )
            sys.exit(2)
        for summary in runs:
            run = summary.parent
            scale, r = run.parent.name[1:].split("-r")
            key = (run.name.removeprefix("audit-"), float(scale), int(r))
            if key in results:
                print(
                    f"error: {run}: model {key} is kept twice. Fix: pool folders of different replicates",
                    file=sys.stderr,
                )
                sys.exit(2)
            results[key] = _result(*key, *release_status(run), run)
    return [results[k] for k in sorted(results, key=lambda k: (k[1], k[2], k[0]))]


def _rate(results: list[dict], kind: str, status: str) -> tuple[float, tuple[float, float] | None, int, int]:
    from lmleak.intervals import wilson_interval

    mine = [x for x in results if x["kind"] == kind]
    hits = sum(x["status"] == status for x in mine)
    return (hits / len(mine) if mine else float("nan")), wilson_interval(hits, len(mine)), hits, len(mine)


def _print_rates(results: list[dict], suffix: str = "") -> None:
    for name, kind, status in (
        ("verdict_null_fail_rate", "null", "fail"),
        ("verdict_null_inconclusive_rate", "null", "inconclusive"),
        ("verdict_leak_pass_rate", "leak", "pass"),
        ("verdict_leak_fail_rate", "leak", "fail"),
    ):
        rate, ci, hits, n = _rate(results, kind, status)
        lo, hi = ci if ci else (float("nan"), float("nan"))
        print(f"{name}{suffix}: {rate:.3f} [{lo:.3f}, {hi:.3f}] ({hits} of {n})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--replicates", type=int, default=3)
    p.add_argument("--scales", default="0.03,0.06")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--holdout", type=float, default=0.3)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--first-replicate", type=int, default=0, help="the first replicate index")
    p.add_argument("--keep", default=None, help="keep the models and runs in this folder")
    p.add_argument(
        "--pool", nargs="+", metavar="KEPT", help="train nothing: gate the runs kept in these folders"
    )
    args = p.parse_args()
    if args.pool:
        print(f"pooled: {', '.join(args.pool)}")
        _report(_pooled(args.pool))
        return
    torch.set_num_threads(args.threads)
    scales = [float(s) for s in args.scales.split(",")]
    print(f"threads: {args.threads}")
    print(f"load_average: {os.getloadavg()[0]:.2f}")
    print(f"torch: {torch.__version__}")
    first = args.first_replicate
    print(
        f"replicates: {args.replicates} (from {first}); scales: {scales}; epochs: {args.epochs}; "
        f"holdout: {args.holdout}"
    )
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-verdict-"))
    results: list[dict] = []
    for scale in scales:
        for r in range(first, first + args.replicates):
            results.extend(_pair(root, scale, r, args))
    _report(results)


def _report(results: list[dict]) -> None:
    from lmleak.intervals import wilson_interval

    _print_rates(results)
    placebos = [x["placebo"] for x in results if x["placebo"] is not None]
    covered = sum(lo <= 0.5 <= hi for lo, hi in placebos)
    if placebos:
        lo, hi = wilson_interval(covered, len(placebos))
        share = covered / len(placebos)
        print(f"verdict_placebo_coverage: {share:.3f} [{lo:.3f}, {hi:.3f}] ({covered} of {len(placebos)})")
    for scale in sorted({x["scale"] for x in results}):
        _print_rates([x for x in results if x["scale"] == scale], f"_scale_{scale:g}")
    print("statuses:", dict(Counter((x["kind"], x["status"]) for x in results)))
    for x in results:
        print(f"model {x['kind']} s{x['scale']:g} r{x['replicate']}: {x['status']} — " + "; ".join(x["rows"]))


if __name__ == "__main__":
    main()
