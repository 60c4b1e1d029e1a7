"""The layer contracts in pyproject.toml ([tool.importlinter]) hold, and they would catch a break.

The same check as ``lint-imports`` (``make lint``), run through import-linter's API so the default
suite enforces the layers too.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

importlinter = pytest.importorskip("importlinter")

from importlinter import configuration  # noqa: E402
from importlinter.application import use_cases  # noqa: E402
from importlinter.domain.contract import registry  # noqa: E402

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


@pytest.fixture(scope="module")
def options():
    configuration.configure()
    opts = use_cases.read_user_options(str(PYPROJECT))
    use_cases._register_contract_types(opts)
    return opts


@pytest.fixture(scope="module")
def graph(options):
    return use_cases._build_graph(
        root_package_names=options.session_options["root_packages"],
        cache_dir=None,
        include_external_packages=True,
        exclude_type_checking_imports=False,
        verbose=False,
    )


def _contract(options, kind):
    (opts,) = [c for c in options.contracts_options if c["type"] == kind][:1] or [None]
    assert opts is not None, f"no {kind} contract in pyproject.toml"
    cls = registry.get_contract_class(opts["type"])
    return cls(name=opts["name"], session_options=options.session_options, contract_options=opts)


def test_every_contract_is_kept(options, graph):
    broken = []
    for opts in options.contracts_options:
        cls = registry.get_contract_class(opts["type"])
        contract = cls(name=opts["name"], session_options=options.session_options, contract_options=opts)
        check = contract.check(copy.deepcopy(graph), verbose=False)
        if not check.kept:
            broken.append(f"{opts['name']}: {check.metadata}")
    assert not broken, "run `lint-imports` (PYTHONPATH=src) for details:\n" + "\n".join(broken)


def test_the_layers_contract_catches_an_upward_import(options, graph):
    layers = _contract(options, "layers")
    g = copy.deepcopy(graph)
    g.add_import(
        importer="lmleak.data.corpus", imported="lmleak.report.leakage", line_number=1, line_contents="x"
    )
    assert not layers.check(g, verbose=False).kept


def test_the_cycle_contract_catches_a_cycle_inside_a_package(options, graph):
    acyclic = _contract(options, "acyclic_siblings")
    g = copy.deepcopy(graph)
    # train.plain is below train.trainer (trainer imports it); the reverse closes a cycle
    g.add_import(
        importer="lmleak.train.plain", imported="lmleak.train.trainer", line_number=1, line_contents="x"
    )
    assert not acyclic.check(g, verbose=False).kept
