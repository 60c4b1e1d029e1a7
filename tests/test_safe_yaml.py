"""Bounded YAML: ordinary documents load as yaml.safe_load would, alias bombs are refused by count."""

from __future__ import annotations

import pytest
import yaml

from lmleak.errors import ConfigError
from lmleak.safe_yaml import (
    MAX_ALIASES,
    MAX_EXPANDED_NODES,
    _BoundedLoader,
    expanded_size,
    load_yaml,
    load_yaml_file,
)


def _count_values(obj) -> int:
    """Slow oracle: values of the fully expanded Python object (each mapping key counts as one)."""
    if isinstance(obj, dict):
        return 1 + sum(1 + _count_values(v) for v in obj.values())
    if isinstance(obj, list):
        return 1 + sum(_count_values(v) for v in obj)
    return 1


@pytest.mark.parametrize(
    "text",
    [
        "a: &x [1, 2]\nb: [*x, *x]\n",
        "base: &b {k: 1, t: [a, b]}\nc: *b\nd: [*b, *b, 3]\n",
        "- 1\n- [2, [3, 4]]\n",
    ],
)
def test_expanded_size_counts_every_alias_use_and_loading_matches_safe_load(text):
    loader = _BoundedLoader(text)
    try:
        assert expanded_size(loader.get_single_node()) == _count_values(yaml.safe_load(text))
    finally:
        loader.dispose()
    assert load_yaml(text) == yaml.safe_load(text)


def test_an_empty_document_is_none():
    assert load_yaml("") is None


def test_too_many_aliases_are_refused_with_the_line():
    text = "a: &a 1\nb: [" + ", ".join(["*a"] * (MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(ConfigError, match=f"more than {MAX_ALIASES} YAML aliases"):
        load_yaml(text, path="x.yaml")
    ok = "a: &a 1\nb: [" + ", ".join(["*a"] * MAX_ALIASES) + "]\n"
    assert load_yaml(ok)["b"] == [1] * MAX_ALIASES


def test_a_wide_expansion_below_the_alias_limit_is_refused():
    # 10 aliases of a 10-item list, then 10 aliases of that: ~1000 values with 20 aliases ... up to 4 levels
    lines = ["l0: &l0 [" + ", ".join("x" for _ in range(20)) + "]"]
    for i in range(1, 5):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 20) + "]")
    with pytest.raises(ConfigError, match=f"limit {MAX_EXPANDED_NODES}"):
        load_yaml("\n".join(lines), path="wide.yaml")


def test_errors_name_the_file_and_line_but_do_not_quote_it(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_yaml("k: [1, 2\nsecret: hunter2\n", path="c.yaml")
    assert "c.yaml" in str(e.value) and "hunter2" not in str(e.value)
    with pytest.raises(ConfigError, match="does not exist"):
        load_yaml_file(tmp_path / "missing.yaml")
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"k: caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_yaml_file(bad)
    good = tmp_path / "good.yaml"
    good.write_text("k: [1, 3]\n", encoding="utf-8")
    assert load_yaml_file(good) == {"k": [1, 3]}
