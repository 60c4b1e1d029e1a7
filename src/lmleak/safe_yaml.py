"""YAML for user files (audit configs, templates, scenarios) with bounds on aliases.

``yaml.safe_load`` builds no objects but happily expands aliases: nine nested lists of nine aliases
(a "billion laughs") become 9^9 values, gigabytes in memory and in any error message that prints
the document. :func:`load_yaml` composes the node graph first (aliases still shared), refuses more
than :data:`MAX_ALIASES` alias uses or a graph that would expand to more than
:data:`MAX_EXPANDED_NODES` values, and only then constructs Python objects. Errors are
:class:`~lmleak.errors.ConfigError` naming the file, the line and the rule, never quoting the
document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lmleak.errors import ConfigError

MAX_ALIASES = 100
MAX_EXPANDED_NODES = 100_000
MAX_BYTES = 16 * 2**20  # a config, template or scenario file is kilobytes; refuse reading a huge one


class _TooManyAliases(Exception):
    def __init__(self, line: int) -> None:
        self.line = line


class _BoundedLoader(yaml.SafeLoader):
    """A SafeLoader that counts alias uses while composing."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _TooManyAliases(self.peek_event().start_mark.line + 1)
        return super().compose_node(parent, index)


def expanded_size(node: Any) -> int:
    """Values the composed node graph holds once every alias is expanded (shared nodes counted per use).

    Example:
        >>> loader = _BoundedLoader("a: &x [1, 2]\\nb: [*x, *x]")
        >>> expanded_size(loader.get_single_node())  # {a: [1, 2], b: [[1, 2], [1, 2]]}
        13
    """
    memo: dict[int, int] = {}

    def size(n: Any) -> int:
        key = id(n)
        if key in memo:
            return memo[key]
        memo[key] = 1  # a cycle (a recursive alias) counts once instead of looping
        total = 1
        if isinstance(n, yaml.SequenceNode):
            total += sum(size(c) for c in n.value)
        elif isinstance(n, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in n.value)
        memo[key] = total
        return total

    return size(node)


def load_yaml(text: str, *, path: str | Path | None = None) -> Any:
    """Parse one YAML document safely (see the module docstring).

    Example:
        >>> load_yaml("k: [1, 3]\\nt: 1.0")
        {'k': [1, 3], 't': 1.0}
        >>> laughs = "a: &a [x, x, x, x, x, x, x, x, x]\\n" + "".join(
        ...     f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\\n" for p, c in zip("abcdefgh", "bcdefghi"))
        >>> load_yaml(laughs, path="bomb.yaml")
        Traceback (most recent call last):
        ...
        lmleak.errors.ConfigError: bomb.yaml: YAML aliases would expand the document to 490329064 values (limit 100000). Fix: write the values out instead of repeating aliases
    """
    loader = None
    try:
        loader = _BoundedLoader(text)
        node = loader.get_single_node()
        if node is None:
            return None
        n = expanded_size(node)
        if n > MAX_EXPANDED_NODES:
            raise ConfigError(
                f"YAML aliases would expand the document to {n} values (limit {MAX_EXPANDED_NODES})",
                path=path,
                hint="write the values out instead of repeating aliases",
            )
        return loader.construct_document(node)
    except _TooManyAliases as e:
        raise ConfigError(
            f"more than {MAX_ALIASES} YAML aliases",
            path=path,
            line=e.line,
            hint="write the values out instead of repeating aliases",
        ) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        # e.problem / e.context only: str(e) quotes the offending lines of the document
        reason = " ".join(x for x in (e.context, e.problem) if x) or "syntax error"
        raise ConfigError(
            f"not valid YAML: {reason}",
            path=path,
            line=None if mark is None else mark.line + 1,
            hint="fix the YAML syntax at that line",
        ) from None
    except yaml.reader.ReaderError as e:
        raise ConfigError(
            f"not valid YAML: character {e.character!r} at position {e.position} is not allowed",
            path=path,
            hint="remove control characters (NUL...) from the file",
        ) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"not valid YAML: {type(e).__name__}", path=path) from None
    except RecursionError:
        raise ConfigError("YAML nested too deeply", path=path, hint="flatten the document") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml_file(path: str | Path) -> Any:
    """Read and parse a YAML file: missing, unreadable, huge or non-UTF-8 files are ConfigErrors."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(
            "file does not exist" if not p.exists() else "not a file", path=p, hint="check the path"
        )
    if p.stat().st_size > MAX_BYTES:
        raise ConfigError(f"file is larger than {MAX_BYTES // 2**20} MiB; a YAML config is kilobytes", path=p)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text (byte {e.start})", path=p, hint="save the file as UTF-8") from None
    except OSError as e:
        raise ConfigError(
            f"cannot read: {e.strerror}", path=p, hint="check the path and its permissions"
        ) from None
    return load_yaml(text, path=p)
