"""lmleak.serve.server: a real loopback server driven by the official openai client (3.57), the API key
and Host checks over a socket, and a clean stop on SIGTERM while a long request runs (a subprocess)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import openai
import pytest

from lmleak.errors import ConfigError
from lmleak.serve import ECHO_MAX_K, serving
from lmleak.serve.server import check_key
from tests.serve.tiny import TEXTS, openai_client

ROOT = Path(__file__).resolve().parents[2]


def test_usage_finish_reason_stop_and_offsets_through_the_openai_client(server, model):
    c = openai_client(server)
    base = {"model": "tiny", "prompt": TEXTS[1], "max_tokens": 6, "temperature": 0, "logprobs": 1}
    free = c.completions.create(**base)
    assert free.usage.completion_tokens == 6 and free.choices[0].finish_reason == "length"
    assert free.usage.prompt_tokens == 1 + len(model.tokenizer.encode(TEXTS[1]))
    stop = free.choices[0].logprobs.tokens[2]
    cut = c.completions.create(**base, stop=[stop])
    assert cut.choices[0].finish_reason == "stop"
    assert cut.choices[0].text == free.choices[0].text[: free.choices[0].text.find(stop)]
    ids = _greedy_ids(model, TEXTS[1], 6)
    assert free.choices[0].logprobs.text_offset == [len(model.tokenizer.decode(ids[:i])) for i in range(6)]


def _greedy_ids(model, prompt, n):
    """Greedy decoding by hand through the protocol (the oracle for the served tokens)."""
    full, cur = model.tokenizer.encode(prompt), []
    for _ in range(n):
        cur.append(int(model.top_k([full + cur], 1)[0][0][0]))
    return cur


def test_models_retrieve_and_openai_errors(server):
    c = openai_client(server)
    assert c.models.retrieve("tiny").id == "tiny"
    assert [m.id for m in c.models.list()] == ["tiny"]
    with pytest.raises(openai.NotFoundError) as e:
        c.models.retrieve("gpt-4")
    assert e.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as e:
        c.completions.create(model="tiny", prompt="hi", n=0)
    assert e.value.param == "n" and e.value.code == "out_of_range" and e.value.type == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as e:
        c.completions.create(model="tiny", prompt="hi", max_tokens=10**9)
    assert e.value.param == "max_tokens"
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(
            model="tiny",
            messages=[
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://example.org/x.png"}}],
                }
            ],
        )
    assert e.value.param == "messages[0].content[0]"


def test_the_echo_limit_holds_on_every_route_through_the_openai_client(model):
    with serving(model, tier="echo", name="tiny") as st:
        c = openai_client(st)
        with pytest.raises(openai.BadRequestError):
            c.completions.create(model="tiny", prompt="hi", logprobs=ECHO_MAX_K + 1, echo=True, max_tokens=0)
        with pytest.raises(openai.BadRequestError):
            c.chat.completions.create(
                model="tiny",
                messages=[{"role": "user", "content": "hi"}],
                logprobs=True,
                top_logprobs=ECHO_MAX_K + 1,
            )
        with pytest.raises(openai.BadRequestError):
            c.completions.create(model="tiny", prompt="hi", max_tokens=0, extra_body={"prompt_logprobs": 1})
        ok = c.chat.completions.create(
            model="tiny",
            messages=[{"role": "user", "content": "hi"}],
            logprobs=True,
            top_logprobs=ECHO_MAX_K,
            max_tokens=2,
        )
        assert max(len(e.top_logprobs) for e in ok.choices[0].logprobs.content) == ECHO_MAX_K


def test_api_key_over_a_socket(model):
    with serving(model, name="tiny", api_key="k-" + "x" * 30) as st:
        with pytest.raises(openai.AuthenticationError):
            openai_client(st, key="wrong").models.list()
        assert openai_client(st, key="k-" + "x" * 30).models.list().data[0].id == "tiny"
        assert httpx.get(st.url.removesuffix("/v1") + "/health").status_code == 200


def test_host_header_over_a_socket(server):
    r = httpx.get(server.url + "/models", headers={"Host": f"attacker.example:{server.port}"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_host"
    assert httpx.get(server.url + "/models", headers={"Host": f"localhost:{server.port}"}).status_code == 200


def test_check_key_refuses_empty_or_odd_keys():
    for bad in ("", "has space", "naïve", "tab\t"):
        with pytest.raises(ConfigError):
            check_key(bad)
    check_key(None)
    check_key("sk-abc_123")


SLOW_SERVER = """
import sys, time
from lmleak.models.base import Capability
from lmleak.serve import Access, build_app
from lmleak.serve.server import bind, run_foreground

