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

each with its Wilson 95 % interval over the models, then one line per model (its status and the
limits that decided it). Correctness in the same run: each verdict's status is recomputed from its
rows by the rule of docs/verdict.md (any Fail row: Fail; else a blocking Inconclusive: Inconclusive;
...), and a mismatch exits 1.

Usage: ``python benchmarks/bench_verdict.py [--replicates 3] [--scales 0.03,0.06] [--epochs 5]``
(about 1.5 minutes a model pair at scale 0.03 on 2 cores).
"""

from __future__ import annotations

import argparse
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
        status, rows = audit_release(here / kind, audited, here / f"audit-{kind}")
        if status != _status(rows):
            print(f"MISMATCH: {kind} s{scale} r{r}: the verdict says {status}, its rows say {_status(rows)}")
            sys.exit(1)
        deciding = [_row(c) for c in rows if c.get("required", True)]
        out.append({"kind": kind, "scale": scale, "replicate": r, "status": status, "rows": deciding})
    print(f"# pair s{scale} r{r}: {time.perf_counter() - t0:.0f} s", flush=True)
    return out


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
    p.add_argument("--keep", default=None, help="keep the models and runs in this folder")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    scales = [float(s) for s in args.scales.split(",")]
    print(f"threads: {args.threads}")
    print(f"load_average: {os.getloadavg()[0]:.2f}")
    print(f"torch: {torch.__version__}")
    print(f"replicates: {args.replicates}; scales: {scales}; epochs: {args.epochs}; holdout: {args.holdout}")
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-verdict-"))
    results: list[dict] = []
    for scale in scales:
        for r in range(args.replicates):
            results.extend(_pair(root, scale, r, args))
    _print_rates(results)
    for scale in scales:
        _print_rates([x for x in results if x["scale"] == scale], f"_scale_{scale:g}")
    print("statuses:", dict(Counter((x["kind"], x["status"]) for x in results)))
    for x in results:
        print(f"model {x['kind']} s{x['scale']:g} r{x['replicate']}: {x['status']} — " + "; ".join(x["rows"]))


if __name__ == "__main__":
    main()
