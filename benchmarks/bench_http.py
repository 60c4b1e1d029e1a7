"""The ledger through `lmleak serve` on localhost vs the same ledger in-process.

Prints ``http_vs_inprocess_ledger: X`` — throughput (scored tokens/s) of ``build_ledger`` on an
``http://127.0.0.1:PORT/v1#MODEL`` model (tier prompt_logprobs, the request cache off, so every
round really asks) divided by the in-process throughput of the same model folder on the same corpus;
goal >= 0.7. The server is a separate ``lmleak serve`` process (as a deployment would be), started
once; the two sides are timed alternately (interleaved), after one warm-up each, and the headline is
min/min. Correctness in the same run: token ids and ranks equal, logprobs within 1e-4, or exit 1.

Model: a small GPT-2 (4 layers, width 256, ~5M parameters, random weights: FLOPs do not depend on
values) with a word-level tokenizer; documents of L = 256 words. Both sides use 1 torch thread.

Usage: ``python benchmarks/bench_http.py [--docs 32] [--length 256] [--rounds 3] [--batch 8] [--concurrency 2]``
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=32)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8, help="documents per request")
    ap.add_argument("--concurrency", type=int, default=2, help="requests in flight")
    args = ap.parse_args()

    import numpy as np
    import torch

    from lmleak.data.corpus import Corpus, Document
    from lmleak.ledger.ledger import build_ledger
    from lmleak.models.http import HTTPModel
    from lmleak.models.loading import load_model
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model
    from lmleak.progress import set_enabled

    set_enabled(False)
    torch.set_num_threads(1)
    L = args.length
    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = sorted({"".join(rng.choice(letters, size=6)) for _ in range(3000)})  # one token each
    texts = [" ".join(rng.choice(words, size=L)) for _ in range(args.docs)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-http-"))
    tok = build_tokenizer(texts, kind="word", vocab_size=4096, split_digits=False)
    module = new_small_gpt(
        len(tok), SmallGPTConfig(n_positions=L + 2, n_embd=256, n_layer=4, n_head=4), seed=0
    )
    model_dir = save_small_model(module, tok, tmp / "model")
    nparams = sum(p.numel() for p in module.parameters())
    # the same batches on both sides (batch documents per forward pass): float sums then match bit for bit,
    # so near-tied ranks cannot flip between the two ledgers
    local = load_model(str(model_dir), device="cpu", batch_tokens=args.batch * (L + 1))
    corpus = Corpus([Document(f"u{i % 8}", f"d{i}", t) for i, t in enumerate(texts)])

    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LMLEAK_QUIET": "1"}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lmleak.cli.main",
            "--device",
            "cpu",
            "serve",
            str(model_dir),
            "--port",
            str(port),
            "--name",
            "bench",
            "--batch-tokens",
            str(args.batch * (L + 1)),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1) as r:
                    json.loads(r.read())
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    print(
                        f"lmleak serve did not start: {server.stderr.read().decode()[-2000:]}",
                        file=sys.stderr,
                    )
                    return 1
                time.sleep(0.2)
        url = (
            f"http://127.0.0.1:{port}/v1?tokenizer={model_dir}&cache=off&batch={args.batch}"
            f"&concurrency={args.concurrency}#bench"
        )
        api = HTTPModel(url)
        print(
            f"threads: 1 (client and server each)  load: {os.getloadavg()[0]:.2f}  torch: {torch.__version__}  "
            f"dtype: float32  tier: {api.tier}"
        )
        print(
            f"model: GPT-2, {nparams / 1e6:.2f}M parameters; documents: {args.docs} x {L} words (one token each); "
            f"batch {args.batch} documents per request, concurrency {args.concurrency}"
        )

        def ledger(model, name):  # type: ignore[no-untyped-def]
            with tempfile.TemporaryDirectory() as d:
                return build_ledger(model, corpus, Path(d) / name, shard_size=args.docs)

        ledger(local, "a"), ledger(api, "b")  # warm-up
        t_in, t_http = [], []
        a = b = None
        req0 = api.counters.requests
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            a = ledger(local, "a")
            t_in.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            b = ledger(api, "b")
            t_http.append(time.perf_counter() - t0)
        assert a is not None and b is not None
        requests = (api.counters.requests - req0) / args.rounds
        if not (
            np.array_equal(a.token_ids, b.token_ids)
            and np.array_equal(a.ranks, b.ranks)
            and np.allclose(a.logprobs, b.logprobs, atol=1e-4)
            and np.allclose(a.top1_logprobs, b.top1_logprobs, atol=1e-4)
        ):
            same_ids = a.token_ids.shape == b.token_ids.shape and np.array_equal(a.token_ids, b.token_ids)
            detail = (
                f"ids equal: {same_ids}; rank mismatches: {int(np.sum(a.ranks != b.ranks)) if same_ids else '-'}; "
                f"max |logprob diff|: {float(np.max(np.abs(a.logprobs - b.logprobs))) if same_ids else '-'}"
            )
            print(
                f"MISMATCH: the ledger through HTTP differs from the in-process ledger ({detail})",
                file=sys.stderr,
            )
            return 1
        n_tok = len(a.ranks)
        print(
            f"in-process: {min(t_in):.3f} s ({n_tok / min(t_in):,.0f} tok/s); through lmleak serve: "
            f"{min(t_http):.3f} s ({n_tok / min(t_http):,.0f} tok/s); {requests:.0f} requests per ledger"
        )
        print(f"median ratio: {np.median([i / h for i, h in zip(t_in, t_http, strict=True)]):.2f}")
        print(f"http_vs_inprocess_ledger: {min(t_in) / min(t_http):.2f}")
        print(
            f"correctness: ok ({n_tok} tokens: ids and ranks equal, max |logprob diff| "
            f"{float(np.max(np.abs(a.logprobs - b.logprobs))):.2e})"
        )
        return 0
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
