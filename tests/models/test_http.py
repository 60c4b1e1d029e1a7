"""The HTTP backend against `lmleak serve` (every tier, in-process on 127.0.0.1) and a recorded-response
fake transport for the error paths (429, 500, truncated JSON, wrong model name, budget, cache)."""

from __future__ import annotations

import io
import json
import stat

import httpx
import numpy as np
import pytest

from lmleak.errors import CapabilityError, LmleakError, ModelError
from lmleak.models.base import Capability

TEXTS = [
    "hello my name is ada lovelace and my phone is 555 0100",
    "thank you very much for the call today",
    "my order number is 4 4 1 2 and it is late again",
    "please call me back at 555 0199 or ada@example.org thank you",
    "my name is bob and i like cats very much",
    "the weather is nice today thank you very much for asking",
]


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """A tiny GPT saved as an lmleak model folder, loaded in-process (max_length 16: windows happen)."""
    from lmleak.models.loading import load_model
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    root = tmp_path_factory.mktemp("http")
    tok = build_tokenizer(TEXTS, kind="word", vocab_size=200)
    module = new_small_gpt(len(tok), SmallGPTConfig(n_positions=16, n_embd=32, n_layer=1, n_head=2), seed=3)
    path = save_small_model(module, tok, root / "model")
    return load_model(str(path)), path


@pytest.fixture(scope="module")
def server(local):
    """One `lmleak serve` app per tier, on free loopback ports."""
    from lmleak.serve import TIERS, serving

    model, _ = local
    with (
        serving(model, tier=TIERS[0], name="tiny") as full,
        serving(model, tier="echo", name="tiny") as echo,
        serving(model, tier="chat", name="tiny") as chat,
        serving(model, tier="text", name="tiny") as text,
    ):
        yield {"prompt_logprobs": full, "echo": echo, "chat": chat, "text": text}


def _http(server, tier, tmp_path, query=""):
    from lmleak.models.http import HTTPModel

    q = f"cache={tmp_path / 'cache'}" + (f"&{query}" if query else "")
    return HTTPModel(f"{server[tier].url}?{q}#tiny")


def _seqs(model):
    return [model.tokenizer.encode(t) for t in TEXTS]


def _ledger(model, tmp_path, name):
    from lmleak.data.corpus import Corpus, Document
    from lmleak.ledger.ledger import build_ledger

    corpus = Corpus([Document(f"u{i % 3}", f"d{i}", t) for i, t in enumerate(TEXTS)])
    return build_ledger(model, corpus, tmp_path / name, shard_size=4)


@pytest.mark.parametrize("tier", ["prompt_logprobs", "echo", "chat", "text"])
def test_tier_is_detected_and_sets_capabilities_and_access(server, tmp_path, tier):
    m = _http(server, tier, tmp_path)
    assert m.tier == tier
    assert (
        m.capabilities
        == {
            "prompt_logprobs": {Capability.SCORE, Capability.TOP_K, Capability.GENERATE},
            "echo": {Capability.TOP_K, Capability.GENERATE},
            "chat": {Capability.GENERATE},
            "text": {Capability.GENERATE},
        }[tier]
    )
    assert (
        m.describe()["access"]
        == {"prompt_logprobs": "scores", "echo": "top_k", "chat": "generation", "text": "generation"}[tier]
    )


def test_prompt_logprobs_ledger_equals_in_process_ledger(local, server, tmp_path):
    model, _ = local
    m = _http(server, "prompt_logprobs", tmp_path, "batch=2&concurrency=3")
    assert m.tokenizer_source == "server /tokenize"
    assert _seqs(m) == _seqs(model)  # the server's /tokenize is the model's tokenizer
    a, b = _ledger(model, tmp_path, "in"), _ledger(m, tmp_path, "http")
    assert max(len(s) for s in _seqs(model)) + 1 > model.max_length  # sliding windows are exercised
    np.testing.assert_array_equal(a.token_ids, b.token_ids)
    np.testing.assert_array_equal(a.ranks, b.ranks)
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)
    np.testing.assert_allclose(a.top1_logprobs, b.top1_logprobs, atol=1e-5)
    assert a.k_available is None and b.k_available is None


def test_prompt_logprobs_scores_and_top_k_match_in_process(local, server, tmp_path):
    model, path = local
    m = _http(server, "prompt_logprobs", tmp_path, f"tokenizer={path}")
    assert m.tokenizer_source == str(path)
    ctx, cont = ["my name is", "please call me"], ["ada lovelace", "back at 555 0199"]
    got = [s.logprob for s in m.score_text(ctx, cont)]
    want = [s.logprob for s in model.score_text(ctx, cont)]
    np.testing.assert_allclose(got, want, atol=1e-5)
    prefixes = [s[:3] for s in _seqs(model)]
    for (gi, gl), (wi, wl) in zip(m.top_k(prefixes, 5), model.top_k(prefixes, 5), strict=True):
        np.testing.assert_array_equal(gi, wi)
        np.testing.assert_allclose(gl, wl, atol=1e-5)
    with pytest.raises(CapabilityError, match="full next-token distribution"):
        m.next_logprobs(prefixes[:1])
    nl = m.next_top_logprobs(prefixes[:1])
    top = np.argsort(-model.next_logprobs(prefixes[:1])[0], kind="stable")[:20]
    np.testing.assert_allclose(nl[0, top], model.next_logprobs(prefixes[:1])[0, top], atol=1e-5)
    assert np.isnan(nl).sum() == nl.shape[1] - 20  # only the top 20 are known


