"""One settings object per analysis (issue 34): a frozen dataclass whose fields say, once, what every
layer needs to know about a setting — its default, its help line, its range, its CLI panel.

The CLI's options are generated from the fields (:func:`lmleak.cli.options.takes`), the audit YAML's
sections are the same classes (:meth:`Settings.from_mapping`, did-you-mean errors), the Python API
passes them as they are, and the library's ``run_x(model, data, out, settings)`` reads them. A new
setting is one field in one class; nothing else repeats its name, default or range.

A field is declared with :func:`setting`::

    @dataclass(frozen=True)
    class ExampleSettings(Settings):
        sample_size: int = setting(1000, help="Texts drawn.", ge=1)
        engine: str = setting("local", help="Where it runs.", choices=("local", "ray"))

and checked once, in ``__post_init__`` (:meth:`Settings.__post_init__`): numbers by
:func:`lmleak.errors.check_number` (the rule the CLI's parser applies before a command runs),
names against their ``choices``, and a class's own cross-field rule in :meth:`Settings.check`.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Demo(Settings):
    ...     shots: int = setting(3, help="Examples in the prefix.", ge=1)
    ...     engine: str = setting("local", help="Where it runs.", choices=("local", "ray"))
    >>> Demo(shots=2)
    Demo(shots=2, engine='local')
    >>> Demo(shots=0)
    Traceback (most recent call last):
    ...
    lmleak.errors.ConfigError: field 'shots': must be a whole number >= 1, got 0
    >>> Demo.from_mapping({"shot": 2}, where="analyses.demo")
    Traceback (most recent call last):
    ...
    lmleak.errors.ConfigError: field 'analyses.demo.shot': unknown key 'shot'. Did you mean 'shots'? Fix: allowed keys here: engine, shots
"""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from lmleak.errors import ConfigError, check_number, did_you_mean

S = TypeVar("S", bound="Settings")

#: the key of a field's :class:`Meta` in its dataclass metadata
META = "lmleak"


@dataclass(frozen=True)
class Meta:
    """What a field says about itself beyond its type and default.

    Attributes:
        help: the CLI's help line (and the docs' description).
        option: the CLI spelling (default ``--`` + the name with hyphens; a bool that defaults to
            True also gets ``--no-...``); ``short`` an extra one-letter spelling.
        ge, gt, le, lt: the range of a number (:func:`lmleak.errors.check_number`).
        choices: the names a string may take.
        panel: the CLI help panel the option is listed under (None: the command's main panel).
        hidden: not shown in ``--help`` (still accepted).
        old: a deprecated CLI spelling that keeps working, hidden, and prints one line naming
            ``option`` (both given and different: refused).
        cli: an option of the CLI (False: the command fills it itself, e.g. a greedy list).
        yaml: a key of the audit YAML (False: a value only Python can give, e.g. a loaded model).
        note: the comment beside the key in the audit YAML (``lmleak audit --example`` and the
            config ``lmleak audit --model`` writes, :func:`noted_lines`): a field with a note is
            listed there even at its default, one without only when it differs from it.
    """

    help: str
    option: str | None = None
    short: str | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[str, ...] | None = None
    panel: str | None = None
    hidden: bool = False
    old: str | None = None
    cli: bool = True
    yaml: bool = True
    note: str | None = None


def setting(
    default: Any = dataclasses.MISSING,
    *,
    help: str,  # noqa: A002 - the word every CLI library uses
    factory: Any = dataclasses.MISSING,
    compare: bool = True,
    **meta: Any,
) -> Any:
    """A settings field: ``default`` (or ``factory`` for a mutable one) and its :class:`Meta`."""
    return dataclasses.field(
        default=default,
        default_factory=factory,
        compare=compare,
        repr=compare,
        metadata={META: Meta(help=help, **meta)},
    )


def meta_of(f: dataclasses.Field[Any]) -> Meta:
    """The field's :class:`Meta` (a plain field without one: its name as its help)."""
    m = f.metadata.get(META)
    return m if isinstance(m, Meta) else Meta(help=f.name.replace("_", " "), cli=False)


def number_kind(tp: Any) -> type | None:
    """``int`` or ``float`` when the annotation ``tp`` is that number (or it or None), else None."""
    args = [a for a in typing.get_args(tp) if a is not type(None)] if _is_union(tp) else [tp]
    if len(args) == 1 and args[0] in (int, float):
        return typing.cast(type, args[0])
    return None


def item_kind(tp: Any) -> type | None:
    """``int`` or ``float`` when ``tp`` is a tuple (or list) of that number, or one or None."""
    args = [a for a in typing.get_args(tp) if a is not type(None)] if _is_union(tp) else [tp]
    if len(args) == 1 and typing.get_origin(args[0]) in (tuple, list):
        return number_kind(typing.get_args(args[0])[0])
    return None


