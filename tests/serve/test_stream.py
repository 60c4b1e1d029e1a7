"""lmleak.serve.stream: ``stream: true`` as server-sent events, read by the official openai client and by
hand — the streamed text and logprobs equal the non-streamed answer, then ``data: [DONE]``."""

from __future__ import annotations

import json

import httpx

from tests.serve.tiny import TEXTS, openai_client


def _events(server, path, body):
    with httpx.stream("POST", server.url + path, json=body, timeout=30) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line[6:]) for line in lines[:-1]]


def test_openai_client_streams_completions_token_by_token(server):
    c = openai_client(server)
    kw = {"model": "tiny", "prompt": TEXTS[1], "max_tokens": 6, "temperature": 0, "logprobs": 1}
    whole = c.completions.create(**kw)
    chunks = list(c.completions.create(**kw, stream=True))
    assert len(chunks) >= 2  # the old server: 0 chunks and no error
    text = "".join(ch.choices[0].text for ch in chunks if ch.choices)
    assert text == whole.choices[0].text
    streamed = [
        t for ch in chunks if ch.choices and ch.choices[0].logprobs for t in ch.choices[0].logprobs.tokens
    ]
    assert streamed == whole.choices[0].logprobs.tokens
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == whole.choices[0].finish_reason


def test_openai_client_streams_chat_with_usage_last(server):
    c = openai_client(server)
    kw = {
        "model": "tiny",
        "messages": [{"role": "user", "content": TEXTS[0]}],
        "max_tokens": 5,
        "temperature": 0,
    }
    whole = c.chat.completions.create(**kw, logprobs=True, top_logprobs=2)
    chunks = list(
        c.chat.completions.create(
            **kw, logprobs=True, top_logprobs=2, stream=True, stream_options={"include_usage": True}
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    content = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert content == whole.choices[0].message.content
    lps = [
        e.logprob
        for ch in chunks
        if ch.choices and ch.choices[0].logprobs
        for e in ch.choices[0].logprobs.content
    ]
    assert lps == [e.logprob for e in whole.choices[0].logprobs.content]
    assert chunks[-1].choices == [] and chunks[-1].usage.model_dump() == whole.usage.model_dump()
    assert all(ch.usage is None for ch in chunks[:-1])


def test_sse_by_hand_for_sampled_text_and_prompt_logprobs(server):
    events = _events(
        server, "/completions", {"prompt": ["hi", "thank"], "max_tokens": 3, "n": 2, "stream": True}
    )
    texts: dict[int, str] = {}
    finished = set()
    for e in events:
        assert e["object"] == "text_completion" and "usage" not in e
        (ch,) = e["choices"]
        texts[ch["index"]] = texts.get(ch["index"], "") + ch["text"]
        if ch["finish_reason"] is not None:
            finished.add(ch["index"])
    assert sorted(texts) == [0, 1, 2, 3] and finished == {0, 1, 2, 3}
    events = _events(
        server, "/completions", {"prompt": "hi", "max_tokens": 0, "prompt_logprobs": 1, "stream": True}
    )
    assert events[0]["choices"][0]["prompt_logprobs"][0] is None
