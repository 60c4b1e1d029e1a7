"""The shape rules of docs/ARCHITECTURE.md that import-linter cannot check, read from the source.

- Library code (everything outside ``lmleak.cli``) imports ``lmleak`` modules at module level; an
  import inside a function must say why on the line above (``# lazy: <reason>``), e.g. that the
  module loads torch and ``lmleak --help`` must not. The CLI imports its library lazily by design
  (start-up time), so it is exempt.
- Functions stay under 60 lines; a longer one says why on a ``# long: <reason>`` line directly
  above its ``def`` or above its decorators.
- Modules stay under 700 lines; a longer one says why on a ``# long: <reason>`` line within its
  first 30 lines (:data:`TOP_LINES`: what a reader sees on opening the file, above a long docstring
  if need be; issue 34), or is listed in :data:`BEING_SPLIT` while another change splits it.
- ``tests/`` mirrors ``src/lmleak/``: each source module has ``tests/<pkg>/test_<module>.py`` or a
  row in tests/README.md's table of modules skipped or tested elsewhere, naming why.

Each rule has a check that it would fail on a planted violation, so none of them can pass vacuously.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "lmleak"
MAX_LINES = 60
MAX_MODULE_LINES = 700
TOP_LINES = 30  # a long module's "# long:" reason sits within its first TOP_LINES lines

#: Modules over :data:`MAX_MODULE_LINES` that a change in flight is splitting or editing (issue 29
#: item 4), and the split to make. An entry whose module is now short fails, so the list only shrinks.
BEING_SPLIT: dict[str, str] = {}  # render/html.py was split into cards.py, tables.py and plots.py


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _comment_above(lines: list[str], lineno: int, tag: str) -> bool:
    """Whether the non-blank line above 1-based ``lineno`` is a ``# tag:`` comment."""
    i = lineno - 2
    while i >= 0 and not lines[i].strip():
        i -= 1
    return i >= 0 and lines[i].strip().startswith(f"# {tag}:")


def unexplained_lazy_imports(text: str, name: str = "<src>") -> list[str]:
    """``lmleak`` imports inside functions without a ``# lazy:`` line above them."""
    lines = text.splitlines()
    out = []
    for fn in _functions(ast.parse(text)):
        for node in ast.walk(fn):
            mods = []
            if isinstance(node, ast.ImportFrom):
                mods = [node.module or ""] if node.level == 0 else ["lmleak (relative)"]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            if any(m.split(".")[0] == "lmleak" or m.startswith("lmleak ") for m in mods):
                if not _comment_above(lines, node.lineno, "lazy"):
                    out.append(f"{name}:{node.lineno} in {fn.name}()")
    return sorted(set(out))


def long_functions(text: str, name: str = "<src>", limit: int = MAX_LINES) -> list[str]:
    """Functions longer than ``limit`` lines (decorators included) without a ``# long:`` line above."""
    lines = text.splitlines()
    out = []
    for fn in _functions(ast.parse(text)):
        first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
        n = fn.end_lineno - first + 1
        said = _comment_above(lines, first, "long") or _comment_above(lines, fn.lineno, "long")
        if n > limit and not said:
            out.append(f"{name}:{fn.lineno} {fn.name}() is {n} lines")
    return out


def unexplained_long_module(text: str, name: str = "<src>", limit: int = MAX_MODULE_LINES) -> list[str]:
    """A module over ``limit`` lines without a ``# long: <reason>`` comment line within its first
    :data:`TOP_LINES` lines (a reason further down is not seen by the reader who opens the file)."""
    lines = text.splitlines()
    if len(lines) <= limit:
        return []
    if any(re.match(r"# long: \S", line) for line in lines[:TOP_LINES]):
        return []
    return [f"{name} is {len(lines)} lines"]


def test_library_imports_lmleak_at_module_level():
    bad = []
    for p in _sources():
        rel = p.relative_to(SRC.parent).as_posix()
        if not rel.startswith("lmleak/cli/"):
            bad += unexplained_lazy_imports(p.read_text(), rel)
    assert not bad, "move these imports to module level, or say why above them (# lazy: ...):\n" + "\n".join(
        bad
    )


def test_functions_are_short_or_say_why():
    bad = []
    for p in _sources():
        bad += long_functions(p.read_text(), p.relative_to(SRC.parent).as_posix())
    assert not bad, (
        f"split these (> {MAX_LINES} lines) or say why above the def (# long: ...):\n" + "\n".join(bad)
    )


