"""The README and docs/ hold together (issue 29): a README a newcomer reads in ten minutes, links
that lead somewhere, an index that lists every page, and commands that exist.

- README.md has at most 150 lines.
- Every relative link in README.md and docs/*.md names a file that exists, and a heading of it when
  the link has an anchor (GitHub's anchor rule: lower case, punctuation dropped, spaces to hyphens).
- Every docs/*.md page is linked from the index, docs/README.md.
- Every ``lmleak ...`` in a code block of README.md (and of the docs pages written to be run as
  they stand, ``RUNNABLE``) parses as a command line of the Typer app: the command exists, every
  option it names exists, and every required one is given (the command is not run). Every
  ``lmleak ...`` in inline code of README.md names an existing command and existing options.

Pages another branch is adding (``PENDING``) may be linked before they exist; once they exist they
are checked like any other page.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from lmleak.cli.main import build_app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
MAX_README_LINES = 150

#: pages other branches are writing at the same time as this one (issue 29): docs/demo.md and
#: docs/benchmarks.md (the end-to-end check), docs/users.md (users.parquet, issue 27)
PENDING: set[Path] = set()  # every page linked so far exists

#: docs pages whose code blocks hold only complete command lines (no `...`), checked like the README's
RUNNABLE = (DOCS / "commands.md", DOCS / "install.md")

_FENCE = re.compile(r"^\s*(```+|~~~+)(.*)$")
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def split_fences(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The text outside fenced code blocks (fences blanked, line count kept) and the blocks, each as
    (info string, body)."""
    outside, blocks = [], []
    fence, info, body = None, "", []
    for line in text.splitlines():
        m = _FENCE.match(line)
        if fence is None and m:
            fence, info, body = m.group(1), m.group(2).strip(), []
            outside.append("")
        elif fence is not None and m and m.group(1).startswith(fence[0]) and len(m.group(1)) >= len(fence):
            blocks.append((info, "\n".join(body)))
            fence = None
            outside.append("")
        elif fence is not None:
            body.append(line)
            outside.append("")
        else:
            outside.append(line)
    return "\n".join(outside), blocks


def slug(heading: str) -> str:
    """GitHub's anchor for a heading.

    >>> slug("`lmleak serve`: an API for any model lmleak loads")
    'lmleak-serve-an-api-for-any-model-lmleak-loads'
    >>> slug("Measured: `lmleak demo --base smollm2-135m` on the CPU")
    'measured-lmleak-demo---base-smollm2-135m-on-the-cpu'
    >>> slug("Where each paper's method lives")
    'where-each-papers-method-lives'
    """
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link's text, not its target
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated one gets -1, -2 ... as on GitHub)."""
    outside, _ = split_fences(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for line in outside.splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every Markdown link outside code (fenced blocks and inline code)."""
    outside, _ = split_fences(path.read_text(encoding="utf-8"))
    found = []
    for number, line in enumerate(outside.splitlines(), 1):
        line = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        found.extend((number, m.group(1)) for m in _LINK.finditer(line))
    return found


def link_problems(path: Path) -> list[str]:
    """Relative links of ``path`` whose file, or heading, does not exist."""
    problems = []
    for number, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # http:, https:, mailto: — not a file of this repository
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)}:{number}: ({target})"
        if not dest.exists():
            if dest not in PENDING:
                problems.append(f"{where}: no file {file_part}")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: {dest.relative_to(ROOT)} has no heading with anchor #{anchor}")
    return problems


def doc_pages() -> list[Path]:
    return sorted(p for p in DOCS.glob("*.md") if p != INDEX)


# ---------------------------------------------------------------------------------------------
# command lines


