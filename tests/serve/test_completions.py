"""lmleak.serve.completions: /v1/completions against the model itself — vLLM's prompt_logprobs, legacy
echo + logprobs, usage, finish_reason, stop, character text_offset — and every bad field refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lmleak.serve import ECHO_MAX_K, TIERS
from tests.serve.tiny import TEXTS, client, openai_error, row


def _prefix_offsets(tok, ids):
    """The definition: token i begins after the text of the tokens before it."""
    return [len(tok.decode(ids[:i])) for i in range(len(ids))]


def test_prompt_logprobs_are_the_models_scores_with_vllm_ranks(model):
    r = row(model, TEXTS[0])
    body = {"model": "tiny", "prompt": [r], "prompt_logprobs": 2, "max_tokens": 0}
    plp = client(model).post("/v1/completions", json=body).json()["choices"][0]["prompt_logprobs"]
    stats = model.token_stats([r[1:]])[0]
    tops = model.top_k([r[1 : p + 1] for p in range(len(r) - 1)], 2)  # the protocol's own top 2
    assert plp[0] is None and len(plp) == len(r)
    for p, d in enumerate(plp[1:]):
        actual = d[str(r[p + 1])]
        assert actual["rank"] == stats.ranks[p]
        assert math.isclose(actual["logprob"], stats.logprobs[p], abs_tol=1e-4)
        for k, (t, v) in enumerate(zip(*tops[p], strict=True), start=1):
            assert d[str(t)]["rank"] == k and math.isclose(d[str(t)]["logprob"], v, abs_tol=1e-4)
        assert set(d) <= {str(t) for t in tops[p][0]} | {str(r[p + 1])}


def test_echo_returns_the_prompt_tokens_then_a_greedy_continuation(model):
    body = {"prompt": TEXTS[1], "echo": True, "logprobs": 2, "max_tokens": 3, "temperature": 0}
    c = client(model, "echo")
    choice = c.post("/v1/completions", json=body).json()["choices"][0]
    r = row(model, TEXTS[1])
    lp = choice["logprobs"]
    assert choice["text"].startswith(model.tokenizer.decode(r[1:]))
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    stats = model.token_stats([r[1:]])[0]
    np.testing.assert_allclose(lp["token_logprobs"][1 : len(r)], stats.logprobs, atol=1e-4)
    assert all(len(t) == 2 for t in lp["top_logprobs"][1:])
    as_ids = c.post("/v1/completions", json={**body, "return_tokens_as_token_ids": True}).json()
    toks = as_ids["choices"][0]["logprobs"]["tokens"]
    assert toks[: len(r)] == [f"token_id:{t}" for t in r]
    gen = [int(t.removeprefix("token_id:")) for t in toks[len(r) :]]
    assert 1 <= len(gen) <= 3
    assert choice["text"] == model.tokenizer.decode(r[1:]) + model.tokenizer.decode(gen)
    for j, t in enumerate(gen):  # greedy: each generated token is the model's top 1 after the ones before
        assert int(model.top_k([r[1:] + gen[:j]], 1)[0][0][0]) == t


@pytest.mark.parametrize("which", ["model", "bpe_model"])
def test_text_offset_is_where_each_token_begins_in_the_text_in_characters(which, request):
    """Checked against the definition (the length of the decoded text before the token), for a
    tokenizer that joins words with spaces and for byte-level BPE, with and without echo."""
    m = request.getfixturevalue(which)
    tok, c = m.tokenizer, client(m)
    for echo in (True, False):
        body = {"prompt": TEXTS[2], "echo": echo, "logprobs": 1, "max_tokens": 5, "temperature": 0}
        body["return_tokens_as_token_ids"] = True
        choice = c.post("/v1/completions", json=body).json()["choices"][0]
        lp = choice["logprobs"]
        ids = [int(t.removeprefix("token_id:")) for t in lp["tokens"]]
        r = row(m, TEXTS[2])
        if echo:
            prompt_text = tok.decode(r[1:])
            gen = ids[len(r) :]
            want = [
                0,
                *_prefix_offsets(tok, r[1:]),
                *(len(prompt_text) + o for o in _prefix_offsets(tok, gen)),
            ]
        else:
            want = _prefix_offsets(tok, ids)
        assert lp["text_offset"] == want
        assert all(0 <= o <= len(choice["text"]) for o in want)
        assert want == sorted(want) and (not want or want[0] == 0)
        assert len(set(want)) > 1  # the null (token indices 0, 1, 2 ...) differs from character offsets
        assert want != list(range(len(want)))


def test_usage_counts_prompt_and_generated_tokens(model):
    body = {"prompt": [TEXTS[0], TEXTS[1]], "logprobs": 0, "max_tokens": 4, "temperature": 0}
    ans = client(model).post("/v1/completions", json={**body, "return_tokens_as_token_ids": True}).json()
    generated = sum(len(c["logprobs"]["tokens"]) for c in ans["choices"])
    eos_ended = sum(c["finish_reason"] == "stop" for c in ans["choices"])  # EOS is generated, not shown
    prompt = len(row(model, TEXTS[0])) + len(row(model, TEXTS[1]))
    assert ans["usage"] == {
        "prompt_tokens": prompt,
        "completion_tokens": generated + eos_ended,
        "total_tokens": prompt + generated + eos_ended,
    }
    assert generated > 0  # the null (0 generated tokens, the old server's constant) is excluded


def test_stop_sequence_cuts_the_text_and_finishes_with_stop(model):
    c = client(model)
    base = {"prompt": TEXTS[1], "logprobs": 0, "max_tokens": 8, "temperature": 0}
    free = c.post("/v1/completions", json=base).json()["choices"][0]
    assert free["finish_reason"] == "length" and len(free["logprobs"]["tokens"]) == 8
    stop = free["logprobs"]["tokens"][3]  # the text of the 4th generated token
    cut = c.post("/v1/completions", json={**base, "stop": [stop, "never-generated"]}).json()
    choice = cut["choices"][0]
    assert choice["text"] == free["text"][: free["text"].find(stop)]
    assert choice["finish_reason"] == "stop"
    assert cut["usage"]["completion_tokens"] <= 4  # decoding stopped at the token that completed it
    plain = c.post("/v1/completions", json={"prompt": TEXTS[1], "max_tokens": 8, "temperature": 0}).json()
    sampled_text = plain["choices"][0]["text"]
    assert plain["choices"][0]["finish_reason"] in ("length", "stop")
    if len(sampled_text) > 3:
        s = sampled_text[2:4]
        again = c.post(
            "/v1/completions", json={"prompt": TEXTS[1], "max_tokens": 8, "temperature": 0, "stop": s}
        ).json()
        assert again["choices"][0]["text"] == sampled_text[: sampled_text.find(s)]
        assert again["choices"][0]["finish_reason"] == "stop"


def test_plain_generation_gives_n_choices_per_prompt_in_order(model):
    body = {"prompt": ["hi", "thank"], "max_tokens": 3, "n": 2, "temperature": 1.0, "seed": 3}
    choices = client(model).post("/v1/completions", json=body).json()["choices"]
    assert [c["index"] for c in choices] == [0, 1, 2, 3] and all(c["logprobs"] is None for c in choices)


def test_every_tier_serves_plain_text_generation(model):
    for tier in TIERS:
        out = client(model, tier).post("/v1/completions", json={"prompt": ["hi", "thank"], "max_tokens": 2})
        choices = out.json()["choices"]
        assert [c["index"] for c in choices] == [0, 1] and all(c["logprobs"] is None for c in choices)


BAD = [
    ({"prompt": "hi", "max_tokens": 1e9}, "max_tokens", "invalid_type"),
    ({"prompt": "hi", "max_tokens": 257}, "max_tokens", "out_of_range"),  # context 32: up to 256
    ({"prompt": "hi", "max_tokens": -1}, "max_tokens", "out_of_range"),
    ({"prompt": "hi", "max_tokens": "5"}, "max_tokens", "invalid_type"),
    ({"prompt": "hi", "n": 0}, "n", "out_of_range"),
    ({"prompt": "hi", "n": -3}, "n", "out_of_range"),
    ({"prompt": "hi", "n": 10_000}, "n", "out_of_range"),
    ({"prompt": "hi", "n": True}, "n", "invalid_type"),
    ({"prompt": "hi", "best_of": 1, "n": 2}, "best_of", "out_of_range"),
    ({"prompt": "hi", "logprobs": 21}, "logprobs", "out_of_range"),
    ({"prompt": "hi", "logprobs": "5"}, "logprobs", "invalid_type"),
    ({"prompt": "hi", "prompt_logprobs": 21}, "prompt_logprobs", "out_of_range"),
    ({"prompt": "hi", "echo": "yes"}, "echo", "invalid_type"),
    ({"prompt": "hi", "temperature": -0.5}, "temperature", "out_of_range"),
    ({"prompt": "hi", "temperature": "hot"}, "temperature", "invalid_type"),
    ({"prompt": "hi", "top_k": -2}, "top_k", "out_of_range"),
    ({"prompt": "hi", "seed": 1.5}, "seed", "invalid_type"),
    ({"prompt": "hi", "stop": 5}, "stop", "invalid_type"),
    ({"prompt": "hi", "stop": ["a", "b", "c", "d", "e"]}, "stop", "out_of_range"),
    ({"prompt": "hi", "stop": [""]}, "stop", "invalid_value"),
    ({"prompt": "hi", "stream": 1}, "stream", "invalid_type"),
    ({"prompt": "hi", "stream_options": {"include_usage": True}}, "stream_options", "invalid_value"),
    ({"prompt": "hi", "top_p": 0.5}, "top_p", "unsupported_parameter"),
    ({"prompt": "hi", "presence_penalty": 1}, "presence_penalty", "unsupported_parameter"),
    ({"prompt": "hi", "return_tokens_as_token_ids": "no"}, "return_tokens_as_token_ids", "invalid_type"),
    ({"prompt": 3}, "prompt", "invalid_type"),
    ({"prompt": []}, "prompt", "invalid_type"),
    ({"prompt": [[1, 2], "x", 3]}, "prompt[2]", "invalid_type"),
    ({"prompt": [[1, 10_000]]}, "prompt", "out_of_range"),
    ({"prompt": "hi", "model": 7}, "model", "invalid_type"),
    ({"prompt": "hi", "logprobs": 1, "n": 2}, "n", "unsupported_parameter"),
    ({"prompt": "hi", "logprobs": 1, "temperature": 0.7}, "temperature", "unsupported_parameter"),
]


@pytest.mark.parametrize(("body", "param", "code"), BAD, ids=[f"{p}-{i}" for i, (_, p, _) in enumerate(BAD)])
def test_every_bad_field_is_a_400_naming_it(model, body, param, code):
    openai_error(client(model).post("/v1/completions", json=body), 400, param=param, code=code)


def test_a_prompt_longer_than_the_context_is_refused_with_the_count(model):
    long = " ".join(["thank you"] * 20)  # 40 words, context 32
    err = openai_error(
        client(model).post("/v1/completions", json={"prompt": long}), 400, code="context_length_exceeded"
    )
    assert "maximum context length is 32 tokens" in err["message"] and "41 tokens" in err["message"]
    assert long not in err["message"]


def test_a_wrong_model_name_is_a_404_as_vllm_says_it(model):
    err = openai_error(client(model).post("/v1/completions", json={"prompt": "hi", "model": "gpt-4"}), 404)
    assert "does not exist" in err["message"] and "Served: tiny" in err["message"]


def test_the_echo_tier_refuses_more_than_five_logprobs_and_prompt_logprobs(model):
    c = client(model, "echo")
    err = openai_error(
        c.post("/v1/completions", json={"prompt": "hi", "logprobs": ECHO_MAX_K + 1}), 400, param="logprobs"
    )
    assert "logprobs must be between 0 and 5" in err["message"]
    openai_error(
        c.post("/v1/completions", json={"prompt": "hi", "prompt_logprobs": 1}),
        400,
        code="not_supported_by_tier",
    )
    ok = c.post(
        "/v1/completions", json={"prompt": "hi", "logprobs": ECHO_MAX_K, "echo": True, "max_tokens": 0}
    )
    assert ok.status_code == 200 and all(
        len(t) == 5 for t in ok.json()["choices"][0]["logprobs"]["top_logprobs"][1:]
    )
    chat_tier = client(model, "chat")
    openai_error(
        chat_tier.post("/v1/completions", json={"prompt": "hi", "echo": True}),
        400,
        code="not_supported_by_tier",
    )
