"""lmleak.serve: the OpenAI-compatible app itself (in-process through Starlette's TestClient, no socket):
the tiers' refusals, the JSON shapes, and the one-pass scoring checked against the protocol's slow path.
The HTTP backend against the served app is tested in ``models/test_http.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from starlette.testclient import TestClient

from lmleak.errors import ConfigError
from lmleak.models.base import Capability
from lmleak.models.loading import load_model
from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model
from lmleak.serve import ECHO_MAX_K, TIERS, Scoring, build_app

TEXTS = [
    "hello my name is ada lovelace and my phone is 555 0100",
    "thank you very much for the call today",
    "please call me back at 555 0199 or ada@example.org thank you",
]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny GPT saved and loaded as an lmleak model (a TorchCausalLM: the one-pass scoring path)."""
    tok = build_tokenizer(TEXTS, kind="word", vocab_size=100)
    module = new_small_gpt(len(tok), SmallGPTConfig(n_positions=32, n_embd=32, n_layer=1, n_head=2), seed=5)
    return load_model(str(save_small_model(module, tok, tmp_path_factory.mktemp("serve") / "model")))


class _ProtocolOnly:
    """The same model seen only through the LanguageModel protocol: Scoring takes its slow path."""

    def __init__(self, model):
        self._m = model
        self.name, self.tokenizer, self.max_length = model.name, model.tokenizer, model.max_length
        self.capabilities = model.capabilities

    def token_stats(self, seqs):
        return self._m.token_stats(seqs)

    def top_k(self, prefixes, k):
        return self._m.top_k(prefixes, k)


def _client(model, tier="prompt_logprobs"):
    return TestClient(build_app(model, tier=tier, name="tiny"))


def _row(model, text):
    return [model.tokenizer.bos_id, *model.tokenizer.encode(text)]


def test_one_pass_scoring_equals_the_protocol_path(model):
    """The fast path (one forward pass per batch) against token_stats + top_k, position by position."""
    rows = [_row(model, t) for t in TEXTS]
    fast, slow = Scoring(model), Scoring(_ProtocolOnly(model))
    assert fast.fast and not slow.fast
    for a, b in zip(fast.rows(rows, 3), slow.rows(rows, 3), strict=True):
        np.testing.assert_array_equal(a["rank"], b["rank"])
        np.testing.assert_array_equal(a["top_ids"], b["top_ids"])
        np.testing.assert_array_equal(a["next_ids"][:3], b["next_ids"][:3])
        for key in ("logprob", "top_lps"):
            np.testing.assert_allclose(a[key], b[key], atol=1e-4)


def test_build_app_refuses_an_unknown_tier_and_scores_the_model_cannot_give(model):
    with pytest.raises(ConfigError, match="unknown tier 'full'"):
        build_app(model, tier="full")
    text_only = _ProtocolOnly(model)
    text_only.capabilities = frozenset({Capability.GENERATE})
    with pytest.raises(ConfigError, match="tier 'echo' needs a model with scores"):
        build_app(text_only, tier="echo")
    assert build_app(text_only, tier="text") is not None


def test_models_card_and_tokenizer_routes(model):
    c = _client(model, "echo")
    card = c.get("/v1/models").json()["data"][0]
    tok = model.tokenizer
    assert card["id"] == "tiny" and card["max_model_len"] == model.max_length
    assert card["lmleak"] == {
        "bos_id": tok.bos_id,
        "eos_id": tok.eos_id,
        "pad_id": tok.pad_id,
        "vocab_size": tok.vocab_size,
        "max_length": model.max_length,
        "tier": "echo",
    }
    ids = c.post("/tokenize", json={"prompt": TEXTS[1]}).json()
    assert ids["tokens"] == _row(model, TEXTS[1]) and ids["count"] == len(ids["tokens"])
    bare = c.post("/tokenize", json={"prompt": TEXTS[1], "add_special_tokens": False}).json()["tokens"]
    assert c.post("/detokenize", json={"tokens": bare}).json()["prompt"] == tok.decode(bare)


def test_prompt_logprobs_are_the_models_scores_with_vllm_ranks(model):
    row = _row(model, TEXTS[0])
    body = {"model": "tiny", "prompt": [row], "prompt_logprobs": 2, "max_tokens": 0}
    plp = _client(model).post("/v1/completions", json=body).json()["choices"][0]["prompt_logprobs"]
    stats = model.token_stats([row[1:]])[0]
    tops = model.top_k([row[1 : p + 1] for p in range(len(row) - 1)], 2)  # the protocol's own top 2
    assert plp[0] is None and len(plp) == len(row)
    for p, d in enumerate(plp[1:]):
        actual = d[str(row[p + 1])]
        assert actual["rank"] == stats.ranks[p]
        assert math.isclose(actual["logprob"], stats.logprobs[p], abs_tol=1e-4)
        for r, (t, v) in enumerate(zip(*tops[p], strict=True), start=1):
            assert d[str(t)]["rank"] == r and math.isclose(d[str(t)]["logprob"], v, abs_tol=1e-4)
        assert set(d) <= {str(t) for t in tops[p][0]} | {str(row[p + 1])}