def command_lines(text: str) -> list[str]:
    """The ``lmleak ...`` command lines of a shell block: continuation lines joined, comments,
    ``$ `` prompts, variable assignments in front and a trailing ``&`` dropped, and ``&&``, ``;``
    and ``|`` splitting one line into its commands."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip().removeprefix("$ ")
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            raise AssertionError(f"cannot split {line!r}: {e}") from e
        command: list[str] = []
        skip = False
        for word in [*words, ";"]:
            if skip:
                skip = False
            elif re.fullmatch(r"\d*(>>?|<)(&\d+)?", word):
                skip = not word.endswith(tuple("0123456789"))  # `> FILE` drops FILE; `2>&1` stands alone
            elif word in ("&&", ";", "|", "||", "&"):
                while command and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", command[0]):
                    command = command[1:]
                if command and command[0] == "lmleak":
                    out.append(shlex.join(command))
                command = []
            else:
                command.append(word)
    return out


class CommandError(Exception):
    """A command line names a command that does not exist."""


def _is_group(cmd: Any) -> bool:
    return hasattr(cmd, "commands")  # Typer ships its own click: no isinstance against click's classes


def _option(cmd: Any, word: str) -> Any:
    """The option of ``cmd`` that ``word`` (``--name`` or ``--name=value``) names, or None."""
    name = word.split("=", 1)[0]
    for param in cmd.params:
        if param.param_type_name == "option" and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _takes_value(param: Any, word: str) -> bool:
    return not (param.is_flag or param.count) and "=" not in word


def _message(e: Exception) -> str:
    return e.format_message() if hasattr(e, "format_message") else str(e)


def _positionals(cmd: Any, words: list[str]) -> list[str]:
    """The words that are neither an option of ``cmd`` nor an option's value."""
    out, i = [], 0
    while i < len(words):
        param = _option(cmd, words[i]) if words[i].startswith("-") else None
        if param is not None:
            i += 2 if _takes_value(param, words[i]) else 1
            continue
        if not words[i].startswith("-"):
            out.append(words[i])
        i += 1
    return out


def walk(root: Any, argv: list[str]) -> tuple[list[Any], list[str], list[str]]:
    """Follow ``argv`` down the command tree: the commands passed through (root first), the path of
    names, and the words left for the last one. The words before a subcommand are the group's own
    options (``lmleak --max-requests 2000 audit ...``), parsed by the group; a word where a command
    name belongs that names none is an error."""
    chain, path, rest = [root], [], list(argv)
    while _is_group(chain[-1]):
        group = chain[-1]
        words = _positionals(group, rest)
        if not words or words[0] not in group.commands:
            if words and not group.params:  # a plain group: the first word must be a command
                raise CommandError(f"lmleak {' '.join(path)}: no command {words[0]!r}")
            break
        i = rest.index(words[0])
        if i:
            group.make_context(" ".join(["lmleak", *path]), rest[:i], resilient_parsing=False)
        path.append(words[0])
        chain.append(group.commands[words[0]])
        rest = rest[i + 1 :]
    return chain, path, rest


def parse_problem(root: Any, line: str) -> str | None:
    """Why ``line`` does not parse as a command line of the app (None when it does)."""
    try:
        chain, path, rest = walk(root, shlex.split(line)[1:])
        ctx = chain[-1].make_context(" ".join(["lmleak", *path]), rest, resilient_parsing=False)
        left = [*getattr(ctx, "protected_args", []), *ctx.args] if _is_group(chain[-1]) else []
        if left and not chain[-1].context_settings.get("ignore_unknown_options"):
            raise CommandError(f"lmleak {' '.join(path)}: no command {left[0]!r}")
    except typer.Exit:
        return None  # an eager option such as --help ran and exited: it exists
    except Exception as e:  # a usage error: an unknown command or option, a required one missing
        return f"{line}: {_message(e)}"
    return None


def name_problem(root: Any, line: str) -> str | None:
    """Why ``line`` (possibly partial: required options left out) names a command or an option that
    does not exist. A command that takes options beyond its parameters (``mia --methods``) must name
    them in its help."""
    try:
        chain, path, rest = walk(root, shlex.split(line)[1:])
    except Exception as e:  # a usage error: an unknown command, an unknown global option
        return f"{line}: {_message(e)}"
    cmd = chain[-1]
    if _is_group(cmd) and cmd.params and (words := _positionals(cmd, rest)):
        return f"{line}: lmleak {' '.join(path)} has no command {words[0]!r}"
    for word in rest:
        if not word.startswith("--") or word == "--help":
            continue
        if any(_option(c, word) for c in chain):
            continue
        if cmd.context_settings.get("ignore_unknown_options") and word in (cmd.help or ""):
            continue
        return f"{line}: lmleak {' '.join(path)} has no option {word}"
    return None


