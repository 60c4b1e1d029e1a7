"""``make bench``: every script in ``benchmarks/`` run once with the command its section of
docs/benchmarks.md states, one after the other, each in the environment the page states.

The page is the one list: a script runs with the first ``bash`` command under its heading
(``## `bench_x.py` ``), so what ``make bench`` measures is what the page says was measured, and a
script without a section is an error here (tests/test_benchmarks_doc.py checks the same). For each
script it prints the command, then the script's own output as it runs, then one line: its exit
status, wall seconds and the load average before and after. A script that refuses to run here
(exit 2 with its reason, as ``bench_gpu.py`` does without a GPU) is listed as skipped; any other
non-zero exit fails the run (exit 1) after the rest have run.

Usage: ``python tools/run_benchmarks.py [--only bench_dedup bench_probe] [--list]``
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
SECTION = re.compile(r"^## `(bench_\w+)\.py`\s*$", re.M)
BASH = re.compile(r"```bash\n(.*?)```", re.S)
SKIPPED = 2  # a script's exit status when it cannot run on this machine (no GPU, no vLLM)


@dataclass(frozen=True)
class Bench:
    """One script and the command its section of the page runs it with."""

    name: str
    command: str


def page_environment(text: str) -> dict[str, str]:
    """The ``export`` line the page states for every command, as variables (``$PWD`` is the
    repository root).

    Example:
        >>> page_environment("```bash\\nexport A=1 B=$PWD/src\\n```")["B"].endswith("/src")
        True
    """
    for block in BASH.findall(text):
        for line in block.splitlines():
            if line.startswith("export "):
                pairs = (word.split("=", 1) for word in shlex.split(line)[1:])
                return {k: v.replace("$PWD", str(ROOT)) for k, v in pairs}
    raise SystemExit(f"error: {PAGE}: no `export` line for the benchmarks' environment. Fix: add one")


def benches(text: str) -> list[Bench]:
    """Each ``## `bench_x.py` `` section's script and the first ``python benchmarks/bench_x.py``
    command under it, in the page's order.

    Example:
        >>> benches("## `bench_a.py`\\n\\n```bash\\npython benchmarks/bench_a.py --n 3\\n```\\n")
        [Bench(name='bench_a', command='python benchmarks/bench_a.py --n 3')]
    """
    heads = list(SECTION.finditer(text))
    found = []
    for head, nxt in zip(heads, [*heads[1:], None], strict=True):
        body = text[head.end() : nxt.start() if nxt else len(text)]
        name = head.group(1)
        commands = [
            line.strip()
            for block in BASH.findall(body)
            for line in block.splitlines()
            if line.strip().startswith(f"python benchmarks/{name}.py")
        ]
        if not commands:
            raise SystemExit(
                f"error: {PAGE}: section `{name}.py` has no `python benchmarks/{name}.py` command. "
                "Fix: add its command in a ```bash block"
            )
        found.append(Bench(name, commands[0]))
    return found


def missing_sections(found: list[Bench]) -> list[str]:
    """Scripts in ``benchmarks/`` the page has no section for."""
    have = {b.name for b in found}
    return sorted(p.stem for p in (ROOT / "benchmarks").glob("bench_*.py") if p.stem not in have)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these scripts (bench_dedup, ...)")
    p.add_argument("--list", action="store_true", help="print each script's command and run nothing")
    args = p.parse_args()
    text = PAGE.read_text(encoding="utf-8")
    found = benches(text)
    if missing := missing_sections(found):
        print(
            f"error: {PAGE}: no section for {', '.join(missing)}. Fix: add one with its command",
            file=sys.stderr,
        )
        return 2
    if args.only:
        unknown = sorted(set(args.only) - {b.name for b in found})
        if unknown:
            print(f"error: --only: no benchmark {', '.join(unknown)}. Fix: one of `--list`", file=sys.stderr)
            return 2
        found = [b for b in found if b.name in args.only]
    if args.list:
        for b in found:
            print(f"{b.name}: {b.command}")
        return 0
    env = {**os.environ, **page_environment(text)}
    python = sys.executable
    results: list[tuple[str, int, float]] = []
    for b in found:
        print(f"\n## {b.name}\n$ {b.command}", flush=True)
        argv = shlex.split(b.command)
        before, t0 = _load(), time.perf_counter()
        rc = subprocess.run([python, *argv[1:]], cwd=ROOT, env=env, check=False).returncode
        wall = time.perf_counter() - t0
        print(
            f"# {b.name}: exit {rc}, {wall:.0f} s wall; load average {before} before, {_load()} after",
            flush=True,
        )
        results.append((b.name, rc, wall))
    failed = [n for n, rc, _ in results if rc not in (0, SKIPPED)]
    skipped = [n for n, rc, _ in results if rc == SKIPPED]
    total = sum(w for _, _, w in results)
    print(
        f"\nbenchmarks: {len(results) - len(failed) - len(skipped)} ran, {len(skipped)} skipped"
        f"{' (' + ', '.join(skipped) + ')' if skipped else ''}, {len(failed)} failed"
        f"{' (' + ', '.join(failed) + ')' if failed else ''}; {total:.0f} s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