def _is_sequence(tp: Any) -> bool:
    """Whether the annotation ``tp`` is a tuple or list (or one or None)."""
    args = [a for a in typing.get_args(tp) if a is not type(None)] if _is_union(tp) else [tp]
    return any(typing.get_origin(a) in (tuple, list) for a in args)


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


@dataclass(frozen=True)
class Settings:
    """The base of every analysis's settings: fields declared with :func:`setting`, checked once."""

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            m, value = meta_of(f), getattr(self, f.name)
            if isinstance(value, list):  # frozen means immutable: a YAML or API list becomes a tuple
                value = tuple(value)
                object.__setattr__(self, f.name, value)
            if isinstance(value, str) and _is_sequence(hints[f.name]):
                raise ConfigError(
                    f"expected a list of values, got the string {value!r}",
                    field=f.name,
                    hint=f"give a tuple or list, e.g. ({value!r},)",
                )
            kind = number_kind(hints[f.name])
            if kind is not None and value is not None:
                check_number(value, f.name, integer=kind is int, ge=m.ge, gt=m.gt, le=m.le, lt=m.lt)
            item = item_kind(hints[f.name])
            for v in value if item is not None and isinstance(value, tuple) else ():  # each item's range
                check_number(v, f.name, integer=item is int, ge=m.ge, gt=m.gt, le=m.le, lt=m.lt)
            if m.choices is not None and value is not None and value not in m.choices:
                raise ConfigError(
                    f"unknown {f.name.replace('_', ' ')} {value!r}." + did_you_mean(str(value), m.choices),
                    field=f.name,
                    hint=f"use one of {', '.join(m.choices)}",
                )
        self.check()

    def check(self) -> None:
        """A class's rule across its fields (e.g. ``r <= m``); raise :class:`ConfigError`."""

    @classmethod
    def from_mapping(cls: type[S], data: Any, *, where: str = "", path: str | None = None) -> S:
        """The settings a YAML section (or any mapping) names: unknown keys refused with a
        did-you-mean, wrong types named, and the class's own checks, each error naming
        ``where.key`` and the file ``path``."""
        return typing.cast(S, build(cls, data, where, path))

    def to_dict(self) -> dict[str, Any]:
        """The YAML-able fields and their values (what :meth:`from_mapping` reads back)."""
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclasses.fields(self)
            if meta_of(f).yaml and f.compare
        }


# --- the audit YAML's lines: one note per field, written beside its key -------------------------


def yaml_scalar(v: Any) -> str:
    """A YAML flow scalar: a word or path plain when YAML reads it back as that string, any other
    string JSON-quoted (JSON strings are YAML); a float keeps its dot so YAML 1.1 reads a float.

    Example:
        >>> [yaml_scalar(x) for x in (None, True, 3, 1e-05, 2.0, "regex", "runs/a.b", "yes", "a: b")]
        ['null', 'true', '3', '1.0e-05', '2.0', 'regex', 'runs/a.b', '"yes"', '"a: b"']
        >>> yaml_scalar(["min_k", "zlib"])
        '[min_k, zlib]'
    """
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        r = repr(v)
        return r.replace("e", ".0e") if "e" in r and "." not in r else r
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(yaml_scalar(x) for x in v) + "]"
    s = str(v)
    if _PLAIN.fullmatch(s):
        import yaml

        if yaml.safe_load(s) == s:  # not a YAML 1.1 word such as yes, off or null
            return s
    return json.dumps(s, ensure_ascii=False)


_PLAIN = re.compile(r"[A-Za-z_./][\w./-]*")


def commented(text: str, note: str | None, col: int, width: int = 118) -> list[str]:
    """``text`` with ``note`` as its YAML comment from column ``col``, wrapped to ``width`` (the
    continuation lines are comments in the same column); a text that reaches ``col`` gets its
    comment on the lines below it.

    Example:
        >>> for line in commented("  k: 3", "the top-k of the tab attack, one or several", 10, 40):
        ...     print(line)
          k: 3    # the top-k of the tab attack,
                  # one or several
        >>> commented("  model: runs/a/model", "the model", 10)
        ['  model: runs/a/model', '          # the model']
    """
    if not note:
        return [text]
    parts = textwrap.wrap(note, max(width - col - 2, 30), break_on_hyphens=False, break_long_words=False)
    comments = [f"{'':<{col}}# {part}" for part in parts]
    if len(text) + 2 > col:
        return [text, *comments]
    return [text.ljust(col) + comments[0].lstrip(), *comments[1:]]