def test_server_tokenizer_decodes_many_rows_once_each_as_the_local_one(local, server, tmp_path, monkeypatch):
    """The report's span texts go through ``decode_many``: one /detokenize per distinct row (not one
    per row, one after another), and the same texts as the in-process tokenizer."""
    model, _ = local
    m = _http(server, "prompt_logprobs", tmp_path, "concurrency=3")
    assert m.tokenizer_source == "server /tokenize"
    seqs = _seqs(model)
    rows = [seqs[0][:4], seqs[1], [], seqs[0][:4], seqs[2][2:], seqs[1]]
    sent = m.client.counters.requests
    got = m.tokenizer.decode_many(rows)
    assert got == [model.tokenizer.decode(r) if r else "" for r in rows]
    assert m.client.counters.requests - sent == 3  # 3 distinct non-empty rows
    lines = io.StringIO()
    monkeypatch.setattr("lmleak.models.http_tokenizer.MANY_DECODES", 3)
    monkeypatch.setattr("lmleak.progress._ENABLED", True)
    monkeypatch.setattr("lmleak.progress._stream", lines)
    m.tokenizer.decode_many(rows)
    m.tokenizer.decode_many(rows)  # said once
    assert lines.getvalue().count("decoding 3 spans through the server's /detokenize") == 1
    assert "tokenizer=DIR" in lines.getvalue()


def test_membership_through_http_equals_in_process_and_exposure_is_refused(local, server, tmp_path):
    """Membership runs unchanged on a prompt_logprobs API (same numbers as in-process); canary exposure
    (its trie walk reads whole next-token distributions, which an API never returns) is refused with a
    CapabilityError instead of a silently wrong rank."""
    from lmleak.attacks.exposure import ExposureSettings, measure_exposure
    from lmleak.attacks.membership import text_scores

    model, _ = local
    m = _http(server, "prompt_logprobs", tmp_path)
    a, b = text_scores(model, TEXTS[:4]), text_scores(m, TEXTS[:4])
    for key in ("logprob", "min_k", "zlib"):
        np.testing.assert_allclose(a[key], b[key], rtol=1e-5, atol=1e-5)
    canaries = [{"prefix": "my phone is", "secret": "12"}]
    assert measure_exposure(model, canaries, ExposureSettings(alphabet="0123456789"))[0].rank >= 1
    with pytest.raises(CapabilityError, match="full next-token distribution"):
        measure_exposure(m, canaries, ExposureSettings(alphabet="0123456789"))


def test_echo_ledger_is_the_top5_view_with_exact_logprobs(local, server, tmp_path):
    """The echo tier's ledger equals the in-process ledger capped at k = 5 (ranks > 5 -> 6), with the
    true tokens' exact logprobs; the ledger records k_available = 5."""
    model, _ = local
    m = _http(server, "echo", tmp_path)
    a, b = _ledger(model, tmp_path, "in"), _ledger(m, tmp_path, "echo")
    assert b.k_available == 5
    np.testing.assert_array_equal(np.minimum(a.ranks, 6), b.ranks)
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)
    np.testing.assert_allclose(a.top1_logprobs, b.top1_logprobs, atol=1e-5)
    # likelihoods work on this tier too, but it does not grant SCORE (ranks beyond 5 are unknown)
    np.testing.assert_allclose(
        [s.logprob for s in m.score_text(["my name is"], ["bob"])],
        [s.logprob for s in model.score_text(["my name is"], ["bob"])],
        atol=1e-5,
    )
    with pytest.raises(CapabilityError, match="at most the top 5"):
        m.top_k([[5]], 6)
    with pytest.raises(CapabilityError, match="tier prompt_logprobs"):
        m.token_stats([[5, 6]])


@pytest.mark.parametrize("tier", ["prompt_logprobs", "echo", "chat", "text"])
def test_generation_through_every_tier_equals_in_process(local, server, tmp_path, tier):
    model, _ = local
    m = _http(server, tier, tmp_path)
    prompts = ["my name is", "please call me back at"]
    assert m.generate(prompts, max_new_tokens=5) == model.generate(prompts, max_new_tokens=5)
    assert m.generate(prompts, max_new_tokens=4, num_beams=3, num_return_sequences=2) == model.generate(
        prompts, max_new_tokens=4, num_beams=3, num_return_sequences=2
    )


