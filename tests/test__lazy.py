"""lmleak._lazy: a package's names resolve on first use, from their home module, and only theirs."""

from __future__ import annotations

import sys
import types

import pytest

from lmleak._lazy import lazy_getattr


def _package(name: str) -> types.ModuleType:
    return types.ModuleType(name)


def test_a_name_resolves_from_its_home_and_an_unknown_name_is_an_attribute_error(monkeypatch):
    pkg = _package("lazy_demo_pkg")
    monkeypatch.setitem(sys.modules, "lazy_demo_pkg", pkg)
    get = lazy_getattr("lazy_demo_pkg", {"dumps": "json", "sqrt": "math"})
    import json
    import math

    assert get("dumps") is json.dumps and get("sqrt") is math.sqrt
    assert "dumps" not in vars(pkg)  # without cache every look-up goes through __getattr__
    with pytest.raises(AttributeError, match="'lazy_demo_pkg' has no attribute 'loads'"):
        get("loads")


def test_with_cache_the_value_is_stored_in_the_package(monkeypatch):
    pkg = _package("lazy_cache_pkg")
    monkeypatch.setitem(sys.modules, "lazy_cache_pkg", pkg)
    get = lazy_getattr("lazy_cache_pkg", {"OrderedDict": "collections"}, cache=True)
    from collections import OrderedDict

    assert get("OrderedDict") is OrderedDict and vars(pkg)["OrderedDict"] is OrderedDict


def test_lmleaks_own_packages_resolve_their_exported_names():
    import lmleak
    import lmleak.attacks
    import lmleak.serve

    for pkg in (lmleak, lmleak.attacks, lmleak.serve):
        for name in pkg.__all__:
            assert getattr(pkg, name) is not None, f"{pkg.__name__}.{name}"