def test_echo_returns_the_prompt_tokens_then_a_greedy_continuation(model):
    body = {"prompt": TEXTS[1], "echo": True, "logprobs": 2, "max_tokens": 3, "temperature": 0}
    choice = _client(model, "echo").post("/v1/completions", json=body).json()["choices"][0]
    row = _row(model, TEXTS[1])
    lp = choice["logprobs"]
    assert choice["text"].startswith(model.tokenizer.decode(row[1:]))
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    stats = model.token_stats([row[1:]])[0]
    np.testing.assert_allclose(lp["token_logprobs"][1 : len(row)], stats.logprobs, atol=1e-4)
    assert all(len(t) == 2 for t in lp["top_logprobs"][1:])
    ids = _client(model, "echo").post("/v1/completions", json={**body, "return_tokens_as_token_ids": True})
    as_ids = ids.json()["choices"][0]["logprobs"]["tokens"]
    assert as_ids[: len(row)] == [f"token_id:{t}" for t in row]
    gen = [int(t.removeprefix("token_id:")) for t in as_ids[len(row) :]]
    assert 1 <= len(gen) <= 3 and choice["text"] == model.tokenizer.decode(row[1:]) + model.tokenizer.decode(
        gen
    )
    for j, t in enumerate(gen):  # greedy: each generated token is the model's top 1 after the ones before
        assert int(model.top_k([row[1:] + gen[:j]], 1)[0][0][0]) == t


@pytest.mark.parametrize(
    ("tier", "route", "body", "status", "message"),
    [
        (
            "echo",
            "/v1/completions",
            {"prompt": "hi", "prompt_logprobs": 1},
            400,
            "prompt_logprobs is not supported",
        ),
        (
            "echo",
            "/v1/completions",
            {"prompt": "hi", "logprobs": ECHO_MAX_K + 1},
            400,
            "logprobs must be between 0 and 5",
        ),
        (
            "chat",
            "/v1/completions",
            {"prompt": "hi", "echo": True},
            400,
            "logprobs and echo are not supported",
        ),
        (
            "text",
            "/v1/chat/completions",
            {"messages": [{"content": "hi"}], "logprobs": True},
            400,
            "tier text",
        ),
        ("chat", "/v1/chat/completions", {"messages": []}, 400, "messages must be a non-empty list"),
        (
            "prompt_logprobs",
            "/v1/completions",
            {"prompt": "hi", "logprobs": 1, "n": 2},
            400,
            "decodes greedily",
        ),
        ("prompt_logprobs", "/v1/completions", {"prompt": 3}, 400, "prompt must be a string"),
        ("prompt_logprobs", "/v1/completions", {"prompt": "hi", "model": "gpt-4"}, 404, "Served: tiny"),
    ],
)
def test_each_tier_refuses_what_it_does_not_grant_with_an_openai_error(
    model, tier, route, body, status, message
):
    r = _client(model, tier).post(route, json=body)
    assert r.status_code == status
    err = r.json()["error"]
    assert message in err["message"] and err["code"] == status


def test_a_body_that_is_not_a_json_object_is_a_400(model):
    r = _client(model).post("/v1/completions", content=b"[1, 2")
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    r = _client(model).post("/v1/completions", json=[1, 2])
    assert r.status_code == 400 and "must be a JSON object" in r.json()["error"]["message"]


def test_chat_logprobs_follow_the_same_greedy_path_as_completions(model):
    body = {"messages": [{"role": "user", "content": TEXTS[2]}], "logprobs": True, "top_logprobs": 2}
    chat = _client(model, "chat").post("/v1/chat/completions", json={**body, "max_tokens": 4}).json()
    done = (
        _client(model)
        .post("/v1/completions", json={"prompt": TEXTS[2], "logprobs": 2, "max_tokens": 4, "temperature": 0})
        .json()
    )
    content = chat["choices"][0]["logprobs"]["content"]
    gen = done["choices"][0]["logprobs"]
    assert [c["token"] for c in content] == gen["tokens"]
    np.testing.assert_allclose([c["logprob"] for c in content], gen["token_logprobs"], atol=1e-6)
    assert chat["choices"][0]["message"]["content"] == done["choices"][0]["text"]
    assert chat["usage"]["prompt_tokens"] == len(_row(model, TEXTS[2]))


def test_every_tier_serves_plain_text_generation(model):
    for tier in TIERS:
        out = _client(model, tier).post("/v1/completions", json={"prompt": ["hi", "thank"], "max_tokens": 2})
        choices = out.json()["choices"]
        assert [c["index"] for c in choices] == [0, 1] and all(c["logprobs"] is None for c in choices)