def test_audit_skips_what_a_tier_cannot_support_and_records_the_access(local, server, tmp_path, monkeypatch):
    """An echo-tier API: the report runs (top-5) and its KART record names the API's access and tier;
    exposure (needs scores) is skipped with one line. A text-tier API: both are skipped, each with one
    line saying why, and the probe runs by generation. The API key reaches no file of the run."""
    from lmleak.audit.config import load_config
    from lmleak.audit.runner import run_audit

    monkeypatch.setenv("LMLEAK_API_KEY", "secret-key")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"user_id": f"u{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    canaries = tmp_path / "canaries.jsonl"
    canaries.write_text(json.dumps({"prefix": "my phone is", "secret": "555 0100"}) + "\n")
    subjects = tmp_path / "subjects.jsonl"
    subjects.write_text(
        json.dumps(
            {"subject_id": "u0", "name": "ada lovelace", "phone": "555 0100", "email": "ada@example.org"}
        )
        + "\n"
    )
    cfg_path = tmp_path / "audit.yaml"
    cfg_path.write_text(
        f"models:\n  - name: echo-api\n    path: '{server['echo'].url}?cache={tmp_path / 'c'}#tiny'\n"
        f"  - name: text-api\n    path: '{server['text'].url}?cache={tmp_path / 'c'}#tiny'\n"
        f"corpus:\n  path: {corpus}\nout: {tmp_path / 'run'}\n"
        f"analyses:\n  report: {{k: [1, 3]}}\n  exposure: {{canaries: {canaries}}}\n  mia: null\n"
        f"  probe: {{subjects: {subjects}, level: twin, templates: 1, beams: 1}}\n"
    )
    lines: list[str] = []
    run = run_audit(load_config(cfg_path), echo=lines.append)
    models = json.loads((run / "summary.json").read_text())["models"]
    echo, text = models["echo-api"], models["text-api"]
    assert set(echo["stages"]) == {"report", "probe"} and set(echo["skipped"]) == {"exposure"}
    assert "'score'" in echo["skipped"]["exposure"]
    rec = echo["scenarios"]["report"]
    assert rec["access"] == "top_k" and "tier 'echo'" in rec["notes"]
    assert echo["access"]["tier"] == "echo" and echo["access"]["requests"] > 0
    assert set(text["skipped"]) == {"report", "exposure"} and "'top_k'" in text["skipped"]["report"]
    probe = text["scenarios"]["probe"]  # probing by generation only, on the access the API grants
    assert probe["access"] == "generation" and "tier 'text'" in probe["notes"]
    assert text["access"] == {**text["access"], "tier": "text", "access": "generation"}
    # provenance: each API's server, model id and fingerprint; its cache's hits, misses and fingerprint
    prov = json.loads((run / "summary.json").read_text())["provenance"]["models"]
    assert prov["echo-api"]["backend"] == "http" and prov["echo-api"]["model_id"] == "tiny"
    assert prov["echo-api"]["fingerprint"] == echo["cache"]["fingerprint"] != text["cache"]["fingerprint"]
    assert echo["cache"]["misses"] > 0 and echo["cache"]["location"] == str(tmp_path / "c")
    assert sum("skipped" in line for line in lines) == 3
    assert all("secret-key" not in p.read_text(errors="replace") for p in run.rglob("*") if p.is_file())


def test_audit_skips_a_report_k_beyond_the_api_top_k(local, server, tmp_path):
    from lmleak.audit.config import load_config
    from lmleak.audit.runner import run_audit

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"user_id": f"u{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    cfg_path = tmp_path / "audit.yaml"
    cfg_path.write_text(
        f"models:\n  - name: api\n    path: '{server['echo'].url}?cache={tmp_path / 'c'}#tiny'\n"
        f"corpus:\n  path: {corpus}\nout: {tmp_path / 'run'}\n"
        "analyses:\n  report: {k: [1, 10]}\n  mia: null\n  probe: null\n"
    )
    run = run_audit(load_config(cfg_path))
    skipped = json.loads((run / "summary.json").read_text())["models"]["api"]["skipped"]
    assert "k = 10 needs the top 10 tokens" in skipped["report"] and "only its top 5" in skipped["report"]


# ---------------------------------------------------------------------- the fake transport (error paths)
CARD = {
    "object": "list",
    "data": [
        {"id": "m", "max_model_len": 32, "lmleak": {"bos_id": 1, "eos_id": 2, "pad_id": 0, "vocab_size": 50}}
    ],
}


def _echo_answer(prompt_rows):
    """A legacy echo answer for token-id rows (token i's logprob = -i/10, always rank 1)."""
    choices = []
    for i, row in enumerate(prompt_rows):
        toks = [f"token_id:{t}" for t in row]
        tops = [None] + [{f"token_id:{t}": -t / 10} for t in row[1:]]
        choices.append(
            {
                "index": i,
                "text": "",
                "logprobs": {
                    "tokens": toks,
                    "token_logprobs": [None] + [-t / 10 for t in row[1:]],
                    "top_logprobs": tops,
                },
            }
        )
    return {"choices": choices, "usage": {"prompt_tokens": sum(map(len, prompt_rows))}}


