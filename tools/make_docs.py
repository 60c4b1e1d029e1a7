"""``make docs``: every worked example in README.md and docs/ is printed by the code it shows (issue 34).

A worked example is a block between two markers in a page::

    <!-- example: NAME -->
    ```console
    $ lmleak dp-audit bound --m 1000 --r 100 --v 80 --delta 1e-5 --confidence 0.95
    epsilon_lower_bound: 0.955319
    ```
    <!-- /example -->

``tools/doc_examples.py`` says how NAME is made: the files it needs, the commands hidden before it
(a synthetic corpus, a tiny model: fixed seeds), and the commands shown, each run by ``bash`` in a
fresh temporary folder with the venv's ``lmleak`` first on ``PATH``. What they print (stdout and
stderr together, as a terminal shows them) replaces the block, after two normalisations: the
temporary folder's path is dropped (``/tmp/x/run/report.html`` reads ``run/report.html``) and an
example's declared substitutions (a duration, a date) put a stable placeholder in place of what
changes from run to run.

Every other block that reads like output (a fence with no language, ``text`` or ``console``, or a
line starting with ``$ ``) carries ``<!-- static: WHY -->`` on the line before it: a diagram, a
formula, a benchmark's measurement or a run too long for this machine, said so in the page's source.
``tests/test_docs_examples.py`` fails on a block that is neither, on a marker no example makes and
on an example no page shows, and re-runs the examples (the training ones under ``-m slow``) to fail
when a page no longer shows what the code prints.

Usage::

    python tools/make_docs.py                 # regenerate every example in place
    python tools/make_docs.py --check         # exit 1 naming each stale example, write nothing
    python tools/make_docs.py --fast          # only the examples that train nothing
    python tools/make_docs.py NAME ...        # only these (and the examples their group needs first)
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

_OPEN = re.compile(r"^<!-- example: ([a-z0-9][a-z0-9-]*) -->\s*$")
_CLOSE = re.compile(r"^<!-- /example -->\s*$")
_STATIC = re.compile(r"^\s*<!-- static: (.*\S) -->\s*$")
_FENCE = re.compile(r"^\s*(```+)(.*)$")
#: fence languages whose blocks read as a run's output (yaml, python, bash, json are inputs or code)
OUTPUT_LANGUAGES = ("", "text", "console")
_PROGRESS = re.compile(r"^\[lmleak\] [^:]+(?:: [^:]+)*: (?:started|done)\b")
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Cmd:
    """One command shown in an example.

    Attributes:
        line: the command as the page shows it after ``$ `` (``\\`` + newline continues it, as in bash).
        output: show what it prints (False: the command only, e.g. a training run's epoch table).
        keep: a regular expression; only the lines it matches are shown, each run of lines left out
            replaced by one ``...`` line (for a long table of which the page discusses a few rows).
        stop: a regular expression; output from the first line it matches on is left out, replaced by
            one ``...`` line (the head of a long summary).
        status: the exit status the command must end with (an example of an error exits 2).
        hidden: run in its place but not shown (a file the next command reads); with ``output`` its
            output is still shown (a page's text quoted without the command that extracted it).
    """

    line: str
    output: bool = True
    keep: str | None = None
    stop: str | None = None
    status: int = 0
    hidden: bool = False


@dataclass(frozen=True)
class Tolerance:
    """Numbers that may differ between two runs of the same example, and by how much.

    Two outputs match when they are equal line by line after every number is taken out, and each
    number is within ``rel`` (relative) or ``abs`` of the page's. ``reason`` says why the run is not
    deterministic; an example without a Tolerance must print the same bytes every time.
    """

    reason: str
    rel: float = 0.0
    abs: float = 0.0


@dataclass(frozen=True)
class Example:
    """One worked example: where it is shown and how it is made.

    Attributes:
        name: the marker's NAME.
        page: the page that shows it, relative to the repository root.
        commands: the commands shown, in order.
        setup: commands run first and not shown (a synthetic corpus, a tiny model).
        files: files written into the folder before anything runs (name -> text).
        group: examples of one group share one folder and run in the registry's order, so a later
            one can read an earlier one's run (default: a folder of its own).
        slow: it trains a model, or reads a large corpus (seconds to minutes): checked under
            ``pytest -m slow`` only, so the default suite's re-run stays short.
        subs: (pattern, placeholder) pairs applied to the output: what changes from run to run.
        tolerance: see Tolerance; None means the output must match exactly.
        language: the fence's language.
        env: variables set for every command, over the defaults (``COLUMNS``: a terminal wide
            enough that a long line is not wrapped where the page shows it whole).
    """

    name: str
    page: str
    commands: tuple[Cmd, ...]
    setup: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    group: str | None = None
    slow: bool = False
    subs: tuple[tuple[str, str], ...] = ()
    tolerance: Tolerance | None = None
    language: str = "console"
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Block:
    """A block of a page: the example's name (or None), the static reason (or None), where it is."""

    page: Path
    line: int  # 1-based, of the opening fence
    info: str
    body: str
    example: str | None
    static: str | None


def blocks(page: Path) -> list[Block]:
    """Every fenced block of a page, with the example marker around it or the static one before it.

    Raises:
        ValueError: a marker left open, a close without an open, or an example marker around
            anything but exactly one fenced block.
    """
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    example: str | None = None
    example_blocks = 0
    previous = ""  # the last non-blank line before a fence
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := _OPEN.match(line):
            if example is not None:
                raise ValueError(f"{page}:{i + 1}: example {m.group(1)!r} opens inside {example!r}")
            example, example_blocks = m.group(1), 0
        elif _CLOSE.match(line):
            if example is None or example_blocks != 1:
                raise ValueError(f"{page}:{i + 1}: a close marker without one example block before it")
            example = None
        elif m := _FENCE.match(line):
            fence, info = m.group(1), m.group(2).strip()
            j = i + 1
            while j < len(lines) and not (
                (c := _FENCE.match(lines[j])) and c.group(1).startswith(fence) and not c.group(2).strip()
            ):
                j += 1
            static = s.group(1) if (s := _STATIC.match(previous)) else None
            out.append(Block(page, i + 1, info, "\n".join(lines[i + 1 : j]), example, static))
            example_blocks += example is not None
            i = j
        if line.strip():
            previous = line
        i += 1
    if example is not None:
        raise ValueError(f"{page}: example {example!r} is not closed")
    return out


def reads_as_output(block: Block) -> bool:
    """A block a reader takes for something a command printed: no language, text or console, or a
    ``$ `` prompt line."""
    return block.info in OUTPUT_LANGUAGES or any(ln.startswith("$ ") for ln in block.body.splitlines())


def _environment(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LMLEAK_", "COLUMNS", "FORCE_COLOR"))}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])]),
        # one thread: the same floating-point sums on every machine, and a fair share of a busy one
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        TZ="UTC",
        COLUMNS="100",  # rich wraps tables at the terminal's width
        TERM="dumb",
        NO_COLOR="1",
        HOME=str(folder / ".home"),  # no user config or cache leaks in
        TMPDIR=str(folder / ".tmp"),
    )
    (folder / ".home").mkdir(exist_ok=True)
    (folder / ".tmp").mkdir(exist_ok=True)
    return env


def _shell(line: str, folder: Path, env: dict[str, str]) -> tuple[int, str]:
    p = subprocess.run(
        ["bash", "-c", line], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return p.returncode, p.stdout


def _kept(text: str, keep: str | None, stop: str | None = None) -> list[str]:
    lines = text.splitlines()
    if stop is not None:
        cut = next((i for i, ln in enumerate(lines) if re.search(stop, ln)), None)
        if cut is not None:
            lines = [*lines[:cut], "..."]
    if keep is None:
        return lines
    pattern, out = re.compile(keep), []
    for line in lines:
        if pattern.search(line):
            out.append(line)
        elif not out or out[-1] != "...":
            out.append("...")
    return out


def normalise(text: str, folder: Path, subs: Iterable[tuple[str, str]] = ()) -> str:
    """The temporary folder's path dropped, progress lines (``[lmleak] ledger: started``, ``... done
    in 5s``: their timing is the run's, not the result's) left out, trailing blanks trimmed, the
    example's substitutions made.

    >>> normalise("report: /tmp/x/run/report.html  \\n[lmleak] ledger: done in 5s\\nin /tmp/x", Path("/tmp/x"))
    'report: run/report.html\\nin .'
    """
    for root in {str(folder), str(folder.resolve())}:
        text = text.replace(root + "/", "").replace(root, ".")
    for pattern, placeholder in subs:
        text = re.sub(pattern, placeholder, text)
    return "\n".join(ln.rstrip() for ln in text.splitlines() if not _PROGRESS.match(ln))


def run_example(example: Example, folder: Path) -> str:
    """The body of the example's block: each shown command after ``$ `` and what it printed.

    Raises:
        RuntimeError: a setup command failed, or a shown one ended with another status than declared.
    """
    env = {**_environment(folder), **example.env}
    for name, text in example.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    for line in example.setup:
        status, out = _shell(line.replace("{root}", str(ROOT)), folder, env)
        if status:
            raise RuntimeError(f"{example.name}: setup `{line}` exited {status}:\n{out[-3000:]}")
    shown: list[str] = []
    for cmd in example.commands:
        status, out = _shell(cmd.line.replace("{root}", str(ROOT)), folder, env)
        if status != cmd.status:
            raise RuntimeError(
                f"{example.name}: `{cmd.line}` exited {status}, not {cmd.status}:\n{out[-3000:]}"
            )
        if not cmd.hidden:
            shown.append("$ " + cmd.line)
        if cmd.output:
            out = "\n".join(ln for ln in out.splitlines() if not _PROGRESS.match(ln))
            shown.extend(_kept(out, cmd.keep, cmd.stop))
    return normalise("\n".join(shown), folder, example.subs)


def run_examples(examples: Sequence[Example], log=None) -> dict[str, str]:
    """Every example's fresh body, by name; examples of one group share a folder, in order."""
    bodies: dict[str, str] = {}
    folders: dict[str, Path] = {}
    with tempfile.TemporaryDirectory(prefix="lmleak-docs-") as tmp:
        for example in examples:
            key = example.group or example.name
            if key not in folders:
                folders[key] = Path(tmp) / key
                folders[key].mkdir()
            t0 = time.perf_counter()
            bodies[example.name] = run_example(example, folders[key])
            if log:
                log(f"{example.name}: {time.perf_counter() - t0:.1f} s")
    return bodies


def with_group(examples: Sequence[Example], names: Iterable[str]) -> list[Example]:
    """The named examples and the earlier examples of their groups (whose runs they read), in order."""
    wanted = set(names)
    last = {e.group: i for i, e in enumerate(examples) if e.name in wanted and e.group}
    return [e for i, e in enumerate(examples) if e.name in wanted or i < last.get(e.group, -1)]


def shown_bodies(pages: Iterable[Path] = PAGES) -> dict[str, Block]:
    """The block each page shows now for each example, by name."""
    out: dict[str, Block] = {}
    for page in pages:
        for block in blocks(page):
            if block.example is not None:
                if block.example in out:
                    raise ValueError(f"{page}:{block.line}: example {block.example!r} is shown twice")
                out[block.example] = block
    return out


def matches(shown: str, fresh: str, tolerance: Tolerance | None) -> bool:
    """Whether a page's block still shows what the example prints now.

    >>> matches("right: 43 of 64 (0.253)", "right: 43 of 64 (0.253)", None)
    True
    >>> matches("right: 43 of 64 (0.253)", "right: 44 of 64 (0.253)", None)
    False
    >>> matches("ppl 480.1", "ppl 482.0", Tolerance("threads", rel=0.01))
    True
    >>> matches("ppl 480.1 of 5", "ppl 480.1 of 6", Tolerance("threads", abs=0.5))
    False
    """
    if shown == fresh:
        return True
    if tolerance is None:
        return False
    a, b = shown.splitlines(), fresh.splitlines()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if _NUMBER.sub("#", x) != _NUMBER.sub("#", y):
            return False
        for u, v in zip(_NUMBER.findall(x), _NUMBER.findall(y), strict=True):
            fu, fv = float(u), float(v)
            if abs(fu - fv) > max(tolerance.abs, tolerance.rel * max(abs(fu), abs(fv))):
                return False
    return True


def stale(examples: Sequence[Example], fresh: dict[str, str]) -> list[str]:
    """One message (with a diff) per example whose page shows another block than it prints."""
    shown = shown_bodies()
    out = []
    for e in examples:
        body = shown[e.name].body
        if not matches(body, fresh[e.name], e.tolerance):
            diff = "\n".join(
                difflib.unified_diff(
                    body.splitlines(), fresh[e.name].splitlines(), e.page, "fresh", lineterm=""
                )
            )
            out.append(f"{e.page}: example {e.name} is stale:\n{diff}")
    return out


def write(examples: Sequence[Example], fresh: dict[str, str]) -> list[str]:
    """Put each fresh body between its markers; the pages changed."""
    by_page: dict[str, list[Example]] = {}
    for e in examples:
        by_page.setdefault(e.page, []).append(e)
    changed = []
    for page, page_examples in by_page.items():
        path = ROOT / page
        text = path.read_text(encoding="utf-8")
        new = text
        for e in page_examples:
            pattern = re.compile(
                rf"(^<!-- example: {re.escape(e.name)} -->\n)```[^\n]*\n.*?^```\n(?=<!-- /example -->$)",
                re.S | re.M,
            )
            block = f"```{e.language}\n{fresh[e.name]}\n```\n"
            new, n = pattern.subn(lambda m, b=block: m.group(1) + b, new)
            if n != 1:
                raise ValueError(f"{page}: example {e.name}: {n} marked blocks, expected 1")
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).parent))
    from doc_examples import EXAMPLES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="only these examples")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is stale")
    parser.add_argument("--fast", action="store_true", help="only the examples that train nothing")
    args = parser.parse_args(argv)
    known = {e.name for e in EXAMPLES}
    if unknown := set(args.names) - known:
        parser.error(f"unknown examples: {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    chosen = with_group(EXAMPLES, args.names) if args.names else list(EXAMPLES)
    if args.fast:
        chosen = [e for e in chosen if not e.slow]
    fresh = run_examples(chosen, log=lambda s: print(s, file=sys.stderr))
    report = [e for e in chosen if not args.names or e.name in args.names]
    if args.check:
        problems = stale(report, fresh)
        print("\n\n".join(problems) or f"{len(report)} examples up to date")
        return 1 if problems else 0
    changed = write(report, fresh)
    print(f"{len(report)} examples generated; pages changed: {', '.join(changed) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
