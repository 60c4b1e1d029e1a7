"""The whole audit's cost growth: ``lmleak audit --model`` on ``synth mail`` corpora of growing size.

``bench_report_scale`` times the leakage report at one size and ``bench_owners`` one step's growth;
this script measures how every stage of the quick audit grows with the corpus, so that a step that is
fine at 10^4 tokens and quadratic at 10^6 shows up. For each ``--scales`` value it writes a ``synth
mail`` corpus (long digests, quoted replies, signatures, a few heavy authors), trains the small GPT on
it for ``--epochs`` with ``--holdout`` of its people held out (so the audit has its null), and runs
the quick audit on it as a user would (:func:`lmleak.audit.quick.quick_audit`, the CLI's code path):
the leakage report with the held-out null, membership inference with its placebo and blind baseline,
probing, then ``users.parquet``, the verdict and ``report.html``. Every model uses one vocabulary,
learnt on the largest corpus (``tokenizer_from``): a vocabulary learnt on each corpus grows with it,
and each scored token's cost with the vocabulary, which would be counted as the algorithm's growth.

Each stage's seconds are the runner's own (its ``.complete.json``); ``rest`` is the audit's wall
time less the stages (planning, the users table, the verdict, the HTML). It prints, per scale, the
work (tokens, documents, people) and the seconds per stage, then per stage

- ``audit_growth_<stage>: X``: the least-squares slope of log seconds on log tokens over the scales
  (1 is linear; 2 quadratic);

and the headlines ``audit_growth_exponent: X`` (the whole audit's wall time; goal <= 1.3) and
``audit_growth_worst: STAGE X`` (the stage that grows fastest; goal <= 1.3). Stages under 0.5 s at
the largest scale are printed but not counted in the worst (their times are noise, not growth).
Correctness in the same run: each audit's verdict status is recomputed from its rows by
docs/verdict.md's rule (:func:`bench_verdict._status`), and a stage that did not run at every scale
exits 1 (a growth fitted on missing points would mean nothing).

Usage: ``python benchmarks/bench_audit_growth.py [--scales 0.1,0.2,0.4,0.8] [--epochs 1]
[--threads 1] [--keep DIR]`` (8.2 minutes at the default scales on 2 cores, one thread: 3.6 training, 4.5 auditing).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from bench_verdict import _status  # noqa: E402

STAGE_FLOOR_SECONDS = 0.5  # a stage faster than this at the largest scale is not counted in the worst


def slope(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of log y on log x (the growth exponent).

    Example:
        >>> round(slope([1, 2, 4], [3, 12, 48]), 6)
        2.0
    """
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def _one(root: Path, scale: float, vocabulary: Path, args: argparse.Namespace) -> dict:
    from lmleak.audit.nullmodel import release_status
    from lmleak.audit.quick import QuickOptions, quick_audit
    from lmleak.data.loaders import load_corpus
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model

    here = root / f"s{scale}"
    corpus_path = _corpus(root, scale, args.seed)
    corpus = load_corpus(corpus_path)
    t0 = time.perf_counter()
    cfg = TrainConfig(
        epochs=args.epochs, holdout_users=args.holdout, seed=args.seed, tokenizer_from=str(vocabulary)
    )
    train_model(corpus, here / "model", cfg, progress=False)
    train_seconds = time.perf_counter() - t0
    run = here / "audit"
    t0 = time.perf_counter()
    quick_audit(str(here / "model"), corpus_path, QuickOptions(out=run), force=True)
    wall = time.perf_counter() - t0
    stages = {}
    for done in sorted((run / "models").glob("*/*/.complete.json")):
        stages[done.parent.name] = json.loads(done.read_text())["seconds"]
    status, rows = release_status(run)
    if _status(rows) != status:
        print(f"FAIL: scale {scale}: the verdict {status} disagrees with its rows ({_status(rows)})")
        sys.exit(1)
    report = json.loads(next((run / "models").glob("*/report/summary.json")).read_text())
    return {
        "scale": scale,
        "documents": report["num_documents"],
        "people": report["num_users"],
        "tokens": report["num_tokens"],  # the ledger's work: the corpus under the model's tokenizer
        "vocab": json.loads((here / "model" / "config.json").read_text())["vocab_size"],
        "train_seconds": train_seconds,
        "wall": wall,
        "stages": stages,
        "rest": wall - sum(stages.values()),
        "status": status,
    }


def _corpus(root: Path, scale: float, seed: int) -> Path:
    """The ``synth mail`` corpus of one scale (written once)."""
    from lmleak.data.synth.mail import synthesize

    path = root / f"s{scale}" / "corpus" / "corpus.jsonl"
    return path if path.exists() else Path(synthesize(path.parent, scale=scale, seed=seed)["corpus"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scales", default="0.1,0.2,0.4,0.8", help="synth mail scales, comma-separated")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--holdout", type=float, default=0.3, help="share of people held out of training")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--keep", type=Path, default=None, help="keep the corpora, models and runs here")
    args = ap.parse_args()
    scales = sorted(float(s) for s in args.scales.split(","))
    if len(scales) < 3:
        ap.error("--scales needs at least three sizes to fit a growth")
    torch.set_num_threads(args.threads)
    from lmleak.progress import set_enabled

    set_enabled(False)
    print(f"threads: {args.threads}  load: {os.getloadavg()[0]:.2f}  torch: {torch.__version__}", flush=True)
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-audit-growth-"))
    # one vocabulary for every model, learnt on the largest corpus: a vocabulary learnt on each corpus
    # grows with it (1,819 to 3,480 tokens from scale 0.1 to 0.8), and every scored token's cost with it
    vocabulary = _corpus(root, scales[-1], args.seed)
    results = []
    for scale in scales:
        r = _one(root, scale, vocabulary, args)
        results.append(r)
        per = "  ".join(f"{k} {v:.1f}" for k, v in sorted(r["stages"].items()))
        print(f"scale {scale}: documents {r['documents']}  people {r['people']}  tokens {r['tokens']}  vocab {r['vocab']}  "
              f"train {r['train_seconds']:.0f} s  audit {r['wall']:.1f} s  ({per}  rest {r['rest']:.1f})  "
              f"verdict {r['status']}", flush=True)  # fmt: skip
    names = sorted(set().union(*(r["stages"] for r in results)))
    missing = [n for n in names if any(n not in r["stages"] for r in results)]
    if missing:
        print(f"FAIL: stage(s) {', '.join(missing)} did not run at every scale")
        sys.exit(1)
    if len({r["vocab"] for r in results}) != 1:
        print(f"FAIL: the models' vocabularies differ ({sorted({r['vocab'] for r in results})})")
        sys.exit(1)
    tokens = [r["tokens"] for r in results]
    print(f"tokens_ratio: {tokens[-1] / tokens[0]:.2f}")
    worst = ("", -math.inf)
    for name in [*names, "rest"]:
        secs = [r["rest"] if name == "rest" else r["stages"][name] for r in results]
        g = slope(tokens, secs)
        counted = secs[-1] >= STAGE_FLOOR_SECONDS
        print(
            f"audit_growth_{name}: {g:.2f}"
            + ("" if counted else f"  (under {STAGE_FLOOR_SECONDS} s: not counted)")
        )
        if counted and g > worst[1]:
            worst = (name, g)
    print(f"audit_growth_exponent: {slope(tokens, [r['wall'] for r in results]):.2f}")
    print(f"audit_growth_worst: {worst[0]} {worst[1]:.2f}")


if __name__ == "__main__":
    main()