def _is_probe(body):
    """Whether a request is the fingerprint probe every model load sends (answered by default)."""
    from lmleak.models.http import PROBE_IDS

    prompt = body.get("prompt")
    return isinstance(prompt, list) and bool(prompt) and prompt[0][1:] == list(PROBE_IDS)


class Recorder:
    """A scripted server: ``script`` maps a path to a list of responses (status, body) served in order
    (the last one repeats); completions answer in the echo format by default."""

    def __init__(self, script=None):
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.calls: list[tuple[str, dict]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        body = json.loads(request.content) if request.content else {}
        self.calls.append((path, body))
        if path in self.script and not _is_probe(body):
            seq = self.script[path]
            status, payload = seq.pop(0) if len(seq) > 1 else seq[0]
            if isinstance(payload, bytes):
                return httpx.Response(status, content=payload, headers={"content-type": "application/json"})
            return httpx.Response(status, json=payload)
        if path == "/v1/models":
            return httpx.Response(200, json=CARD)
        if path == "/v1/completions":
            return httpx.Response(200, json=_echo_answer(body["prompt"]))
        return httpx.Response(404, json={"error": {"message": "not found"}})


def _fake(recorder, tmp_path, query="tier=echo&tokenizer=", **kw):
    from lmleak.models.http import HTTPModel

    q = f"cache={tmp_path / 'cache'}&{query}".replace("&tokenizer=", "")
    sleeps: list[float] = []
    m = HTTPModel(
        f"http://127.0.0.1:9/v1?{q}#m", transport=httpx.MockTransport(recorder), sleep=sleeps.append, **kw
    )
    return m, sleeps


def test_429_then_success_is_retried_with_backoff(tmp_path):
    rec = Recorder(
        {
            "/v1/completions": [
                (429, {"error": {"message": "slow down"}}),
                (503, {"error": {"message": "busy"}}),
                (200, _echo_answer([[1, 7, 9]])),
            ]
        }
    )
    m, sleeps = _fake(rec, tmp_path, "tier=echo")
    st = m.topk_ranks([[7, 9]])[0]
    np.testing.assert_allclose(st.logprobs, [-0.7, -0.9], rtol=1e-6)
    np.testing.assert_array_equal(st.ranks, [1, 1])
    assert sleeps == [0.5, 1.0]  # exponential backoff
    assert m.counters.requests == 5 and m.counters.retried == 2  # /models + the probe + 3 tries


def test_500s_exhausted_name_the_url_and_the_last_status(tmp_path):
    rec = Recorder({"/v1/completions": [(500, {"error": {"message": "boom"}})]})
    m, sleeps = _fake(rec, tmp_path, "tier=echo&retries=2")
    with pytest.raises(
        ModelError, match=r"/v1/completions: no answer after 3 tries \(last: HTTP 500: boom\)"
    ):
        m.topk_ranks([[7, 9]])
    assert len(sleeps) == 2


def test_truncated_json_is_a_clear_error(tmp_path):
    rec = Recorder({"/v1/completions": [(200, b'{"choices": [{"index": 0, "logpro')]})
    m, _ = _fake(rec, tmp_path, "tier=echo")
    with pytest.raises(ModelError, match="not complete JSON"):
        m.topk_ranks([[7, 9]])


def test_wrong_model_name_lists_the_served_models(tmp_path):
    from lmleak.models.http import HTTPModel

    rec = Recorder()
    with pytest.raises(ModelError, match=r"does not serve a model named 'nope'; it serves: m\. Write .*#m"):
        HTTPModel(f"http://127.0.0.1:9/v1?cache={tmp_path / 'a'}#nope", transport=httpx.MockTransport(rec))
    # a server without /models: its 404 on the first request names the model
    missing = [(404, {"error": {"message": "The model `nope` does not exist."}})]
    rec = Recorder({"/v1/models": [(404, {"error": {"message": "no route"}})], "/tokenize": missing})
    with pytest.raises(ModelError, match="knows no model 'nope'"):
        HTTPModel(f"http://127.0.0.1:9/v1?cache={tmp_path / 'b'}#nope", transport=httpx.MockTransport(rec))


def test_connection_refused_is_a_clear_error(tmp_path):
    import socket

    from lmleak.models.http import HTTPModel

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(ModelError, match="cannot connect .* is the server running"):
        HTTPModel(f"http://127.0.0.1:{port}/v1?cache={tmp_path}#m")


def test_max_requests_stops_with_what_was_cached_and_a_rerun_resumes(tmp_path):
    from lmleak.models.http import RequestBudgetError

    seqs = [[3 + i, 4 + i] for i in range(6)]
    m, _ = _fake(Recorder(), tmp_path, "tier=echo&batch=1&concurrency=1&max_requests=4")
    with pytest.raises(
        RequestBudgetError, match=r"--max-requests 4 reached \(4 requests sent, 0 answered from the cache"
    ):
        m.topk_ranks(seqs)
    assert isinstance(RequestBudgetError("x"), LmleakError)  # the CLI turns it into exit 2
    rec = Recorder()
    m2, _ = _fake(rec, tmp_path, "tier=echo&batch=1&concurrency=1")
    m2.topk_ranks(seqs)
    assert m2.counters.cached == 2  # the two documents answered before the stop (/models + probe took 2)
    # /models and the fingerprint probe are asked afresh on every load; of the documents only the rest
    assert [p for p, _ in rec.calls] == ["/v1/models", "/v1/completions"] + ["/v1/completions"] * 4
    assert _is_probe(rec.calls[1][1])


def test_cache_hit_on_rerun_asks_only_the_fingerprint_and_is_owner_only(tmp_path):
    seqs = [[3, 4, 5], [6, 7]]
    first, _ = _fake(Recorder(), tmp_path, "tier=echo&batch=1&concurrency=2")
    a = first.topk_ranks(seqs)
    assert first.cache_stats()["hits"] == 0 and first.cache_stats()["misses"] == 2
    rec = Recorder()
    again, _ = _fake(rec, tmp_path, "tier=echo&batch=1&concurrency=2")
    b = again.topk_ranks(seqs)
    # only the model's fingerprint (its /v1/models entry and the probe) is asked again: never cached
    assert [p for p, _ in rec.calls] == ["/v1/models", "/v1/completions"] and again.counters.requests == 2
    stats = again.cache_stats()
    assert (stats["hits"], stats["misses"], stats["fingerprint"]) == (2, 0, first.fingerprint)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.ranks, y.ranks)
    cache = tmp_path / "cache"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in cache.rglob("*.json"))