def is_default(obj: Settings, f: dataclasses.Field[Any]) -> bool:
    """Whether field ``f`` of ``obj`` holds its default."""
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    value = getattr(obj, f.name)
    return bool(value == (tuple(default) if isinstance(default, list) else default))


def noted_lines(obj: Settings, indent: str, col: int) -> list[str]:
    """The YAML lines of ``obj``'s keys: those with a note (each beside it) and those that differ
    from their default (``lmleak audit --example`` shows a class's defaults this way).

    Example:
        >>> @dataclass(frozen=True)
        ... class Demo(Settings):
        ...     shots: int = setting(3, help="Examples in the prefix.", note="k-shot: the first k")
        ...     seed: int = setting(0, help="Random seed.")
        >>> print("\\n".join(noted_lines(Demo(), "  ", 14)))
          shots: 3    # k-shot: the first k
        >>> print("\\n".join(noted_lines(Demo(seed=7), "  ", 14)))
          shots: 3    # k-shot: the first k
          seed: 7
    """
    lines: list[str] = []
    for f in dataclasses.fields(obj):
        m = meta_of(f)
        if m.yaml and (m.note is not None or not is_default(obj, f)):
            lines.extend(commented(f"{indent}{f.name}: {yaml_scalar(getattr(obj, f.name))}", m.note, col))
    return lines


# --- building a dataclass from a mapping (the audit YAML's rule, one place) ---------------------


def type_ok(value: Any, tp: Any) -> bool:
    """Whether ``value`` (parsed YAML) has the annotation ``tp``: ints are floats, bools are not
    numbers, a list is a list or tuple of its items."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return True
    if _is_union(tp):
        return any(type_ok(value, a) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if origin in (list, tuple):
        inner = typing.get_args(tp)[0]
        return isinstance(value, list | tuple) and all(type_ok(v, inner) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(tp, type) and isinstance(value, tp)


def build(cls: type, data: Any, where: str, path: str | None) -> Any:
    """Build dataclass ``cls`` from a mapping, rejecting unknown keys and wrong types."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"expected a mapping, got {type(data).__name__}", path=path, field=where or None)
    hints = typing.get_type_hints(cls)
    known = [f for f in dataclasses.fields(cls) if f.name != "base_dir" and meta_of(f).yaml]
    names = {f.name for f in known}
    for key in data:
        if key not in names:
            raise ConfigError(
                f"unknown key '{key}'." + did_you_mean(str(key), names),
                path=path,
                field=f"{where}.{key}" if where else str(key),
                hint=f"allowed keys here: {', '.join(sorted(names))}",
            )
    kwargs: dict[str, Any] = {}
    for f in known:
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError("required key is missing", path=path, field=f"{where}.{f.name}".strip("."))
            continue
        kwargs[f.name] = convert(data[f.name], hints[f.name], f"{where}.{f.name}".strip("."), path)
    try:
        return cls(**kwargs)
    except ConfigError as e:
        if e.path is not None:
            raise
        inner = f"{where}.{e.field}".strip(".") if e.field else where or None
        raise ConfigError(e.reason, path=path, field=inner, hint=e.hint) from None


def convert(value: Any, tp: Any, name: str, path: str | None) -> Any:
    """One YAML value as annotation ``tp``: a nested dataclass built (``true``: its defaults,
    ``false``/``null``: none), a scalar given for a list made a one-item list, types checked."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    target = args[0] if _is_union(tp) and len(args) == 1 else tp
    if isinstance(target, type) and dataclasses.is_dataclass(target):
        if value is None and target is not tp:
            return None
        if value is False and target is not tp:
            return None
        value = {} if value is None or value is True else value  # `report: true` means "with defaults"
        if issubclass(target, Settings):  # a class may read older spellings of its keys
            return target.from_mapping(value, where=name, path=path)
        return build(target, value, name, path)
    origin = typing.get_origin(target)
    if origin in (list, tuple) and dataclasses.is_dataclass(typing.get_args(target)[0]):
        if not isinstance(value, list) or not value:
            raise ConfigError("expected a non-empty list", path=path, field=name)
        inner = typing.get_args(target)[0]
        return [build(inner, v, f"{name}[{i}]", path) for i, v in enumerate(value)]
    if origin in (list, tuple) and isinstance(value, int | float | str) and not isinstance(value, bool):
        value = [value]  # `k: 1` means `k: [1]`
    if not type_ok(value, tp):
        raise ConfigError(
            f"expected {getattr(tp, '__name__', str(tp))}, got {value!r}", path=path, field=name
        )
    return tuple(value) if origin is tuple and value is not None else value
