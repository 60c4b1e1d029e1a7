"""Helpers for the serve tests: tiny models, an in-process client on an allowed Host, the official
openai client against a real loopback server, and the check that an error body has the OpenAI shape."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from lmleak.models.loading import load_model
from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model
from lmleak.serve import build_app

TEXTS = [
    "hello my name is ada lovelace and my phone is 555 0100",
    "thank you very much for the call today",
    "please call me back at 555 0199 or ada@example.org thank you",
]


def tiny_model(root, kind: str = "word", n_positions: int = 32, seed: int = 5) -> Any:
    """A tiny GPT saved and loaded as an lmleak model (a TorchCausalLM: the one-pass scoring path)."""
    tok = build_tokenizer(TEXTS, kind=kind, vocab_size=100 if kind == "word" else 300)
    module = new_small_gpt(
        len(tok), SmallGPTConfig(n_positions=n_positions, n_embd=32, n_layer=1, n_head=2), seed=seed
    )
    return load_model(str(save_small_model(module, tok, root / "model")))


class ProtocolOnly:
    """The same model seen only through the LanguageModel protocol: Scoring takes its slow path."""

    def __init__(self, model: Any) -> None:
        self._m = model
        self.name, self.tokenizer, self.max_length = model.name, model.tokenizer, model.max_length
        self.capabilities = model.capabilities

    def token_stats(self, seqs):
        return self._m.token_stats(seqs)

    def top_k(self, prefixes, k):
        return self._m.top_k(prefixes, k)

    def generate(self, prompts, **kw):
        return self._m.generate(prompts, **kw)


def client(model: Any, tier: str = "prompt_logprobs", **kw: Any) -> TestClient:
    """The app in-process (no socket), addressed as http://localhost (an allowed Host)."""
    return TestClient(build_app(model, tier=tier, name="tiny", **kw), base_url="http://localhost")


def row(model: Any, text: str) -> list[int]:
    return [model.tokenizer.bos_id, *model.tokenizer.encode(text)]


def openai_client(server: Any, key: str = "unused") -> Any:
    """The official openai client against a running server, with no retries."""
    from openai import OpenAI

    return OpenAI(base_url=server.url, api_key=key, max_retries=0, timeout=30)


def openai_error(r: Any, status: int, *, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """The error object of response ``r``, after checking it has exactly the OpenAI shape."""
    assert r.status_code == status, (r.status_code, r.text[:300])
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    err = body["error"]
    assert isinstance(err["message"], str) and err["message"]
    assert err["type"] == (
        "server_error"
        if status >= 500
        else {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}.get(
            status, "invalid_request_error"
        )
    )
    if param is not None:
        assert err["param"] == param, err
    if code is not None:
        assert err["code"] == code, err
    return err