def test_api_key_comes_from_the_environment_and_never_into_the_cache_key(tmp_path, monkeypatch):
    monkeypatch.setenv("LMLEAK_API_KEY", "secret-key")
    rec = Recorder()
    seen = []

    def spy(request):
        seen.append(request.headers.get("authorization"))
        return rec(request)

    from lmleak.models.http import HTTPModel

    m = HTTPModel(
        f"http://127.0.0.1:9/v1?tier=echo&cache={tmp_path / 'c'}#m", transport=httpx.MockTransport(spy)
    )
    m.topk_ranks([[3, 4]])
    assert set(seen) == {"Bearer secret-key"}
    assert all("secret-key" not in p.read_text() for p in (tmp_path / "c").rglob("*.json"))
    assert "secret-key" not in json.dumps(m.describe())
    with pytest.raises(ModelError, match="credentials in the model URL are refused"):
        HTTPModel("http://user:pw@127.0.0.1:9/v1#m")


def test_load_model_dispatches_on_the_url(tmp_path):
    from lmleak.models.loading import load_model

    with pytest.raises(ModelError, match="names no model"):
        load_model("http://127.0.0.1:9/v1")
    with pytest.raises(ModelError, match="unknown tier 'full'"):
        load_model("http://127.0.0.1:9/v1?tier=full#m")


def test_cli_max_requests_exits_2_with_one_line_and_a_rerun_resumes_from_the_cache(local, server, tmp_path):
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"user_id": f"u{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    url = f"{server['prompt_logprobs'].url}?cache={tmp_path / 'c'}&batch=1&concurrency=1#tiny"
    args = ["report", "--model", url, "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--json"]
    res = CliRunner().invoke(app, ["--max-requests", "5", *args])
    assert res.exit_code == 2
    assert "--max-requests 5 reached" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "run" / "ledger" / "ledger.json").read_text())["num_docs"] == len(TEXTS)


def test_a_chat_only_api_without_logprobs_is_the_chat_tier(tmp_path):
    refused = [(400, {"error": {"message": "logprobs are not supported"}})]
    chat = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}}]}

    class ChatOnly(Recorder):
        def __call__(self, request):
            body = json.loads(request.content) if request.content else {}
            if request.url.path == "/v1/chat/completions":
                self.calls.append((request.url.path, body))
                return httpx.Response(*refused[0]) if body.get("logprobs") else httpx.Response(200, json=chat)
            if request.url.path == "/v1/completions":
                return httpx.Response(404, json={"error": {"message": "Not Found"}})
            return super().__call__(request)

    from lmleak.models.http import HTTPModel

    m = HTTPModel(
        f"http://127.0.0.1:9/v1?cache={tmp_path}#m",
        transport=httpx.MockTransport(ChatOnly()),
        tokenizer=type("T", (), {"bos_id": 1, "encode": lambda self, t: [5]})(),
    )
    assert m.tier == "chat" and m.capabilities == {Capability.GENERATE}
    assert m.generate(["hi there"], max_new_tokens=3) == [["hello"]]


# ---------------------------------------------------------------------- issue 25: a cache that cannot lie
def _report(url_or_path, corpus, out, *extra):
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    args = ["report", "--model", url_or_path, "--corpus", str(corpus), "--out", str(out), "--json", *extra]
    return CliRunner().invoke(app, args)


