"""docs/benchmarks.md is the list ``make bench`` runs (``tools/run_benchmarks.py``): every script in
``benchmarks/`` has a section there whose command names only flags the script defines, and a row in
the page's headline table."""

from __future__ import annotations

import doctest
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import run_benchmarks  # noqa: E402

TEXT = run_benchmarks.PAGE.read_text(encoding="utf-8")
FOUND = run_benchmarks.benches(TEXT)


def test_every_script_has_a_section():
    scripts = sorted(p.stem for p in (ROOT / "benchmarks").glob("bench_*.py"))
    assert run_benchmarks.missing_sections(FOUND) == []
    assert sorted(b.name for b in FOUND) == scripts  # and no section for a script that is gone


@pytest.mark.parametrize("bench", FOUND, ids=lambda b: b.name)
def test_command_uses_the_scripts_own_flags(bench):
    source = (ROOT / "benchmarks" / f"{bench.name}.py").read_text(encoding="utf-8")
    defined = set(re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", source))
    used = {w.split("=", 1)[0] for w in shlex.split(bench.command) if w.startswith("--")}
    assert used <= defined, f"{bench.name}: {sorted(used - defined)} not among {sorted(defined)}"


@pytest.mark.parametrize("bench", FOUND, ids=lambda b: b.name)
def test_headline_table_row(bench):
    assert re.search(rf"^\| `{bench.name}` \| ", TEXT, re.M), f"no headline row for {bench.name}"


def test_environment_and_doctests():
    env = run_benchmarks.page_environment(TEXT)
    assert env["OMP_NUM_THREADS"] == "1" and env["PYTHONPATH"] == str(ROOT / "src")
    failures, tried = doctest.testmod(run_benchmarks)
    assert tried >= 2 and failures == 0


def test_a_section_without_its_command_is_refused():
    with pytest.raises(SystemExit, match=r"section `bench_a.py` has no `python benchmarks/bench_a.py`"):
        run_benchmarks.benches("## `bench_a.py`\n\n```bash\npython benchmarks/bench_b.py\n```\n")
