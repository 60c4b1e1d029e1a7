"""The CLI's options generated from an analysis's settings (issue 34): :func:`takes`.

A command declares the settings it takes as one parameter annotated with the settings class; the
decorator replaces that parameter, for Typer, by one option per field (:class:`lmleak.settings.Meta`
gives the spelling, help, range, panel) and, when the command runs, builds the settings object from
the options given. The option's range is checked by :func:`lmleak.cli.common.number` at parse time
(click's one line naming the option); the settings' own rules across fields run when the object is
built, and their errors name the option (``--num-per-side``), not the field.

Example:
    >>> from dataclasses import dataclass
    >>> from lmleak.settings import Settings, setting
    >>> @dataclass(frozen=True)
    ... class Demo(Settings):
    ...     shots: int = setting(3, help="Examples in the prefix.", ge=1)
    ...     blind: bool = setting(True, help="Also the blind baseline.")
    >>> @takes(settings=Demo)
    ... def demo(name: str, settings: Demo) -> Demo:
    ...     return settings
    >>> list(inspect.signature(demo).parameters)
    ['name', 'shots', 'blind']
    >>> demo("x", shots=2, blind=False)
    Demo(shots=2, blind=False)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer

from lmleak.cli.common import number, renamed
from lmleak.errors import ConfigError
from lmleak.settings import Settings, item_kind, meta_of, number_kind


def option_name(f: dataclasses.Field[Any]) -> str:
    """The field's CLI spelling: its :class:`~lmleak.settings.Meta` ``option``, else ``--name-with-hyphens``."""
    return meta_of(f).option or "--" + f.name.replace("_", "-")


def _cli_type(tp: Any) -> Any:
    """The type Typer parses for annotation ``tp``: a tuple of items is a repeatable option."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    core = args[0] if typing.get_origin(tp) in (typing.Union, type(int | None)) and len(args) == 1 else tp
    if typing.get_origin(core) in (tuple, list):
        return list[typing.get_args(core)[0]] | None  # type: ignore[misc]
    return tp


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return inspect.Parameter.empty


def option_parameters(cls: type[Settings], *, skip: tuple[str, ...] = ()) -> list[inspect.Parameter]:
    """One keyword-only Typer parameter per CLI field of ``cls`` (not in ``skip``), in field order."""
    hints = typing.get_type_hints(cls)
    params = []
    for f in dataclasses.fields(cls):
        m = meta_of(f)
        if not m.cli or f.name in skip:
            continue
        tp, default, name = hints[f.name], _default(f), option_name(f)
        decls = [f"{name}/--no-{name[2:]}" if tp is bool and default is True and not m.option else name]
        if m.short:
            decls.append(m.short)
        extra: dict[str, Any] = {}
        kind = number_kind(tp) or item_kind(tp)
        if kind is not None:  # a number, or each item of a repeatable one
            extra["parser"] = number(kind, ge=m.ge, gt=m.gt, le=m.le, lt=m.lt)
        option = typer.Option(*decls, help=m.help, hidden=m.hidden, rich_help_panel=m.panel, **extra)
        cli_default = None if isinstance(default, tuple) else default
        params.append(
            inspect.Parameter(
                f.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=cli_default,
                annotation=Annotated[_cli_type(tp), option],
            )
        )
        if m.old:  # the deprecated spelling: hidden, None unless given
            old = typer.Option(m.old, hidden=True, **extra)
            annotation = Annotated[_cli_type(tp) | None, old]  # type: ignore[valid-type]
            params.append(
                inspect.Parameter(
                    _old(f.name), inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
                )
            )
    return params


def _old(name: str) -> str:
    """The parameter that receives field ``name``'s deprecated spelling (:class:`Meta` ``old``)."""
    return f"{name}__old_spelling"


def _command_path(ctx: Any) -> str:
    """The path below ``lmleak`` (``mia``, ``dp-audit run``) of the command whose click context is
    ``ctx`` (None: the current one), for a deprecation line."""
    from typer._click.globals import get_current_context  # typer's own click (a vendored copy)

    ctx, names = ctx or get_current_context(silent=True), []
    while ctx is not None and ctx.parent is not None:  # the root (lmleak itself) left out
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(names))


def _context(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The command's click context among its arguments (a command that takes ``ctx``), else None."""
    return next((v for v in (*args, *kwargs.values()) if isinstance(v, typer.Context)), None)


def with_old_spellings(
    cls: type[Settings], values: dict[str, Any], old: dict[str, Any], ctx: Any = None
) -> dict[str, Any]:
    """``values`` with each deprecated spelling given in ``old`` (field name -> value) taken in
    :func:`~lmleak.cli.common.renamed`'s way: one line naming the new spelling; both given and
    different, refused."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    where = _command_path(ctx)
    for name, value in old.items():
        f = fields[name]
        spelt = f"{where} {meta_of(f).old}".strip(), f"{where} {option_name(f)}".strip()
        values[name] = renamed(value, values.get(name, _default(f)), *spelt, default=_default(f))
    return values


def build_settings(cls: type[Settings], values: dict[str, Any], **given: Any) -> Any:
    """``cls`` from the options' ``values`` (lists made tuples, an unset list its default) and the
    fields the command fills itself (``given``); a refused value names the option."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = dict(given)
    for name, value in values.items():
        if isinstance(value, list):
            value = tuple(value)
        elif value is None and isinstance(_default(fields[name]), tuple):
            continue  # a repeatable option not given: the field's default
        kwargs[name] = value
    try:
        return cls(**kwargs)
    except ConfigError as e:
        if e.field in fields and e.path is None:
            raise ConfigError(e.reason, field=option_name(fields[e.field]), hint=e.hint) from None
        raise


def replace_settings(settings: Any, **changes: Any) -> Any:
    """``settings`` with ``changes`` (checked again; a refused value names the option)."""
    values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    return build_settings(type(settings), {**values, **changes})


def takes(**groups: type[Settings] | tuple[type[Settings], tuple[str, ...]]) -> Callable[..., Any]:
    """Give the command one option per field of each settings class: ``@takes(settings=Cls)``, or
    ``@takes(settings=(Cls, ("methods",)))`` to leave fields out (the command passes them to
    :func:`build_settings` itself). The command's parameter of that name receives the object."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(command, eval_str=True)
        specs = {p: (g, ()) if isinstance(g, type) else g for p, g in groups.items()}
        own = {n for n in sig.parameters if n not in specs}
        params: list[inspect.Parameter] = []
        names: dict[str, tuple[type[Settings], list[str]]] = {}
        for p in sig.parameters.values():
            if p.name not in specs:
                params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if params else p)
                continue
            cls, skip = specs[p.name]
            generated = option_parameters(cls, skip=skip)
            clash = own & {g.name for g in generated}
            if clash:
                raise TypeError(f"{command.__name__}: {sorted(clash)} is both an option and a setting")
            names[p.name] = (cls, [g.name for g in generated if not g.name.endswith("__old_spelling")])
            params.extend(generated)

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            for pname, (cls, fields) in names.items():
                if pname in kwargs and isinstance(kwargs[pname], cls):  # called from Python with the object
                    continue
                values = {n: kwargs.pop(n) for n in fields if n in kwargs}
                old = {n: kwargs.pop(_old(n)) for n in fields if _old(n) in kwargs}
                old = {n: v for n, v in old.items() if v is not None}
                kwargs[pname] = build_settings(
                    cls, with_old_spellings(cls, values, old, _context(args, kwargs)) if old else values
                )
            return command(*args, **kwargs)

        run.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return decorate