def test_another_model_under_the_same_url_is_measured_afresh_and_a_dead_server_is_exit_2(local, tmp_path):
    """Serve model A as 'tiny', `lmleak report` it over HTTP; serve model B under the same name on the
    same port and run the same command into the same run: it sends requests (the cache in the run says
    in one line that the model changed) and reports B's numbers, equal to B's in-process report. With
    nothing listening the rerun exits 2, and a report into a new folder leaves nothing behind."""
    from lmleak.models.loading import load_model
    from lmleak.models.small import SmallGPTConfig, load_small_model, new_small_gpt, save_small_model
    from lmleak.serve import serving

    model_a, path_a = local
    tok = load_small_model(path_a).tokenizer.hf
    cfg = SmallGPTConfig(n_positions=16, n_embd=32, n_layer=1, n_head=2)
    path_b = save_small_model(
        new_small_gpt(model_a.module.config.vocab_size, cfg, seed=11), tok, tmp_path / "b"
    )
    model_b = load_model(str(path_b))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"user_id": f"u{i % 3}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    run = tmp_path / "run"

    with serving(model_a, name="tiny") as a:
        port = a.port
        url = f"{a.url}#tiny"
        res = _report(url, corpus, run)
        assert res.exit_code == 0, res.output
    first = json.loads((run / "summary.json").read_text())
    with serving(model_b, name="tiny", port=port):
        res = _report(url, corpus, run)
        assert res.exit_code == 0, res.output
    second = json.loads((run / "summary.json").read_text())
    res_b = _report(str(path_b), corpus, tmp_path / "inprocess-b")
    assert res_b.exit_code == 0, res_b.output
    b = json.loads((tmp_path / "inprocess-b" / "summary.json").read_text())

    # the second run asked the server afresh: A's answers were deleted first (its hits are repeats of
    # its own requests: the same text tokenised twice)
    assert second["cache"]["misses"] > 0 and first["cache"]["invalidated"] is None
    assert f"its {first['cache']['misses']} cached answers were deleted" in second["cache"]["invalidated"][0]
    assert "is not the model whose answers" in second["cache"]["invalidated"][0]
    assert second["provenance"]["model"]["fingerprint"] != first["provenance"]["model"]["fingerprint"]
    assert second["cache"]["location"] == str((run / "http-cache").resolve())
    # ... and reports B's numbers, not A's
    assert first["perplexity"] != pytest.approx(b["perplexity"], rel=1e-3)
    assert second["perplexity"] == pytest.approx(b["perplexity"], rel=1e-5)
    assert second["top_k_accuracy"] == pytest.approx(b["top_k_accuracy"], abs=1e-9)
    for key in ("num_tokens", "num_sequences", "unique_sequences"):
        assert second[key] == b[key], key

    res = _report(url, corpus, run)  # nothing listens on the port now
    assert res.exit_code == 2 and "cannot connect" in res.output
    res = _report(url, corpus, tmp_path / "never")
    assert res.exit_code == 2 and not (tmp_path / "never").exists()


def test_a_named_cache_dir_is_shared_between_runs_of_the_same_model(local, server, tmp_path):
    """lmleak --cache-dir D: a second report of the same model into another run asks the server only
    for the fingerprint (/models and the probe) and answers everything else from D."""
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"user_id": f"u{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    url = f"{server['prompt_logprobs'].url}#tiny"
    runs = []
    for name in ("one", "two"):
        args = ["--cache-dir", str(tmp_path / "shared"), "report", "--model", url, "--corpus", str(corpus)]
        res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / name), "--json"])
        assert res.exit_code == 0, res.output
        runs.append(json.loads((tmp_path / name / "summary.json").read_text()))
    one, two = runs
    assert not (tmp_path / "one" / "http-cache").exists() and (tmp_path / "shared" / "CACHEDIR.TAG").exists()
    assert (
        two["cache"]["misses"] == 0 and two["cache"]["hits"] == one["cache"]["hits"] + one["cache"]["misses"]
    )
    assert two["cache"]["fingerprint"] == one["cache"]["fingerprint"]
    for key in ("perplexity", "unique_sequences", "num_tokens"):
        assert two[key] == one[key]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("max_length=1", r"max_length='1' must be an integer >= 2"),
        ("timeout=nan", r"timeout='nan' must be a finite number >= 0.001"),
        ("timeout=inf", r"timeout='inf' must be a finite number"),
        ("batch=0", r"batch='0' must be an integer >= 1"),
        ("concurrency=1e9", r"concurrency='1e9' must be an integer >= 1 and <= 256"),
        ("retries=-1", r"retries='-1' must be an integer >= 0"),
        ("max_response_mb=0", r"max_response_mb='0' must be a finite number >= 0.001"),
        ("cache=", r"option cache= is empty"),
    ],
)
def test_spec_options_are_checked_before_anything_is_sent(tmp_path, query, message):
    rec = Recorder()
    with pytest.raises(ModelError, match=message):
        _fake(rec, tmp_path, query)
    assert rec.calls == []