@pytest.fixture(scope="module")
def cli() -> Any:
    return typer.main.get_command(build_app())


# ---------------------------------------------------------------------------------------------
# the tests


def test_the_readme_is_at_most_150_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines: move a topic to docs/"


def test_every_relative_link_in_the_readme_and_docs_leads_to_a_file_and_heading():
    problems = [p for page in (README, *doc_pages(), INDEX) for p in link_problems(page)]
    assert not problems, "\n".join(problems)


def test_every_docs_page_is_listed_in_the_index():
    listed = {(INDEX.parent / t.partition("#")[0]).resolve() for _, t in links(INDEX)}
    missing = [p.name for p in doc_pages() if p.resolve() not in listed]
    assert not missing, f"add a line for each to docs/README.md: {missing}"


def test_every_lmleak_command_line_in_a_code_block_of_the_readme_parses(cli):
    lines = []
    for page in (README, *RUNNABLE):
        _, blocks = split_fences(page.read_text(encoding="utf-8"))
        lines += [
            ln for info, body in blocks if info in ("bash", "sh", "console", "") for ln in command_lines(body)
        ]
    assert len(lines) >= 3  # the newcomer path's three at least
    problems = [p for line in lines if (p := parse_problem(cli, line))]
    assert not problems, "\n".join(problems)


def test_every_lmleak_command_in_the_readme_inline_code_exists_with_its_options(cli):
    outside, _ = split_fences(README.read_text(encoding="utf-8"))
    spans = [m.group(2).strip() for m in _INLINE_CODE.finditer(outside)]
    lines = [ln for span in spans if span.startswith("lmleak") for ln in command_lines(span)]
    assert len(lines) >= 10  # the "I want to" table holds most of them
    problems = [p for line in lines if (p := name_problem(cli, line))]
    assert not problems, "\n".join(problems)


def test_the_checks_catch_planted_mistakes(cli, tmp_path, monkeypatch):
    # links: a missing file, a missing heading, a link inside code (ignored), a pending page
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    (tmp_path / "docs" / "other.md").write_text(
        "# Other\n\n## A `code` heading: yes\n\n```\n# not a heading\n```\n"
    )
    page.write_text(
        "[a](other.md#a-code-heading-yes) [b](missing.md) [c](other.md#not-a-heading)\n"
        "`[d](nowhere.md)` [e](https://example.org/x) [f](pending.md)\n"
    )
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    monkeypatch.setattr(f"{__name__}.PENDING", {tmp_path / "docs" / "pending.md"})
    problems = link_problems(page)
    assert len(problems) == 2, problems
    assert "no file missing.md" in problems[0] and "#not-a-heading" in problems[1]
    # commands: an unknown command, an unknown option, a missing required option, a global option
    assert parse_problem(cli, "lmleak audti audit.yaml")
    assert parse_problem(cli, "lmleak gate RUN --profile release --bogus 1")
    assert parse_problem(cli, "lmleak probe run --model M --out RUN")  # --subjects is required
    assert parse_problem(cli, "lmleak --max-requests 2000 audit audit.yaml") is None
    assert parse_problem(cli, "lmleak mia --model M --corpus C --out RUN --methods all") is None
    assert name_problem(cli, "lmleak train --mode crt") is None  # partial: required ones left out
    assert name_problem(cli, "lmleak train --mode crt --bogus")
    assert name_problem(cli, "lmleak mia --model M --nonsense-list a b")  # not in mia's help
    assert command_lines(
        "FOO=1 lmleak serve M --port 8000 &  # a comment\nmake demo\nlmleak \\\n  selftest\n"
        "lmleak audit --example > audit.yaml 2>&1"
    ) == ["lmleak serve M --port 8000", "lmleak selftest", "lmleak audit --example"]
    assert parse_problem(cli, "lmleak report --model M --corpus C --out RUN --k 1 3") is None
    assert parse_problem(cli, "lmleak kart reviw")
