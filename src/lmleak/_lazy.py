"""PEP 562 lazy names for a package: each resolves, importing its module, on first use.

The packages that use it (``lmleak``, ``lmleak.attacks``, ``lmleak.serve``) are imported by the
CLI to build its options; importing the modules behind their names would pull in torch, numpy or
fastapi before ``--help`` could answer.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, homes: Mapping[str, str], *, cache: bool = False) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` that finds ``name`` in the module ``homes[name]``.

    A home starting with ``.`` is relative to ``package``. With ``cache`` the value is stored in the
    package, so later look-ups skip ``__getattr__``. Other names raise :class:`AttributeError`.
    """

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(homes[name], package), name)
        if cache:
            setattr(sys.modules[package], name, value)
        return value

    return __getattr__
