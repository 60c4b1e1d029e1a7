"""Peak memory of the ledger pass as the corpus grows 10x (issue 9; paper 001 §4's ledger).

The pass (:func:`lmleak.ledger.ledger.run_ledger_pass` over a
:class:`~lmleak.ledger.ledger.StreamedCorpus`) streams documents from the file, keeps at most
one shard in flight and writes it to disk, so its peak resident memory should not depend on
the corpus size. Each pass runs in a fresh subprocess (same saved small GPT, 1 torch thread)
and reports its own peak resident memory (``VmHWM``; see ``bench_resume.peak_rss_kib`` for why not
``ru_maxrss``). Corpora: a CustomerSim corpus of ``10 x users`` users and its first tenth.

Prints ``rss_growth_10x`` (peak RSS on the 10x corpus / on the base corpus; goal <= 1.5), both
peaks in MiB, documents and tokens of each corpus, and context lines.

Correctness (exit 1 on failure): each pass covers every document of its corpus (``ledger.json``
counts match the file) and the base ledger equals the first documents of the 10x ledger
(a shard boundary-aligned prefix, so the same model gives the same ranks).

Long documents (issue 16): the whole report (:func:`lmleak.report.leakage.run_report`: ledger,
corpus index, leaked sequences and their features) on a corpus holding one ``--long-doc-mb``
(default 50) MB document, and on the same text cut at line ends into ``--piece-mb`` (default 1) MB
documents. Memory must be bounded by the model and its window, not by the largest document:
prints ``long_doc_rss_ratio`` (peak RSS with the one long document / with the pieces; goal <= 1.5),
both peaks, tokens and pass times. The model is a 1-layer GPT of width 32 with a 512-word
vocabulary (random init: the benchmark measures memory, not leakage); the 50 MB default took
about 7 minutes on an idle 2-core machine (``--long-doc-mb 5`` for a quick look).
Correctness: both corpora hold the same text (the pieces concatenate to the long document), and
the two ledgers cover every document and the same number of tokens to within 1% (a cut may
change the tokenisation of one word).

Usage: ``python benchmarks/bench_memory.py [--users 20] [--shard-size 20] [--long-doc-mb 50]
[--piece-mb 1] [--long-doc-only]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from bench_resume import context, make_setup, peak_rss_kib  # noqa: E402  (benchmarks/ is on sys.path when run as a script)


def child(model_dir: str, corpus: str, run_dir: str, shard_size: int) -> None:
    import torch

    torch.set_num_threads(1)
    from lmleak.ledger.ledger import StreamedCorpus, run_ledger_pass
    from lmleak.models.loading import load_model

    model = load_model(model_dir)
    t0 = time.perf_counter()
    meta = run_ledger_pass(model, StreamedCorpus(corpus), run_dir, shard_size=shard_size)
    peak_kib = peak_rss_kib()
    print(
        json.dumps(
            {
                "pass_s": time.perf_counter() - t0,
                "peak_kib": peak_kib,
                **{k: meta[k] for k in ("num_docs", "num_tokens")},
            }
        )
    )


def child_report(model_dir: str, corpus: str, run_dir: str) -> None:
    """The whole leakage report on ``corpus``, as ``lmleak report`` runs it (default settings)."""
    import torch

    torch.set_num_threads(1)
    from lmleak.data.loaders import load_corpus
    from lmleak.models.loading import load_model
    from lmleak.report.leakage import ReportConfig, run_report

    model = load_model(model_dir)
    t0 = time.perf_counter()
    summary = run_report(model, load_corpus(corpus), run_dir, ReportConfig())
    peak_kib = peak_rss_kib()
    print(
        json.dumps(
            {
                "pass_s": time.perf_counter() - t0,
                "peak_kib": peak_kib,
                "num_docs": summary["num_documents"],
                "num_tokens": summary["num_tokens"],
            }
        )
    )


def make_long_doc_setup(root: Path, doc_mb: float, piece_mb: float) -> tuple[Path, Path, Path, int]:
    """A tiny GPT, one corpus with a single ``doc_mb`` MB document and the same text in ``piece_mb`` MB pieces."""
    from lmleak.data.loaders import iter_documents
    from lmleak.data.synth.customersim import synthesize
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    paths = synthesize(root / "data", users=40, dialogs_per_user=5, seed=0)
    texts = [d.text for d in iter_documents(paths["corpus"])]
    tok = build_tokenizer(texts, kind="word", vocab_size=512)
    module = new_small_gpt(len(tok), SmallGPTConfig(n_positions=256, n_embd=32, n_layer=1, n_head=2), seed=0)
    model_dir = save_small_model(module, tok, root / "model")
    block = "\n".join(texts) + "\n"
    target = int(doc_mb * 1_000_000)
    text = (block * (target // len(block) + 1))[:target]
    text = text[: text.rfind("\n") + 1]
    piece = int(piece_mb * 1_000_000)
    pieces, i = [], 0
    while i < len(text):
        j = text.rfind("\n", i, i + piece) + 1 if i + piece < len(text) else len(text)
        j = j if j > i else min(i + piece, len(text))
        pieces.append(text[i:j])
        i = j
    assert "".join(pieces) == text
    long_path, pieces_path = root / "long.jsonl", root / "pieces.jsonl"
    long_path.write_text(
        json.dumps({"user_id": "u0", "doc_id": "long", "text": text}) + "\n", encoding="utf-8"
    )
    with pieces_path.open("w", encoding="utf-8") as f:
        for n, t in enumerate(pieces):
            f.write(json.dumps({"user_id": "u0", "doc_id": f"piece-{n}", "text": t}) + "\n")
    return Path(model_dir), long_path, pieces_path, len(pieces)


def long_doc(args: argparse.Namespace) -> list[str]:
    """Run the long-document comparison; print its lines and return its errors."""
    with tempfile.TemporaryDirectory(prefix="bench_memory_long_") as tmp:
        root = Path(tmp)
        model_dir, long_path, pieces_path, n_pieces = make_long_doc_setup(
            root, args.long_doc_mb, args.piece_mb
        )
        context(
            long_doc_mb=args.long_doc_mb,
            piece_mb=args.piece_mb,
            long_doc_model="gpt 1x32 vocab 512 random-init",
        )
        rp = run_child(model_dir, pieces_path, root / "run-pieces", 0, mode="--child-report")
        rl = run_child(model_dir, long_path, root / "run-long", 0, mode="--child-report")
        print(f"documents_pieces: {rp['num_docs']}")
        print(f"tokens_pieces: {rp['num_tokens']}")
        print(f"tokens_long_doc: {rl['num_tokens']}")
        print(f"report_s_pieces: {rp['pass_s']:.2f}")
        print(f"report_s_long_doc: {rl['pass_s']:.2f}")
        print(f"peak_rss_mib_pieces: {rp['peak_kib'] / 1024:.1f}")
        print(f"peak_rss_mib_long_doc: {rl['peak_kib'] / 1024:.1f}")
        print(f"long_doc_rss_ratio: {rl['peak_kib'] / rp['peak_kib']:.3f}")
        errors = []
        if rp["num_docs"] != n_pieces or rl["num_docs"] != 1:
            errors.append(f"documents covered {rp['num_docs']}/{n_pieces} and {rl['num_docs']}/1")
        if abs(rp["num_tokens"] - rl["num_tokens"]) > 0.01 * rl["num_tokens"]:
            errors.append(
                f"token counts differ: {rp['num_tokens']} (pieces) vs {rl['num_tokens']} (long document)"
            )
        return errors


def run_child(model_dir: Path, corpus: Path, run_dir: Path, shard_size: int, mode: str = "--child") -> dict:
    extra = [] if mode == "--child-report" else [str(shard_size)]
    res = subprocess.run(
        [sys.executable, __file__, mode, str(model_dir), str(corpus), str(run_dir), *extra],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        sys.exit(f"child failed ({res.returncode}): {res.stderr[-2000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def main() -> int:
    import numpy as np

    from lmleak.ledger.ledger import read_ledger

    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--shard-size", type=int, default=20)
    ap.add_argument("--long-doc-mb", type=float, default=50.0, help="size of the one long document (MB)")
    ap.add_argument("--piece-mb", type=float, default=1.0, help="size of the pieces it is cut into (MB)")
    ap.add_argument("--long-doc-only", action="store_true", help="skip the 10x corpus growth passes")
    args = ap.parse_args()
    if args.long_doc_only:
        errors = long_doc(args)
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        print(f"consistent: {not errors}")
        return 1 if errors else 0
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp:
        root = Path(tmp)
        big, model_dir = make_setup(
            root, 10 * args.users, dialogs_per_user=2
        )  # one model (one vocabulary) for both
        lines = big.read_text(encoding="utf-8").splitlines(keepends=True)
        n_base = (
            len(lines) // 10 // args.shard_size * args.shard_size
        )  # whole shards: the base is a prefix of the 10x ledger
        base = root / "base.jsonl"
        base.write_text("".join(lines[:n_base]), encoding="utf-8")
        context(
            users_base=args.users,
            users_10x=10 * args.users,
            shard_size=args.shard_size,
            model="gpt 2x128 random-init",
        )
        rb = run_child(model_dir, base, root / "run-base", args.shard_size)
        rx = run_child(model_dir, big, root / "run-10x", args.shard_size)
        print(f"documents_base: {rb['num_docs']}")
        print(f"documents_10x: {rx['num_docs']}")
        print(f"tokens_base: {rb['num_tokens']}")
        print(f"tokens_10x: {rx['num_tokens']}")
        print(f"pass_s_base: {rb['pass_s']:.2f}")
        print(f"pass_s_10x: {rx['pass_s']:.2f}")
        print(f"peak_rss_mib_base: {rb['peak_kib'] / 1024:.1f}")
        print(f"peak_rss_mib_10x: {rx['peak_kib'] / 1024:.1f}")
        print(f"rss_growth_10x: {rx['peak_kib'] / rb['peak_kib']:.3f}")
        errors = []
        if rb["num_docs"] != n_base or rx["num_docs"] != len(lines):
            errors.append(f"documents covered {rb['num_docs']}/{n_base} and {rx['num_docs']}/{len(lines)}")
        lb, lx = read_ledger(root / "run-base"), read_ledger(root / "run-10x")
        cut = int(lb.offsets[-1])
        if (
            lb.doc_ids != lx.doc_ids[:n_base]
            or not np.array_equal(lb.ranks, lx.ranks[:cut])
            or not np.array_equal(lb.logprobs, lx.logprobs[:cut])
        ):
            errors.append("the base ledger is not the prefix of the 10x ledger")
    errors += long_doc(args)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    print(f"consistent: {not errors}")
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        a = sys.argv[2:]
        child(a[0], a[1], a[2], int(a[3]))
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "--child-report":
        a = sys.argv[2:]
        child_report(a[0], a[1], a[2])
        sys.exit(0)
    sys.exit(main())
