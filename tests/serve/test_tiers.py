"""lmleak.serve.tiers: which tiers a model can be served at, and what each grants on each route."""

from __future__ import annotations

import pytest

from lmleak.errors import ConfigError
from lmleak.models.base import Capability
from lmleak.serve import build_app
from lmleak.serve.errors import APIError
from lmleak.serve.tiers import ECHO_MAX_K, TIERS, check_chat_grants, check_completion_grants, logprobs_limit
from tests.serve.tiny import ProtocolOnly


def test_build_app_refuses_an_unknown_tier_and_scores_the_model_cannot_give(model):
    with pytest.raises(ConfigError, match="unknown tier 'full'"):
        build_app(model, tier="full")
    text_only = ProtocolOnly(model)
    text_only.capabilities = frozenset({Capability.GENERATE})
    with pytest.raises(ConfigError, match="tier 'echo' needs a model with scores"):
        build_app(text_only, tier="echo")
    assert build_app(text_only, tier="text") is not None


def test_the_echo_tier_shows_at_most_five_everywhere():
    assert logprobs_limit("echo", 20) == ECHO_MAX_K and logprobs_limit("echo", 3) == 3
    assert all(logprobs_limit(t, 20) == 20 for t in TIERS if t != "echo")


@pytest.mark.parametrize(
    ("tier", "prompt_n", "k", "echo", "refused"),
    [
        ("prompt_logprobs", 1, 5, True, None),
        ("echo", 1, None, False, "prompt_logprobs"),
        ("echo", None, 5, True, None),
        ("chat", None, 1, False, "logprobs"),
        ("chat", None, None, True, "echo"),
        ("text", None, 1, False, "logprobs"),
        ("text", None, None, False, None),
    ],
)
def test_completion_grants(tier, prompt_n, k, echo, refused):
    if refused is None:
        check_completion_grants(tier, prompt_n, k, echo)
        return
    with pytest.raises(APIError) as e:
        check_completion_grants(tier, prompt_n, k, echo)
    assert e.value.param == refused and e.value.code == "not_supported_by_tier"


def test_chat_grants():
    for tier in TIERS[:3]:
        check_chat_grants(tier, True)
    check_chat_grants("text", False)
    with pytest.raises(APIError, match="tier text"):
        check_chat_grants("text", True)
