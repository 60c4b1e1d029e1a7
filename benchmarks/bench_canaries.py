"""Crafted canaries (Panda et al., ICLR 2025) against random ones, on the same tiny model recipe in
one run (issue 35 item 2).

For each seed, ``lmleak synth customersim`` (8 users, 2 dialogues, seed 0) and two one-run DP audits
of the same plain recipe (``--m 64 --r 64 --mode nodp --epochs 8 --lr 5e-3 --seq-len 32 --width 32
--layers 1 --heads 2 --vocab-size 300 --holdout-users 0``) that differ only in ``canary_design``:
``random`` (``My ID is: <6 digits>``) and ``crafted`` (the same draws and coin flips as rune secrets,
new tokens, behind ``Canary ᛝ key: ``). Per design it prints the guesses right, both ε lower bounds
(Steinke et al.'s and the f-DP one at δ = 1e-5), and the exact exposure (bits, of log2 10^6 = 19.93)
of ``--exposure-canaries`` included canaries and as many excluded ones (never trained on: the null),
ranked among all 10^6 candidates of the design's format.

Headlines: ``crafted_vs_random_epsilon_lb`` (Steinke's bound, crafted / random; ``inf`` when the
random bound is 0), ``crafted_vs_random_epsilon_lb_fdp``, ``crafted_vs_random_mean_exposure``
(included canaries). Correctness in the same run (exit 1 otherwise): both designs drew the same coin
flips; every crafted secret token is a single new token.

Usage: ``python benchmarks/bench_canaries.py [--seeds 0 1 2] [--exposure-canaries 8]``
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

M, DELTA = 64, 1e-5
RECIPE = dict(
    mode="nodp",
    epochs=8,
    lr=5e-3,
    seq_len=32,
    n_embd=32,
    n_layer=1,
    n_head=2,
    vocab_size=300,
    holdout_users=0.0,
    batch_size=16,
)


def audit(corpus: Path, out: Path, design: str, seed: int) -> dict:
    from lmleak.audit.dp_audit import DPAuditConfig, run_dp_audit
    from lmleak.train.config import TrainConfig

    cfg = TrainConfig(**RECIPE, seed=seed)  # type: ignore[arg-type]
    return run_dp_audit(
        corpus,
        out,
        cfg,
        DPAuditConfig(m=M, r=M, delta=DELTA, seed=seed, canary_design=design),
        progress=False,
    )


def exposures(run: Path, design: str, per_side: int) -> tuple[list[float], list[float]]:
    """Exact exposures of the first ``per_side`` included and excluded canaries of the run."""
    import pandas as pd

    from lmleak.attacks.dp_audit import DEFAULT_PREFIX
    from lmleak.attacks.exposure import measure_exposure
    from lmleak.data.canaries import CRAFTED_ALPHABET, CRAFTED_PREFIX
    from lmleak.models.small import load_small_model

    table = pd.read_parquet(run / "canaries.parquet")
    prefix, alphabet = (
        (CRAFTED_PREFIX, CRAFTED_ALPHABET[:10]) if design == "crafted" else (DEFAULT_PREFIX, None)
    )
    model = load_small_model(run / "model")
    sides = []
    for inc in (True, False):
        rows = table[table["included"] == inc].head(per_side)
        recs = [{"prefix": prefix, "secret": s, "alphabet": alphabet, "repeats": 1} for s in rows["secret"]]
        sides.append([r.exposure_bits for r in measure_exposure(model, recs)])
    return sides[0], sides[1]


def check_tokens(run: Path) -> None:
    """Every rune of a crafted run's secrets is one token of its own (a new token)."""
    import pandas as pd

    from lmleak.models.small import load_small_model

    tok = load_small_model(run / "model").tokenizer
    for s in pd.read_parquet(run / "canaries.parquet")["secret"].head(8):
        if len(tok.encode(s)) != len(s):
            sys.exit(f"FAIL: crafted secret {s!r} is {len(tok.encode(s))} tokens, not {len(s)}")


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else (math.inf if a > 0 else 1.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--exposure-canaries", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(1)
    from lmleak.data.synth.customersim import synthesize

    print(f"threads: 1\nload_average: {os.getloadavg()[0]:.2f}\ntorch: {torch.__version__}")
    print(f"sizes: m = {M} canaries, r = {M} guesses, delta = {DELTA}, corpus 8 users x 2 dialogues")
    print(f"seeds: {' '.join(map(str, args.seeds))}\nexposure_canaries_per_side: {args.exposure_canaries}")
    tot: dict[str, dict[str, list[float]]] = {
        d: {"eps": [], "fdp": [], "exp": []} for d in ("random", "crafted")
    }
    with tempfile.TemporaryDirectory() as tmp:
        data = synthesize(Path(tmp) / "data", users=8, dialogs_per_user=2, seed=0)
        for seed in args.seeds:
            flips = {}
            for design in ("random", "crafted"):
                t0 = time.perf_counter()
                run = Path(tmp) / f"{design}-{seed}"
                s = audit(data["corpus"], run, design, seed)
                inc, exc = exposures(run, design, args.exposure_canaries)
                if design == "crafted":
                    check_tokens(run)
                import pandas as pd

                flips[design] = pd.read_parquet(run / "canaries.parquet")["included"].tolist()
                a = s["dp_audit"]
                print(f"seed_{seed}_{design}_right: {a['v']} of {a['r']}")
                print(f"seed_{seed}_{design}_epsilon_lb: {s['epsilon_lower_bound']:.4f}")
                print(f"seed_{seed}_{design}_epsilon_lb_fdp: {s['epsilon_lower_bound_fdp']:.4f}")
                print(f"seed_{seed}_{design}_exposure_included: {' '.join(f'{e:.2f}' for e in inc)}")
                print(f"seed_{seed}_{design}_exposure_excluded: {' '.join(f'{e:.2f}' for e in exc)}")
                print(f"seed_{seed}_{design}_seconds: {time.perf_counter() - t0:.1f}")
                tot[design]["eps"].append(s["epsilon_lower_bound"])
                tot[design]["fdp"].append(s["epsilon_lower_bound_fdp"])
                tot[design]["exp"].append(float(np.mean(inc)))
                print(f"seed_{seed}_{design}_mean_exposure_excluded: {np.mean(exc):.2f}")
            if flips["random"] != flips["crafted"]:
                sys.exit("FAIL: the two designs drew different coin flips")
    r, c = tot["random"], tot["crafted"]
    print(f"random_epsilon_lb: {np.mean(r['eps']):.4f}\ncrafted_epsilon_lb: {np.mean(c['eps']):.4f}")
    print(f"random_epsilon_lb_fdp: {np.mean(r['fdp']):.4f}\ncrafted_epsilon_lb_fdp: {np.mean(c['fdp']):.4f}")
    print(f"random_mean_exposure: {np.mean(r['exp']):.2f}\ncrafted_mean_exposure: {np.mean(c['exp']):.2f}")
    print(f"crafted_vs_random_epsilon_lb: {ratio(np.mean(c['eps']), np.mean(r['eps'])):.3f}")
    print(f"crafted_vs_random_epsilon_lb_fdp: {ratio(np.mean(c['fdp']), np.mean(r['fdp'])):.3f}")
    print(f"crafted_vs_random_mean_exposure: {ratio(np.mean(c['exp']), np.mean(r['exp'])):.3f}")


if __name__ == "__main__":
    main()
