"""The leakage report's cost after the ledger, on a 10^6-token multi-author corpus with long documents.

Prints ``report_after_ledger_vs_ledger: X`` (goal <= 1.0): the time of everything ``run_report``
does after the ledger pass (reading the ledger, the corpus index, S, the features with their
decoded texts, the public model's scoring, PII detection, metrics, writing the tables) divided by
the time of the ledger pass itself, both measured in this run on the same model and corpus.

Why these inputs:
- the corpus is ``synth mail`` at ``--scale 1`` (about 10^6 tokens of the small GPT's BPE): long
  digests (~40k tokens), quoted replies, signatures, Zipf-distributed authors, repeated lines — the
  shape on which the old report went quadratic (span texts decoded from each document's start,
  the public model scoring whole-document prefixes);
- the audited model is the default small GPT trained on that corpus for ``--epochs`` (1) epoch, so
  it really leaks (a random model leaks nothing and would make the after-ledger work trivial);
- the public model is a small GPT trained on another seed's mail corpus (another tokenizer), so
  every unique sequence is re-tokenised and scored with its bounded context, as in a real audit.

The ledger pass and the rest are timed once each (they are minutes long, so the noise of a shared
machine is small against them); the work is counted beside the time: tokens in the ledger, public
calls and public tokens scored. Correctness: the same report rerun must give the same sequences,
and every sequence text must occur in its owner's documents; else exit 1.

Usage: ``python benchmarks/bench_report_scale.py [--scale 1.0] [--epochs 1] [--threads 1] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from lmleak.data.loaders import load_corpus  # noqa: E402
from lmleak.data.synth.mail import synthesize  # noqa: E402
from lmleak.ledger.ledger import build_ledger  # noqa: E402
from lmleak.models.loading import load_model  # noqa: E402
from lmleak.progress import set_enabled  # noqa: E402
from lmleak.report.leakage import ReportConfig, run_report  # noqa: E402
from lmleak.train.config import TrainConfig  # noqa: E402
from lmleak.train.trainer import train_model  # noqa: E402


class CountingPublic:
    """The public model, counting what the report asks of it."""

    def __init__(self, model):
        self.model = model
        self.capabilities = model.capabilities
        self.name = model.name
        self.calls = self.pairs = self.tokens = 0

    def score_text(self, contexts, texts):
        enc = self.model.tokenizer.encode
        self.calls += 1
        self.pairs += len(texts)
        self.tokens += sum(len(enc(c)) + len(enc(t)) for c, t in zip(contexts, texts, strict=True))
        return self.model.score_text(contexts, texts)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--keep", default=None, help="work folder to keep (default: a temporary one)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    set_enabled(False)
    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-report-"))
    print(
        f"threads: {args.threads}  load: {os.getloadavg()[0]:.2f}  torch: {torch.__version__}  dtype: float32"
    )

    t = time.perf_counter()
    paths = synthesize(work / "mail", scale=args.scale, seed=0, canaries=5, canary_repeats=10)
    pub_paths = synthesize(work / "public-mail", scale=min(args.scale, 0.3), seed=1)
    print(f"corpus_seconds: {time.perf_counter() - t:.1f}")
    corpus = load_corpus(paths["corpus"])
    cfg = TrainConfig(epochs=args.epochs, holdout_users=0.0)
    t = time.perf_counter()
    if not (work / "model" / "train.json").exists():
        train_model(corpus, work / "model", cfg, progress=False)
    if not (work / "public" / "train.json").exists():
        train_model(load_corpus(pub_paths["corpus"]), work / "public", cfg, progress=False)
    print(f"train_seconds: {time.perf_counter() - t:.1f}")
    model = load_model(work / "model")
    public = CountingPublic(load_model(work / "public"))
    report_cfg = ReportConfig(k=(1, 3))

    run = work / "run"
    t = time.perf_counter()
    ledger = build_ledger(model, corpus, run, k=3)
    ledger_s = time.perf_counter() - t
    longest = int(np.diff(ledger.offsets).max())
    print(f"documents: {ledger.num_docs}  tokens: {ledger.num_tokens}  longest_document_tokens: {longest}")
    del ledger
    t = time.perf_counter()
    summary = run_report(
        model, corpus, run, report_cfg, public_model=public
    )  # the ledger is complete: reused
    after_s = time.perf_counter() - t

    seqs = pd.read_parquet(run / "sequences.parquet")
    print(f"ledger_seconds: {ledger_s:.1f}")
    print(f"after_ledger_seconds: {after_s:.1f}")
    print(f"ledger_tokens_per_s: {summary['num_tokens'] / ledger_s:.0f}")
    print(f"sequences: {len(seqs)}  unique: {int(seqs['unique'].sum())}  k: 1 3")
    print(
        f"public_calls: {public.calls}  public_pairs: {public.pairs}  public_tokens: {public.tokens}  "
        f"public_context_tokens: {summary['public_context_tokens']}"
    )
    print(f"pii_unique_sequences: {summary['pii_unique_sequences']}")
    print(f"report_after_ledger_vs_ledger: {after_s / ledger_s:.3f}")

    # correctness: a rerun gives the same table, and every text is in one of its owners' documents
    again = run_report(model, corpus, work / "run", report_cfg, public_model=public)
    seqs2 = pd.read_parquet(run / "sequences.parquet")
    ok = again["unique_sequences"] == summary["unique_sequences"] and list(seqs2["sequence_id"]) == list(
        seqs["sequence_id"]
    )
    by_user: dict[str, str] = {}
    for d in corpus:
        by_user[d.user_id] = by_user.get(d.user_id, "") + "\n" + d.text
    sample = seqs[seqs["unique"]].head(200)
    for text, users in zip(sample["text"], sample["user_ids"], strict=True):
        if not any(text in by_user[u] for u in users):
            print(f"FAIL: a sequence text is not in its owner's documents: {text[:40]!r}")
            ok = False
    if not ok:
        print("FAIL: the report is not reproducible or its texts are wrong")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
