"""A 38 MB prompt against ``lmleak serve``: refused at once, the server's memory untouched.

Prints ``oversized_request_seconds: X`` — the wall time from sending a 38 MB ``/v1/completions``
body (pre-encoded: the client's own JSON encoding is not counted) to receiving the refusal, min over
the rounds (goal < 1 s; the unguarded server tokenised the whole text first and went past 6 GB) —
and ``serve_peak_rss_mb: X``, the server process's peak resident memory (``VmHWM``) over the whole
run (goal < 1024). Both servers are separate ``lmleak serve`` processes, as a deployment would be:

- **default** limits: the body is refused with 413 from its ``Content-Length``, before a byte of it
  is read;
- **--max-body 64 MiB**: the body is read and parsed, and the prompt is refused with 400
  (``context_length_exceeded``) by the character bound, before the tokenizer sees it
  (``oversized_request_seconds_body_read``).

Beside them (context, not goals): the server still answers a small request right after; a
``max_tokens: 1e9`` and an ``n: 10000`` request are refused with 400; the same 38 MB refusal
through the official openai client (which spends most of its time encoding the JSON itself).
Exits 1 if any oversized or unbounded request is not refused.

Model: a small GPT-2 (2 layers, width 64, random weights) with a byte-level BPE tokenizer; 1 torch
thread in the server.

Usage: ``python benchmarks/bench_serve.py [--mb 38] [--rounds 3]``
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mib(pid: int, key: str) -> float:
    """``VmHWM`` (peak) or ``VmRSS`` (now) of a process, in MiB (from /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{key} not in /proc/{pid}/status")


def _start(model_dir: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LMLEAK_QUIET": "1"}
    cmd = [sys.executable, "-m", "lmleak.cli.main", "--device", "cpu", "serve", str(model_dir)]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port), "--name", "bench", *extra],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            err = proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            raise RuntimeError(f"lmleak serve did not start: {err}")
        time.sleep(0.2)


def _post(base: str, body: bytes) -> tuple[float, int, dict[str, Any]]:
    import httpx

    t0 = time.perf_counter()
    r = httpx.post(
        base + "/v1/completions", content=body, headers={"content-type": "application/json"}, timeout=120
    )
    elapsed = time.perf_counter() - t0
    try:
        answer = r.json()
    except ValueError:
        answer = {}
    return elapsed, r.status_code, answer


def _model(tmp: Path) -> Path:
    import numpy as np

    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = ["".join(rng.choice(letters, size=int(rng.integers(2, 9)))) for _ in range(4000)]
    tok = build_tokenizer(
        [" ".join(words[i : i + 50]) for i in range(0, 4000, 50)], kind="bpe", vocab_size=2000
    )
    module = new_small_gpt(len(tok), SmallGPTConfig(n_positions=512, n_embd=64, n_layer=2, n_head=2), seed=0)
    return save_small_model(module, tok, tmp / "model")


# long: a benchmark script is one sequence of measurements and prints
def main() -> int:
    import argparse

    import httpx
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=38.0, help="prompt size in MB")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    model_dir = _model(tmp)
    n_chars = int(args.mb * 1_000_000)
    prompt = ("lorem ipsum dolor sit amet " * (n_chars // 27 + 1))[:n_chars]
    body = json.dumps({"model": "bench", "prompt": prompt, "max_tokens": 1}).encode()
    print(
        f"threads: 1 (server)  load: {os.getloadavg()[0]:.2f}  torch: {torch.__version__}  dtype: float32  "
        f"cpus: {os.cpu_count()}"
    )
    print(
        f"model: GPT-2 2 layers width 64, byte-level BPE; prompt: {len(prompt):,} characters, body {len(body):,} bytes"
    )

    failures: list[str] = []
    servers = {}
    try:
        servers["default"] = _start(model_dir)
        servers["raised"] = _start(model_dir, "--max-body", str(64 << 20))
        rss0 = {k: _mib(p.pid, "VmRSS") for k, (p, _) in servers.items()}
        times: dict[str, list[float]] = {"default": [], "raised": []}
        for _ in range(args.rounds):  # interleaved: one refusal from each server per round
            for key, want, code in (
                ("default", 413, "request_too_large"),
                ("raised", 400, "context_length_exceeded"),
            ):
                elapsed, status, answer = _post(servers[key][1], body)
                times[key].append(elapsed)
                got = (answer.get("error") or {}).get("code")
                if status != want or got != code:
                    failures.append(
                        f"{key}: the oversized prompt got HTTP {status} ({got}), not {want} ({code})"
                    )
        base = servers["default"][1]
        small_t, small_status, small = _post(
            base, json.dumps({"prompt": "lorem ipsum", "max_tokens": 4}).encode()
        )
        if small_status != 200:
            failures.append(f"a small request after the oversized ones got HTTP {small_status}")
        unbounded = {
            "max_tokens: 1e9": {"prompt": "lorem", "max_tokens": 1e9},
            "max_tokens: 10**9": {"prompt": "lorem", "max_tokens": 10**9},
            "n: 10000": {"prompt": "lorem", "n": 10_000},
        }
        refused = []
        for label, b in unbounded.items():
            t, status, _ = _post(base, json.dumps(b).encode())
            refused.append(f"{label} -> {status} in {t:.3f} s")
            if status != 400:
                failures.append(f"{label} got HTTP {status}, not 400")
        from openai import APIStatusError, OpenAI

        client = OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=120)
        t0 = time.perf_counter()
        try:
            client.completions.create(model="bench", prompt=prompt, max_tokens=1)
            failures.append("the openai client's oversized request was answered")
            oa = "answered"
        except APIStatusError as e:
            oa = f"{e.status_code}"
        oa_t = time.perf_counter() - t0
        peaks = {k: _mib(p.pid, "VmHWM") for k, (p, _) in servers.items()}
        alive = all(p.poll() is None for p, _ in servers.values())
    except (httpx.HTTPError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        for proc, _ in servers.values():
            proc.terminate()
        for proc, _ in servers.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    stopped = {k: p.returncode for k, (p, _) in servers.items()}

    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    print(
        f"rounds: {args.rounds} (interleaved); server RSS after start: {rss0['default']:.0f} / {rss0['raised']:.0f} MiB"
    )
    print(
        f"default limits (1 MiB body): 413 in min {min(times['default']):.3f} s, median {med['default']:.3f} s"
    )
    print(
        f"--max-body 64 MiB: 400 context_length_exceeded in min {min(times['raised']):.3f} s, median {med['raised']:.3f} s"
    )
    print(
        f"after them a small request: HTTP {small_status} in {small_t:.3f} s; also refused: {'; '.join(refused)}"
    )
    print(f"through the openai client (it encodes the 38 MB JSON itself): HTTP {oa} in {oa_t:.3f} s")
    print(
        f"server peak RSS: default {peaks['default']:.0f} MiB, --max-body 64 MiB {peaks['raised']:.0f} MiB; "
        f"both alive until SIGTERM: {alive}; exit codes after SIGTERM: {stopped}"
    )
    print(f"oversized_request_seconds: {min(times['default']):.3f}")
    print(f"oversized_request_seconds_body_read: {min(times['raised']):.3f}")
    print(f"serve_peak_rss_mb: {max(peaks.values()):.0f}")
    goal = min(times["default"]) < 1.0 and min(times["raised"]) < 1.0 and max(peaks.values()) < 1024
    print(f"goal (< 1 s, < 1024 MB): {'met' if goal else 'missed'}")
    if failures:
        print("FAILED: " + "; ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
