"""Validated copies of experiment configs and the "at least 1" checks."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lmleak.errors import ConfigError
from lmleak.experiments._config import replace_validated, require_positive_counts


@dataclass(frozen=True)
class _Cfg:
    users: int = 3
    epochs: int = 1
    name: str = "x"

    def validate(self) -> None:
        require_positive_counts(self, ("users", "epochs"))


def test_none_keeps_the_default_and_other_values_replace_it():
    base = _Cfg()
    out = replace_validated(base, users=None, epochs=4, name=None)
    assert out == _Cfg(users=3, epochs=4, name="x") and base == _Cfg()


def test_the_copy_is_validated_and_the_first_bad_count_is_named():
    with pytest.raises(ConfigError, match="users must be at least 1, got 0") as e:
        replace_validated(_Cfg(), users=0, epochs=0)
    assert e.value.field == "users"
    with pytest.raises(ConfigError, match="epochs must be at least 1, got -2"):
        replace_validated(_Cfg(), epochs=-2)