def test_the_checks_catch_planted_violations():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES + 1))
    planted = f"def f():\n    from lmleak.errors import ConfigError\n{body}\n"
    assert unexplained_lazy_imports(planted) == ["<src>:2 in f()"]
    assert long_functions(planted) == [f"<src>:1 f() is {MAX_LINES + 3} lines"]
    explained = (
        f"# long: a table\ndef f():\n    # lazy: a test\n    from lmleak.errors import ConfigError\n{body}\n"
    )
    assert unexplained_lazy_imports(explained) == []
    assert long_functions(explained) == []


def test_modules_are_short_or_say_why_at_their_top():
    bad, split = [], []
    for p in _sources():
        rel = p.relative_to(SRC).as_posix()
        long = unexplained_long_module(p.read_text(), rel)
        if rel in BEING_SPLIT:
            split += [] if long else [rel]
        else:
            bad += long
    assert not bad, (
        f"split these (> {MAX_MODULE_LINES} lines) or say why within their first {TOP_LINES} lines "
        "(# long: ...):\n" + "\n".join(bad)
    )
    assert not split, "now short or explained: remove from BEING_SPLIT:\n" + "\n".join(split)


def test_the_module_check_catches_a_long_module_without_a_reason_at_its_top():
    body = "\n".join(f"x{i} = {i}" for i in range(MAX_MODULE_LINES))
    assert unexplained_long_module(f'"""Doc."""\n\nimport os\n{body}\n') == ["<src> is 703 lines"]
    assert unexplained_long_module(f'"""Doc."""\n\n# long: a table\nimport os\n{body}\n') == []
    # anywhere within the first TOP_LINES lines: above a long docstring, or after the imports
    long_doc = '"""Doc.\n' + "\n" * 40 + '"""\n'
    assert unexplained_long_module(f"# long: a table\n{long_doc}import os\n{body}\n") == []
    assert unexplained_long_module(f'"""Doc."""\nimport os\n# long: a table\n{body}\n') == []
    top = "\n".join(f"y{i} = {i}" for i in range(TOP_LINES - 1))
    assert unexplained_long_module(f"{top}\n# long: line {TOP_LINES}\n{body}\n") == []
    # a reason below line TOP_LINES does not count (after a long docstring), nor one without a reason
    for late in (
        f"{long_doc}# long: a table\nimport os\n{body}\n",
        f"{top}\nz = 0\n# long: line 31\n{body}\n",
    ):
        assert (
            late.splitlines().index(next(ln for ln in late.splitlines() if ln.startswith("# long")))
            >= TOP_LINES
        )
        assert unexplained_long_module(late) == [f"<src> is {len(late.splitlines())} lines"]
    assert unexplained_long_module(f'"""Doc."""\n# long:\nimport os\n{body}\n') == ["<src> is 703 lines"]
    assert unexplained_long_module(f"# long: no docstring, a table\n{body}\n") == []
    assert unexplained_long_module(f'"""Doc."""\n{body[:500]}\n') == []  # short


def _readme_rows() -> set[str]:
    text = (ROOT / "tests" / "README.md").read_text()
    return set(re.findall(r"^\|\s*`([^`]+\.py)`", text, flags=re.M))


def unmirrored(sources: list[Path], tests_dir: Path, listed: set[str]) -> list[str]:
    """Source modules with neither ``tests/<pkg>/test_<module>.py`` nor a row in tests/README.md."""
    out = []
    for p in sources:
        rel = p.relative_to(SRC)
        if p.name == "__init__.py":
            continue
        if not (tests_dir / rel.parent / f"test_{p.stem}.py").exists() and rel.as_posix() not in listed:
            out.append(rel.as_posix())
    return out


def test_tests_mirror_the_source_tree():
    missing = unmirrored(_sources(), ROOT / "tests", _readme_rows())
    assert not missing, (
        "add tests/<pkg>/test_<module>.py, or a row in tests/README.md saying why not:\n" + "\n".join(missing)
    )


def test_the_mirror_check_catches_a_module_without_tests(tmp_path):
    fake = SRC / "attacks" / "not_a_module_xyz.py"  # never created: only its path is compared
    assert unmirrored([fake], ROOT / "tests", _readme_rows()) == ["attacks/not_a_module_xyz.py"]