def test_max_length_must_fit_the_servers_window_and_a_shorter_one_is_said(tmp_path, capsys):
    from lmleak import progress

    with pytest.raises(ModelError, match=r"max_length=64 is longer than the server's window \(32 tokens"):
        _fake(Recorder(), tmp_path, "tier=echo&max_length=64")
    was = progress.enabled()
    progress.set_enabled(True)
    try:
        m, _ = _fake(Recorder(), tmp_path, "tier=echo&max_length=8")
    finally:
        progress.set_enabled(was)
    assert m.max_length == 8 and "shorter than the server's 32" in capsys.readouterr().err
    # the probe row fits the window: the start token and 7 of the fixed probe ids
    assert m.probe.ids == (1, 3, 4, 5, 6, 7, 8, 9)


def test_a_redacted_report_over_http_keeps_no_cache_anywhere(local, server, tmp_path, monkeypatch):
    """--redact: no RUN/http-cache, nothing in a named --cache-dir, nothing in the old default folder;
    the summary says why."""
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    monkeypatch.setenv("LMLEAK_CACHE", str(tmp_path / "old-default"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"user_id": f"u{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    url = f"{server['prompt_logprobs'].url}#tiny"
    args = ["--cache-dir", str(tmp_path / "named"), "report", "--model", url, "--corpus", str(corpus)]
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "run"), "--redact", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (
        summary["cache"]["location"] == "off (a redacted run keeps no cache)"
        and summary["cache"]["hits"] == 0
    )
    assert not (tmp_path / "named").exists() and not (tmp_path / "old-default").exists()
    assert not (tmp_path / "run" / "http-cache").exists()
    for p in (tmp_path / "run").rglob("*"):
        assert not p.is_file() or "ada@example.org" not in p.read_text(errors="replace"), p


# ---------------------------------------------------------------------- issue 33: the tokenizer is the model's
OTHER_TEXTS = [  # another vocabulary: the same words by other frequencies, and more of them
    "zebra yak walrus vole urchin tapir seal raven quail puma otter newt mole lynx koala ibis",
    "zebra zebra yak yak walrus walrus vole vole cats cats cats cats very very very very much",
    *TEXTS,
]


def _other_tokenizer_model(local, tmp_path):
    """A model folder whose tokenizer is another one of the same vocabulary size as the served model's."""
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    model_a, _ = local
    size = len(model_a.tokenizer.hf)
    tok_b = build_tokenizer(OTHER_TEXTS, kind="word", vocab_size=size)
    assert len(tok_b) == size  # the same vocabulary size: only the ids differ
    cfg = SmallGPTConfig(n_positions=16, n_embd=32, n_layer=1, n_head=2)
    return save_small_model(new_small_gpt(size, cfg, seed=5), tok_b, tmp_path / "b")


def test_another_models_tokenizer_of_the_same_size_is_refused_naming_both(local, tmp_path):
    """The reproduction: `lmleak serve A`, then `lmleak report --model 'URL?tokenizer=B#tiny'` with another
    model's folder of the same vocabulary size: exit 2 in one line naming both tokenizers and the fix,
    before any scoring (no run is left); A's own folder is checked and accepted."""
    from lmleak.serve import serving

    model_a, path_a = local
    path_b = _other_tokenizer_model(local, tmp_path)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"user_id": f"u{i % 3}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    with serving(model_a, name="tiny") as a:
        res = _report(f"{a.url}?tokenizer={path_b}#tiny", corpus, tmp_path / "wrong")
        assert res.exit_code == 2, res.output
        line = next(x for x in res.output.splitlines() if "is not the served model's" in x)
        assert (
            f"the tokenizer {path_b}" in line and "the server's /tokenize" in line and "tokenizer=DIR" in line
        )
        assert "Traceback" not in res.output and not (tmp_path / "wrong" / "summary.json").exists()
        res = _report(f"{a.url}?tokenizer={path_a}#tiny", corpus, tmp_path / "right")
        assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "right" / "summary.json").read_text())
    assert summary["tokenizer_verified"] is True
    model = summary["provenance"]["model"]
    assert model["tokenizer_verified"] is True and len(model["tokenizer_sha256"]) == 64


