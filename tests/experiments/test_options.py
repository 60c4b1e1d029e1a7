"""The settings of ``lmleak experiment crt`` / ``propile``: checked ranges and the configs they build."""

from __future__ import annotations

import pytest

from lmleak.errors import ConfigError
from lmleak.experiments.options import CRTOptions, ProPILEOptions


def test_ranges_are_checked_when_built():
    with pytest.raises(ConfigError, match="users"):
        CRTOptions(users=0)
    with pytest.raises(ConfigError, match="seed"):
        ProPILEOptions(seed=-1)


def test_crt_config_is_the_quick_config_with_the_options_given():
    from lmleak.experiments.crt import CRTExperimentConfig

    got = CRTOptions(quick=True, users=30, gammas=(0.0, 0.2), archs=("gpt",)).config()
    assert got == CRTExperimentConfig.quick().with_options(users=30, gammas=(0.0, 0.2), archs=("gpt",))


def test_propile_config_is_from_options():
    from lmleak.experiments.propile import ProPILEExperimentConfig

    got = ProPILEOptions(quick=True, seed=2, users=30).config()
    assert got == ProPILEExperimentConfig.quick(2).with_options(users=30)
