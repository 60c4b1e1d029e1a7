"""lmleak.serve.app: routes answer OpenAI-shaped errors everywhere, a bug is a 500 whose log names its
type only (no traceback, no request text), and /tokenize runs off the event loop."""

from __future__ import annotations

import logging
import threading

import httpx

from lmleak.serve import serving
from tests.serve.tiny import ProtocolOnly, client, openai_error

SECRET = "my ssn is 555-01-0199 call ada@example.org"


def test_unknown_routes_and_methods_are_openai_errors(model):
    c = client(model)
    openai_error(c.get("/v2/nothing"), 404)
    openai_error(c.get("/v1/completions"), 405)


class Broken(ProtocolOnly):
    def generate(self, prompts, **kw):
        raise ValueError(f"cannot handle {prompts[0]}")  # a bug whose message quotes the request


def test_a_bug_is_a_500_that_logs_its_type_but_not_the_request(model, caplog, capfd):
    c = client(Broken(model))
    with caplog.at_level(logging.DEBUG):
        r = c.post("/v1/completions", json={"prompt": SECRET, "max_tokens": 2})
        refused = c.post("/v1/completions", json={"prompt": SECRET, "max_tokens": "many"})
    err = openai_error(r, 500, code="internal_error")
    assert SECRET not in r.text and "ValueError" not in err["message"]
    openai_error(refused, 400, param="max_tokens")
    assert SECRET not in refused.text
    logged = caplog.text + "".join(capfd.readouterr())
    assert "ValueError" in logged and "/v1/completions" in logged
    assert "555-01-0199" not in logged and "Traceback" not in logged


class GatedTokenizer:
    """A tokenizer whose encode of the text "wait" blocks until the test opens the gate."""

    def __init__(self, tok):
        self.tok, self.gate, self.entered = tok, threading.Event(), threading.Event()
        self.bos_id, self.eos_id, self.pad_id, self.vocab_size = (
            tok.bos_id,
            tok.eos_id,
            tok.pad_id,
            tok.vocab_size,
        )

    def encode(self, text):
        if text == "wait":
            self.entered.set()
            assert self.gate.wait(20), "the gate never opened: /v1/models was blocked"
        return self.tok.encode(text)

    def decode(self, ids):
        return self.tok.decode(ids)


def test_tokenize_does_not_block_the_event_loop(model):
    gated = ProtocolOnly(model)
    gated.tokenizer = GatedTokenizer(model.tokenizer)
    with serving(gated, name="tiny") as st:
        answers = []
        t = threading.Thread(
            target=lambda: answers.append(
                httpx.post(st.url.removesuffix("/v1") + "/tokenize", json={"prompt": "wait"}, timeout=30)
            )
        )
        t.start()
        assert gated.tokenizer.entered.wait(20)  # /tokenize is inside encode, and stays there ...
        models = httpx.get(st.url + "/models", timeout=10)  # ... while another route answers
        gated.tokenizer.gate.set()
        t.join(30)
    assert models.status_code == 200 and answers[0].status_code == 200


def test_concurrent_tokenize_and_completions_all_answer(model):
    """/tokenize in worker threads and the model thread share the tokenizer: many at once, none fails."""
    with serving(model, name="tiny") as st:
        base = st.url.removesuffix("/v1")
        results: list[int] = []

        def hammer(i):
            with httpx.Client(timeout=60) as c:
                for j in range(5):
                    if (i + j) % 2:
                        r = c.post(base + "/tokenize", json={"prompt": " ".join(["thank you"] * 50)})
                    else:
                        r = c.post(
                            st.url + "/completions",
                            json={"prompt": "thank you", "max_tokens": 2, "logprobs": 1},
                        )
                    results.append(r.status_code)

        threads = [threading.Thread(target=hammer, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert results == [200] * 30