def test_a_wrong_tokenizer_that_agrees_on_the_fixed_probe_is_caught_on_the_corpus_sample(
    local, server, tmp_path, monkeypatch
):
    """A word-level tokenizer maps words it lacks to its unknown token whichever vocabulary it has, so a
    probe of such words cannot tell two apart; the ledger pass asks /tokenize on the corpus's first
    documents too."""
    from lmleak.data.corpus import Corpus, Document
    from lmleak.ledger.ledger import build_ledger
    from lmleak.models.small import load_small_model

    model_a, _ = local
    tok_b = load_small_model(_other_tokenizer_model(local, tmp_path)).tokenizer
    probe = "Grüße aus Köln"
    assert tok_b.encode(probe) == model_a.tokenizer.encode(probe)  # unknown words only
    monkeypatch.setattr("lmleak.models.http.TOKENIZER_PROBE", probe)
    from lmleak.models.http import HTTPModel

    m = HTTPModel(f"{server['prompt_logprobs'].url}?cache=off#tiny", tokenizer=tok_b)
    assert m.tokenizer_verified is True  # the probe agreed
    corpus = Corpus([Document("u", f"d{i}", t) for i, t in enumerate(TEXTS)])
    with pytest.raises(ModelError, match=r"is not the served model's: on 'hello my name is ada"):
        build_ledger(m, corpus, tmp_path / "run")
    assert not (tmp_path / "run" / "ledger").exists()


def test_the_fingerprint_includes_the_tokenizer(local, server, tmp_path):
    """The same server read through its own /tokenize and through a local copy of its tokenizer: two
    fingerprints (the ids sent differ in general; the cache of one is never the other's)."""
    _, path_a = local
    remote = _http(server, "prompt_logprobs", tmp_path)
    local_tok = _http(server, "prompt_logprobs", tmp_path, f"tokenizer={path_a}")
    again = _http(server, "prompt_logprobs", tmp_path, f"tokenizer={path_a}")
    assert remote.fingerprint != local_tok.fingerprint == again.fingerprint
    assert local_tok.provenance()["tokenizer_sha256"] == again.provenance()["tokenizer_sha256"]
    assert remote.provenance()["tokenizer_sha256"] == "server /tokenize"


class _FarTokenizer:
    """A tokenizer of 100 ids that writes every word as an id of 60..99 (the echo fake scores id t at
    -t/10 nats: a perplexity near e^8, far above 100)."""

    bos_id = 1
    vocab_size = 100

    def encode(self, text):
        return [60 + len(w) % 40 for w in text.split()]


def test_without_tokenize_the_tokenizer_is_unverified_and_a_perplexity_above_the_vocabulary_stops(
    tmp_path, monkeypatch
):
    """A server without /tokenize: the run says in one line that the tokenizer is unverified and records
    tokenizer_verified: false; the corpus perplexity (~e^8 over 100 tokens) stops the ledger as invalid."""
    from lmleak.data.corpus import Corpus, Document
    from lmleak.ledger.ledger import build_ledger

    lines = io.StringIO()
    monkeypatch.setattr("lmleak.progress._ENABLED", True)
    monkeypatch.setattr("lmleak.progress._stream", lines)
    m, _ = _fake(Recorder(), tmp_path, tokenizer=_FarTokenizer())
    assert m.tokenizer_verified is False and m.describe()["tokenizer_verified"] is False
    assert m.provenance()["tokenizer_verified"] is False
    assert lines.getvalue().count("is unverified (recorded as tokenizer_verified: false)") == 1
    corpus = Corpus([Document("u", "d", "one two three four five six")])
    with pytest.raises(
        ModelError, match=r"corpus perplexity [\d,.]+ is above the vocabulary size \(100 tokens"
    ):
        build_ledger(m, corpus, tmp_path / "run")


def test_the_text_tiers_weak_fingerprint_is_said_at_run_time(server, tmp_path, monkeypatch):
    """A text tier is known only by 4 greedy tokens: one line says so when the model loads (it was said
    only in docs/http.md); a scoring tier's fingerprint (16 log-probabilities) says nothing."""
    lines = io.StringIO()
    monkeypatch.setattr("lmleak.progress._ENABLED", True)
    monkeypatch.setattr("lmleak.progress._stream", lines)
    _http(server, "text", tmp_path)
    said = [x for x in lines.getvalue().splitlines() if "weak fingerprint" in x]
    assert len(said) == 1 and "its 4 greedy tokens after 'The capital of France is'" in said[0]
    lines.truncate(0)
    _http(server, "prompt_logprobs", tmp_path)
    assert "weak fingerprint" not in lines.getvalue()


def test_membership_over_http_checks_a_local_tokenizer_on_the_texts_it_scores(
    local, server, tmp_path, monkeypatch
):
    """The membership attack (which builds no ledger) checks the texts it scores too: a wrong tokenizer
    that agrees on the probe is refused before any run folder is written."""
    from lmleak.attacks.membership import MembershipTexts, run_membership
    from lmleak.models.http import HTTPModel
    from lmleak.models.small import load_small_model

    tok_b = load_small_model(_other_tokenizer_model(local, tmp_path)).tokenizer
    monkeypatch.setattr("lmleak.models.http.TOKENIZER_PROBE", "Grüße aus Köln")
    m = HTTPModel(f"{server['prompt_logprobs'].url}?cache=off#tiny", tokenizer=tok_b)
    with pytest.raises(ModelError, match="is not the served model's"):
        run_membership(m, MembershipTexts(TEXTS[:3], TEXTS[3:]), tmp_path / "mia")
    assert not (tmp_path / "mia").exists()
