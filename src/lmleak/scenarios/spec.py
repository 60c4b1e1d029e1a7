"""Scenario files in YAML: load (unknown keys rejected with a "did you mean"), dump, round-trip.

A file holds one scenario mapping, or ``scenarios:`` with a list of them, optionally with a
``predictions`` / ``gold`` block per scenario for :mod:`lmleak.scenarios.runner`::

    scenarios:
      - name: K+A+R+
        attack: mlm_generation
        knowledge: [full_name]
        anonymization: identity          # hipaa | redaction:regex | dp:3 | {kind: dp, epsilon: 3}
        resources:
          access: fill_mask              # top_k | scores | generation | weights | fill_mask
          items: [public_corpus:hipaa]
        target: [diseases]               # or membership, any
        predictions: runs/kpp/pairs.csv  # runner only
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lmleak.errors import ConfigError, did_you_mean
from lmleak.safe_yaml import load_yaml
from lmleak.scenarios.types import Scenario

RUNNER_KEYS = ("predictions", "gold")
TOP_KEYS = ("scenarios", "gold", "defaults")


def scenario_to_yaml_dict(s: Scenario) -> dict[str, Any]:
    """The YAML mapping of a scenario (structured resources, list-valued knowledge and target)."""
    d: dict[str, Any] = {}
    if s.name is not None:
        d["name"] = s.name
    d["attack"] = s.attack
    d["knowledge"] = list(s.knowledge.categories)
    d["anonymization"] = s.anonymization.to_str()
    d["resources"] = {"access": s.resources.access, "items": s.resources.to_list()}
    t = s.target.to_str()
    d["target"] = list(s.target.categories) if s.target.categories else t
    if s.notes is not None:
        d["notes"] = s.notes
    return d


def dump_scenarios(scenarios: list[Scenario]) -> str:
    """YAML text for ``scenarios`` that :func:`load_scenarios` reads back to equal values.

    Example:
        >>> from lmleak.scenarios.types import Knowledge, Resources
        >>> s = Scenario("mia", Knowledge(), "dp:3", Resources((), access="scores"), "membership", name="dp")
        >>> load_scenarios_text(dump_scenarios([s]))[0] == s
        True
    """
    import yaml

    return yaml.safe_dump(
        {"scenarios": [scenario_to_yaml_dict(s) for s in scenarios]}, sort_keys=False, allow_unicode=True
    )


def load_entries(
    text: str, *, path: str | None = None, runner: bool = False
) -> tuple[list[tuple[Scenario, dict[str, Any]]], dict[str, Any]]:
    """Scenarios with their runner fields, and the file's top-level extras (``gold``)."""
    data = load_yaml(text, path=path)  # alias-bounded; errors name the file and line, never echo the document
    if data is None:
        raise ConfigError("empty scenario file", path=path)
    if not isinstance(data, dict):
        raise ConfigError("a scenario file must be a mapping", path=path)
    top: dict[str, Any] = {}
    if "scenarios" in data:
        for k in data:
            if k not in TOP_KEYS:
                raise ConfigError(
                    f"unknown top-level key {k!r}.{did_you_mean(str(k), TOP_KEYS)}", path=path, field=str(k)
                )
        items = data["scenarios"]
        top = {k: v for k, v in data.items() if k != "scenarios"}
        if not isinstance(items, list) or not items:
            raise ConfigError("'scenarios' must be a non-empty list", path=path, field="scenarios")
    else:
        items = [data]
    defaults = top.get("defaults") or {}
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConfigError(f"scenario #{i + 1} must be a mapping", path=path, field="scenarios")
        item = {**defaults, **item}
        extra = {k: item.pop(k) for k in RUNNER_KEYS if k in item} if runner else {}
        try:
            sc = Scenario.from_dict(item, where=path)
        except ConfigError as e:
            name = item.get("name") or f"#{i + 1}"
            raise ConfigError(f"scenario {name}: {e.reason}", path=path, field=e.field, hint=e.hint) from None
        out.append((sc, extra))
    names = [s.name for s, _ in out if s.name]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ConfigError(f"duplicate scenario names {sorted(dup)}", path=path, field="name")
    return out, top


def load_scenarios_text(text: str, *, path: str | None = None) -> list[Scenario]:
    """Scenarios from YAML text (see the module docstring for the shape)."""
    return [s for s, _ in load_entries(text, path=path)[0]]


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Scenarios from a YAML file; errors name the file and the offending key."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError("scenario file not found", path=p)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text (byte {e.start}); save the file as UTF-8", path=p) from None
    return load_scenarios_text(text, path=str(p))
