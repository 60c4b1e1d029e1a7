"""lmleak.serve.chat: /v1/chat/completions — the greedy path shared with completions, content-part
arrays, the echo tier's limit on top_logprobs, usage and finish_reason, every bad field refused."""

from __future__ import annotations

import numpy as np
import pytest

from lmleak.serve import ECHO_MAX_K
from tests.serve.tiny import TEXTS, client, openai_error, row


def _chat(c, content, **kw):
    return c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": content}], **kw})


def test_chat_logprobs_follow_the_same_greedy_path_as_completions(model):
    chat = _chat(client(model, "chat"), TEXTS[2], logprobs=True, top_logprobs=2, max_tokens=4).json()
    done = (
        client(model)
        .post("/v1/completions", json={"prompt": TEXTS[2], "logprobs": 2, "max_tokens": 4, "temperature": 0})
        .json()
    )
    content = chat["choices"][0]["logprobs"]["content"]
    gen = done["choices"][0]["logprobs"]
    assert [c["token"] for c in content] == gen["tokens"]
    np.testing.assert_allclose([c["logprob"] for c in content], gen["token_logprobs"], atol=1e-6)
    assert chat["choices"][0]["message"]["content"] == done["choices"][0]["text"]
    assert chat["choices"][0]["finish_reason"] == done["choices"][0]["finish_reason"]
    assert chat["usage"]["prompt_tokens"] == len(row(model, TEXTS[2]))
    assert chat["usage"]["completion_tokens"] == done["usage"]["completion_tokens"] >= len(content) > 0


def test_text_content_parts_are_joined_like_separate_lines(model):
    c = client(model)
    parts = [{"type": "text", "text": "thank you"}, {"type": "text", "text": "very much"}]
    a = _chat(c, parts, logprobs=True, max_tokens=3).json()
    b = _chat(c, "thank you\nvery much", logprobs=True, max_tokens=3).json()
    assert a["choices"][0]["message"] == b["choices"][0]["message"]
    assert a["usage"]["prompt_tokens"] == len(row(model, "thank you\nvery much"))
    assert "[{" not in a["choices"][0]["message"]["content"]  # not prompted with the list's repr


@pytest.mark.parametrize(
    ("content", "param"),
    [
        (
            [{"type": "image_url", "image_url": {"url": "https://example.org/a.png"}}],
            "messages[0].content[0]",
        ),
        ([{"type": "text", "text": "hi"}, {"type": "input_audio"}], "messages[0].content[1]"),
        ([{"type": "text", "text": 5}], "messages[0].content[0].text"),
        ([["hi"]], "messages[0].content[0]"),
        (5, "messages[0].content"),
    ],
)
def test_other_content_parts_are_refused_naming_the_part(model, content, param):
    openai_error(_chat(client(model), content), 400, param=param)


def test_the_echo_tier_holds_its_logprobs_limit_on_chat_too(model):
    c = client(model, "echo")
    err = openai_error(_chat(c, "hi", logprobs=True, top_logprobs=ECHO_MAX_K + 1), 400, param="top_logprobs")
    assert "between 0 and 5" in err["message"] and "tier echo" in err["message"]
    ok = _chat(c, "hi", logprobs=True, top_logprobs=ECHO_MAX_K, max_tokens=2).json()
    assert all(len(t["top_logprobs"]) == 5 for t in ok["choices"][0]["logprobs"]["content"])
    assert _chat(client(model, "chat"), "hi", logprobs=True, top_logprobs=20, max_tokens=1).status_code == 200


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": []}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": ["hi"]}, "messages[0]"),
        ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role"),
        ({"messages": [{"content": "hi"}], "top_logprobs": 2}, "top_logprobs"),
        ({"messages": [{"content": "hi"}], "logprobs": 1}, "logprobs"),
        ({"messages": [{"content": "hi"}], "max_completion_tokens": 1000}, "max_completion_tokens"),
        ({"messages": [{"content": "hi"}], "max_tokens": 2.5}, "max_tokens"),
        ({"messages": [{"content": "hi"}], "n": 0}, "n"),
        ({"messages": [{"content": "hi"}], "logprobs": True, "n": 2}, "n"),
    ],
)
def test_every_bad_chat_field_is_a_400_naming_it(model, body, param):
    openai_error(client(model).post("/v1/chat/completions", json=body), 400, param=param)


def test_the_text_tier_refuses_chat_logprobs(model):
    r = _chat(client(model, "text"), "hi", logprobs=True)
    assert "tier text" in openai_error(r, 400, code="not_supported_by_tier")["message"]


def test_sampled_chat_gives_n_choices(model):
    ans = _chat(client(model), "hi", n=3, temperature=1.0, seed=1, max_tokens=2).json()
    assert [c["index"] for c in ans["choices"]] == [0, 1, 2]
    assert all(c["message"]["role"] == "assistant" and c["logprobs"] is None for c in ans["choices"])
