"""lmleak.serve.settings: one object for ``lmleak serve`` (issue 34), checked when built, light to import."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lmleak.errors import ConfigError
from lmleak.serve.settings import ServeLimits, ServeSettings


def test_the_settings_are_limits_too_and_keep_the_key_out_of_their_repr():
    s = ServeSettings(tier="echo", max_n=4, api_key="sk-abc_123")
    assert isinstance(s, ServeLimits) and s.max_n == 4 and "sk-abc" not in repr(s)


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"tier": "everything"}, "unknown tier 'everything'"),
        ({"port": 70000}, "port"),
        ({"api_key": "has space"}, "API key"),
        ({"batch_tokens": 0}, "batch_tokens"),
    ],
)
def test_bad_settings_are_refused_when_built(kw, says):
    with pytest.raises(ConfigError, match=says):
        ServeSettings(**kw)


def test_importing_the_settings_loads_no_web_framework():
    code = "import sys, lmleak.serve.settings; print('fastapi' in sys.modules or 'uvicorn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
