"""`probe build` on mail-shaped data: throughput of the format extractor, and the NER method beside it.

Prints ``probe_build_mb_per_s: X`` (goal >= 1, MB of corpus text per second, streamed from the
JSONL file, on ``synth mail --scale 1``: about 3.4 MB) and ``formats_vs_ner: X``, the speed ratio
against the paper's spaCy-NER method measured on a fixed sample of the same documents (NER over the
whole corpus takes minutes; the sample size is printed). Correctness, checked in the same run:
precision and recall of the name<->e-mail pairs against the corpus's ground truth (``subjects.jsonl``);
the script exits 1 below precision 0.95 or recall 0.9.

Usage: ``python benchmarks/bench_probe_build.py [--scale 1.0] [--ner-sample 40]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from lmleak.data.loaders import iter_documents  # noqa: E402
from lmleak.data.synth.mail import synthesize  # noqa: E402
from lmleak.probe.builder import build_subjects  # noqa: E402
from lmleak.progress import set_enabled  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--ner-sample", type=int, default=40)
    args = ap.parse_args()
    set_enabled(False)
    paths = synthesize(Path(tempfile.mkdtemp()), scale=args.scale, seed=0)
    mb = paths["corpus"].stat().st_size / 1e6
    print(f"load: {os.getloadavg()[0]:.2f}  corpus_mb: {mb:.2f}  scale: {args.scale}")
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        subjects, counts = build_subjects(iter_documents(paths["corpus"]))
        best = min(best, time.perf_counter() - t)
    text_mb = counts["bytes"] / 1e6
    sample = list(islice(iter_documents(paths["corpus"]), args.ner_sample))
    sample_mb = sum(len(d.text.encode()) for d in sample) / 1e6
    t = time.perf_counter()
    build_subjects(sample, method="formats")
    fmt_s = time.perf_counter() - t
    build_subjects(sample[:1], method="ner")  # loads the spaCy model once, outside the timing
    t = time.perf_counter()
    build_subjects(sample, method="ner")
    ner_s = time.perf_counter() - t
    truth = [json.loads(line) for line in paths["subjects"].read_text().splitlines()]
    gold = {(s["name"], s["email"]) for s in truth}
    found = {(s["name"], s["email"]) for s in subjects if s["email"]}
    precision, recall = len(gold & found) / max(len(found), 1), len(gold & found) / len(gold)
    print(
        f"documents: {counts['documents']}  text_mb: {text_mb:.2f}  subjects: {len(subjects)}  seconds: {best:.2f}"
    )
    print(f"email_precision: {precision:.4f}  email_recall: {recall:.4f}")
    print(
        f"ner_sample_documents: {len(sample)}  ner_sample_mb: {sample_mb:.3f}  ner_mb_per_s: {sample_mb / ner_s:.3f}"
    )
    print(f"probe_build_mb_per_s: {mb / best:.2f}")
    print(f"formats_vs_ner: {ner_s / max(fmt_s, 1e-9):.1f}")
    if precision < 0.95 or recall < 0.9:
        print("FAIL: name<->e-mail precision or recall below the goal")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
