"""A 38 MB prompt against ``lmleak serve``: refused at once, the server's memory untouched; and 300
stalled uploads: shed, ``/health`` fast, memory bounded and handed back.

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

Slow clients (a third ``lmleak serve`` with default limits): ``--slow N`` sockets (300) each send
headers declaring a body of ``--slow-kb`` + 40 KB and ~``--slow-kb`` KB of it (1,000: ~1 MB, under
the 1 MiB limit), then stall. While they hold, ``/health`` is asked 5 times on fresh connections
and the server's ``VmRSS`` is sampled every 50 ms: ``slow_clients_peak_rss_mb`` (goal < 600) and
``health_latency_under_slow_clients_s`` (the slowest of the 5; goal < 1). Beside them: how many
uploads were answered 429 at once, how many the server held and closed at its read deadline (408),
and the RSS after the sockets closed. The phase is bounded (each socket 5 s per send, the whole
phase ``--slow-hold`` s of holding).

Usage: ``python benchmarks/bench_serve.py [--mb 38] [--rounds 3] [--slow 300] [--slow-only]``
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
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


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 15 s."""
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


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


class _Sampler:
    """The peak ``VmRSS`` of a process, sampled every 50 ms in a thread until :meth:`stop`."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._done = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, _mib(self.pid, "VmRSS"))
            self._done.wait(0.05)

    def stop(self) -> float:
        self._done.set()
        self._thread.join(timeout=5)
        return max(self.peak, _mib(self.pid, "VmRSS"))


def _stall(port: int, kb: int) -> socket.socket:
    """One upload that sends ~``kb`` KB of a declared ``kb`` + 40 KB body and stops (its socket)."""
    sent = b'{"prompt": "' + b"a" * (kb * 1000 - 12)
    head = (
        f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(sent) + 40_000}\r\n\r\n"
    ).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(head + sent)
    except OSError:  # refused and closed by the server, or it stopped reading: it is still a stalled client
        pass
    return s


def _answer(s: socket.socket) -> str:
    """What a stalled upload got: the status of the server's answer, ``closed``, or ``open``."""
    s.settimeout(0.01)
    try:
        data = s.recv(64)
    except TimeoutError:
        return "open"
    except OSError:
        return "closed"
    return data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/1.1 ") else "closed"


def _health(base: str) -> float:
    import httpx

    t0 = time.perf_counter()
    r = httpx.get(base + "/health", timeout=30)
    elapsed = time.perf_counter() - t0
    if r.status_code != 200:
        raise RuntimeError(f"/health under slow clients got HTTP {r.status_code}")
    return elapsed


# long: one measured sequence (start, stall, probe, release) with its prints
def slow_clients(model_dir: Path, n: int, kb: int, hold_s: float) -> tuple[float, float]:
    """``(peak RSS MiB, slowest /health s)`` of a server under ``n`` stalled uploads (prints the rest)."""
    proc, base = _start(model_dir)
    port = int(base.rsplit(":", 1)[1])
    try:
        rss0 = _mib(proc.pid, "VmRSS")
        sampler = _Sampler(proc.pid)
        t0 = time.monotonic()
        socks = [_stall(port, kb) for _ in range(n)]
        opened = time.monotonic() - t0
        health = [_health(base) for _ in range(5)]
        early = [_answer(s) for s in socks]
        time.sleep(max(0.0, hold_s - (time.monotonic() - t0)))
        late = [_answer(s) if e == "open" else e for s, e in zip(socks, early, strict=True)]
        peak = sampler.stop()
        for s in socks:
            s.close()
        time.sleep(2)
        rss_after = _mib(proc.pid, "VmRSS")
        after_close = _health(base)
    finally:
        _stop(proc)

    def counts(xs: list[str]) -> str:
        return ", ".join(f"{k}: {xs.count(k)}" for k in sorted(set(xs)))

    print(
        f"slow clients: {n} uploads of ~{kb:,} KB each, opened in {opened:.1f} s; answered at once: "
        f"{counts(early)}; after {hold_s:g} s: {counts(late)}"
    )
    print(
        f"server RSS: {rss0:.0f} MiB before, peak {peak:.0f} MiB under them, {rss_after:.0f} MiB 2 s after "
        f"they closed; /health under them: {', '.join(f'{h:.3f}' for h in health)} s; after: {after_close:.3f} s"
    )
    return peak, max(health)


# long: a benchmark script is one sequence of measurements and prints
def main() -> int:
    import argparse

    import httpx
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=38.0, help="prompt size in MB")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--slow", type=int, default=300, help="stalled uploads (0: skip)")
    ap.add_argument("--slow-kb", type=int, default=1000, help="KB each stalled upload sends")
    ap.add_argument("--slow-hold", type=float, default=40.0, help="seconds the stalled uploads are held")
    ap.add_argument("--slow-only", action="store_true", help="only the slow-client measurement")
    args = ap.parse_args()
    if not 0 <= args.slow <= 2000 or not 1 <= args.slow_kb <= 4000 or not 0 <= args.slow_hold <= 300:
        ap.error("--slow 0..2000, --slow-kb 1..4000, --slow-hold 0..300")

    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    model_dir = _model(tmp)
    if args.slow_only:
        return _slow_lines(model_dir, args)
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
            _stop(proc)
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
    return _slow_lines(model_dir, args) if args.slow else 0


def _slow_lines(model_dir: Path, args: Any) -> int:
    try:
        peak, health = slow_clients(model_dir, args.slow, args.slow_kb, args.slow_hold)
    except (OSError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"slow_clients_peak_rss_mb: {peak:.0f}")
    print(f"health_latency_under_slow_clients_s: {health:.3f}")
    print(f"goal (< 600 MB, /health < 1 s): {'met' if peak < 600 and health < 1 else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
