"""The settings base (issue 34): a field's range, choices and YAML form declared once, and the CLI's
options generated from it (:mod:`lmleak.settings`, :mod:`lmleak.cli.options`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from lmleak.errors import ConfigError
from lmleak.settings import Settings, setting


@dataclass(frozen=True)
class Knobs(Settings):
    shots: int = setting(3, help="Examples in the prefix.", ge=1)
    share: float = setting(0.5, help="Share given.", gt=0, lt=1)
    groups: int | None = setting(None, help="At most this many groups.", ge=1)
    engine: str = setting("local", help="Where it runs.", choices=("local", "ray"))
    blind: bool = setting(True, help="Also the blind baseline.")
    extrapolate: bool = setting(False, help="Add the estimate.")
    references: tuple[str, ...] = setting((), help="A further reference.", option="--reference")
    windows: tuple[int, ...] = setting((1, 5), help="Window sizes.", cli=False)
    loaded: object = setting(None, help="A loaded model.", cli=False, yaml=False, compare=False)

    def check(self) -> None:
        if self.groups is not None and self.groups > 10 * self.shots:
            raise ConfigError("groups must be at most 10 x shots", field="groups")


def test_checks_run_once_when_built_from_python_yaml_or_replace():
    assert Knobs().shots == 3
    with pytest.raises(ConfigError, match="field 'shots': must be a whole number >= 1, got 0"):
        Knobs(shots=0)
    with pytest.raises(ConfigError, match="share.*< 1"):
        replace(Knobs(), share=1.0)
    with pytest.raises(ConfigError, match="unknown engine 'rey'. Did you mean 'ray'?"):
        Knobs(engine="rey")
    with pytest.raises(ConfigError, match="groups must be at most"):
        Knobs(shots=1, groups=11)
    assert Knobs(windows=[2, 3]).windows == (2, 3)  # a list is made a tuple (frozen)


def test_from_mapping_names_the_key_and_the_file():
    k = Knobs.from_mapping({"shots": 2, "references": "a", "windows": [1]}, where="analyses.x")
    assert (k.shots, k.references, k.windows) == (2, ("a",), (1,))
    with pytest.raises(ConfigError) as e:
        Knobs.from_mapping({"shot": 2}, where="analyses.x", path="audit.yaml")
    assert str(e.value).startswith(
        "audit.yaml: field 'analyses.x.shot': unknown key 'shot'. Did you mean 'shots'?"
    )
    with pytest.raises(ConfigError, match="field 'analyses.x.shots': must be a whole number >= 1"):
        Knobs.from_mapping({"shots": 0}, where="analyses.x", path="audit.yaml")
    with pytest.raises(ConfigError, match="field 'analyses.x.shots': expected int, got 'two'"):
        Knobs.from_mapping({"shots": "two"}, where="analyses.x")
    with pytest.raises(ConfigError, match="unknown key 'loaded'"):  # not a YAML key
        Knobs.from_mapping({"loaded": 1})
    assert Knobs.from_mapping(Knobs(shots=4).to_dict()) == Knobs(shots=4)


def test_each_item_of_a_tuple_of_numbers_is_checked():
    @dataclass(frozen=True)
    class Ks(Settings):
        k: tuple[int, ...] = setting((1, 3), help="Top-k values.", ge=1)

    assert Ks(k=[2, 5]).k == (2, 5)
    with pytest.raises(ConfigError, match="field 'k': must be a whole number >= 1, got 0"):
        Ks(k=(1, 0))


def test_null_for_an_optional_list_reads_as_none():
    """``methods: null`` (what ``lmleak audit --example`` writes for an unset list) is None, not a crash."""

    @dataclass(frozen=True)
    class Listed(Settings):
        methods: tuple[str, ...] | None = setting(None, help="Names.", note="null: the defaults")

    assert Listed.from_mapping({"methods": None}).methods is None
    assert Listed.from_mapping({"methods": ["a", "b"]}).methods == ("a", "b")


def test_noted_lines_read_back_as_the_settings_they_were_written_from():
    """The YAML lines of a settings object (its noted keys, and every key off its default) parse
    back into the same object: the written config and ``--example`` cannot drift from the class."""
    import yaml

    from lmleak.settings import noted_lines

    @dataclass(frozen=True)
    class Noted(Settings):
        shots: int = setting(3, help="Examples.", ge=1, note="k-shot: the first k " * 8)
        share: float = setting(0.5, help="Share given.", gt=0, lt=1)
        names: tuple[str, ...] | None = setting(None, help="Names.", note="null: all")
        loaded: object = setting(None, help="A loaded model.", yaml=False, compare=False)

    for obj in (Noted(), Noted(share=0.25, names=("a b", "c: d"))):
        lines = noted_lines(obj, "  ", 20)
        assert all(len(line) <= 118 for line in lines)
        assert Noted.from_mapping(yaml.safe_load("x:\n" + "\n".join(lines))["x"]) == obj
    assert [
        line.split(":")[0].strip() for line in noted_lines(Noted(), "", 20) if not line.startswith(" ")
    ] == [
        "shots",
        "names",
    ]  # share is at its default and has no note: left out