class Words:
    bos_id, eos_id, pad_id, vocab_size = 1, 2, 0, 64
    def encode(self, text):
        return [3 + len(w) % 60 for w in text.split()]
    def decode(self, ids):
        return " ".join(str(i) for i in ids)

class SlowModel:  # text only; its generate is one long uninterruptible call, like a big forward pass
    name, max_length, tokenizer = "slow", 64, Words()
    capabilities = frozenset({Capability.GENERATE})
    def generate(self, prompts, **kw):
        print("generating", flush=True)
        time.sleep(120)

sock = bind("127.0.0.1", 0)
app = build_app(SlowModel(), tier="text", name="tiny", access=Access(port=sock.getsockname()[1]))
print(sock.getsockname()[1], flush=True)
run_foreground(app, sock)
print("stopped cleanly", flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_the_first_signal_stops_a_busy_server_at_once_and_answers_its_requests_503(sig):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_SERVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        port = int(proc.stdout.readline())
        answers: list[httpx.Response] = []

        def ask():
            body = {"prompt": "hi", "max_tokens": 2}
            answers.append(httpx.post(f"http://127.0.0.1:{port}/v1/completions", json=body, timeout=60))

        threads = [threading.Thread(target=ask) for _ in range(2)]  # one running, one queued behind it
        for t in threads:
            t.start()
        assert proc.stdout.readline().strip() == "generating"
        time.sleep(0.2)
        t0 = time.monotonic()
        proc.send_signal(sig)
        rc = proc.wait(timeout=30)
        stopped = time.monotonic() - t0
        for t in threads:
            t.join(timeout=10)
        out, err = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 0 and "stopped cleanly" in out
    assert stopped < 8  # the running generate still had ~120 s to go
    assert len(answers) == 2 and all(a.status_code == 503 for a in answers)
    assert {json.loads(a.text)["error"]["code"] for a in answers} == {"server_shutting_down"}
    assert "Traceback" not in err and "hi" not in err


def test_lmleaks_own_http_client_sends_the_key_from_its_environment(model, tmp_path, monkeypatch):
    from lmleak.errors import ModelError
    from lmleak.models.http import HTTPModel

    with serving(model, name="tiny", api_key="serve-key-1") as st:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("LMLEAK_API_KEY", "serve-key-1")
        m = HTTPModel(f"{st.url}?cache=off#tiny")
        assert m.tier == "prompt_logprobs"
        assert m.tokenizer.encode(TEXTS[1]) == model.tokenizer.encode(TEXTS[1])
        monkeypatch.setenv("LMLEAK_API_KEY", "wrong")
        with pytest.raises(ModelError, match="401"):
            _ = HTTPModel(f"{st.url}?cache=off#tiny").tier


def test_bad_text_through_the_openai_client_and_a_raw_socket_is_400_naming_the_field(server):
    import socket

    from openai.types import Completion

    c = openai_client(server)
    with pytest.raises(UnicodeEncodeError):  # the client itself cannot encode a lone surrogate ...
        c.completions.create(model="tiny", prompt="hi \ud800", max_tokens=1)
    with pytest.raises(openai.BadRequestError) as e:  # ... but sends pre-encoded bytes as they are
        c.post("/completions", body=b'{"model": "tiny", "prompt": ["ok", "hi \\ud800"]}', cast_to=Completion)
    assert e.value.status_code == 400 and e.value.param == "prompt[1]" and e.value.code == "invalid_text"
    body = b'{"model": "tiny", "messages": [{"role": "user", "content": "caf\xff"}]}'
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(head.encode() + body)
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    status_line, _, rest = raw.partition(b"\r\n")
    answer = rest.partition(b"\r\n\r\n")[2]
    assert status_line == b"HTTP/1.1 400 Bad Request" and answer.count(b"\n") == 0
    err = json.loads(answer)["error"]
    assert err["param"] == "messages[0].content" and err["code"] == "invalid_text"
    assert c.completions.create(model="tiny", prompt="hi", max_tokens=1).choices  # the server is fine
