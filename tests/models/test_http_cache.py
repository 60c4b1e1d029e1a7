"""The HTTP answer cache: keyed by the model's fingerprint, invalidated (one line) when another model
answers under the same URL, kept inside the run by default, never in a redacted run, cleared only
where it carries its CACHEDIR.TAG."""

from __future__ import annotations

import json
import stat

import httpx
import pytest

from lmleak import progress
from lmleak.errors import ConfigError
from lmleak.models.http_cache import (
    RUN_CACHE,
    TAG,
    AnswerCache,
    Probe,
    cache_info,
    clear_cache,
    legacy_cache_dir,
    stable_card,
)
from lmleak.runs import open_run


def _probe(lps=(-1.0, -2.0), card=None, tier="echo"):
    return Probe("http://h/v1", "m", tier, card or {"id": "m", "root": "/models/a"}, (1, 3, 4), tuple(lps))


def test_the_fingerprint_ignores_what_vllm_regenerates_and_a_probe_within_tolerance():
    a = _probe()
    b = Probe(
        a.endpoint,
        a.model,
        a.tier,
        {**a.card, "created": 123, "permission": [{"id": "p-1"}]},
        a.ids,
        (-1.0, -2.0005),
    )
    assert a.differs(b) is None
    assert stable_card(b.card) == a.card
    assert "root" in a.differs(_probe(card={"id": "m", "root": "/models/b"}))
    assert "moved by up to 0.01 nats" in a.differs(_probe(lps=(-1.0, -2.01)))
    assert "tier" in a.differs(_probe(tier="prompt_logprobs"))
    assert a.fingerprint() != _probe(lps=(-1.0, -2.01)).fingerprint() and len(a.fingerprint()) == 16


def test_a_changed_model_invalidates_its_own_answers_only_and_says_so_in_one_line(tmp_path):
    lines = []
    was = progress.enabled()
    progress.set_enabled(True)  # an earlier CLI test with --json may have turned it off
    progress.set_stream(
        type("S", (), {"write": lambda self, s: lines.append(s), "flush": lambda self: None})()
    )
    try:
        c = AnswerCache(tmp_path, _probe())
        c.put("/completions", {"prompt": [[1, 2]]}, {"a": 1})
        other = Probe("http://h/v1", "other", "echo", {"id": "other"}, (1,), (-3.0,))
        AnswerCache(tmp_path, other).put("/completions", {"x": 1}, {"b": 2})
        same = AnswerCache(tmp_path, _probe(lps=(-1.0, -2.0004)))  # the same model, rounding apart
        assert same.invalidated is None and same.fingerprint == c.fingerprint
        assert same.get("/completions", {"prompt": [[1, 2]]}) == (True, {"a": 1})
        changed = AnswerCache(tmp_path, _probe(lps=(-1.5, -2.0)))
        assert changed.get("/completions", {"prompt": [[1, 2]]}) == (False, None)
        assert changed.fingerprint != c.fingerprint
        assert (
            "its 1 cached answers were deleted" in changed.invalidated
            and "moved by up to 0.5" in changed.invalidated
        )
        assert AnswerCache(tmp_path, other).get("/completions", {"x": 1}) == (
            True,
            {"b": 2},
        )  # other model kept
    finally:
        progress.set_stream(None)
        progress.set_enabled(was)
    said = [line for line in "".join(lines).splitlines() if "cache:" in line]
    assert len(said) == 1 and said[0].startswith("[lmleak] cache: http://h/v1#m is not the model")


def test_the_cache_folder_is_owner_only_and_tagged(tmp_path):
    root = tmp_path / "c"
    c = AnswerCache(root, _probe())
    c.put("/p", {"b": 1}, {"a": 1})
    assert (root / TAG).read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert "holds training text" in (root / TAG).read_text()
    for p in root.rglob("*"):
        assert stat.S_IMODE(p.stat().st_mode) == (0o700 if p.is_dir() else 0o600), p


def test_clear_deletes_a_tagged_or_legacy_cache_and_refuses_anything_else(tmp_path, monkeypatch):
    root = tmp_path / "c"
    AnswerCache(root, _probe()).put("/p", {"b": 1}, {"a": 1})
    assert cache_info(root)["answers"] == 1 and cache_info(root)["models"] == 1
    assert clear_cache(root)["answers"] == 1 and not root.exists()
    assert clear_cache(root)["exists"] is False  # nothing there: nothing to do
    precious = tmp_path / "precious"
    (precious / "ab").mkdir(parents=True)
    (precious / "ab" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="is not an lmleak answer cache"):
        clear_cache(precious)
    assert (precious / "ab" / "notes.txt").exists()
    monkeypatch.setenv("LMLEAK_CACHE", str(tmp_path / "old"))
    legacy = legacy_cache_dir()
    (legacy / "3f").mkdir(parents=True)
    (legacy / "3f" / ("3f" + "0" * 62 + ".json")).write_text("{}")
    assert clear_cache(legacy)["answers"] == 1 and not legacy.exists()


# ---------------------------------------------------------------------- where the client keeps it
CARD = {
    "object": "list",
    "data": [{"id": "m", "max_model_len": 32, "lmleak": {"bos_id": 1, "vocab_size": 50}}],
}


def _echo(rows):
    return {
        "choices": [
            {
                "index": i,
                "text": "",
                "logprobs": {
                    "tokens": [f"token_id:{t}" for t in row],
                    "token_logprobs": [None] + [-t / 10 for t in row[1:]],
                    "top_logprobs": [None] + [{f"token_id:{t}": -t / 10} for t in row[1:]],
                },
            }
            for i, row in enumerate(rows)
        ]
    }


def _model(query=""):
    from lmleak.models.http import HTTPModel

    def handle(request):
        if request.url.path == "/v1/models":
            return httpx.Response(200, json=CARD)
        return httpx.Response(200, json=_echo(json.loads(request.content)["prompt"]))

    return HTTPModel(f"http://127.0.0.1:9/v1?tier=echo{query}#m", transport=httpx.MockTransport(handle))


def test_by_default_the_cache_lives_in_the_run_and_a_redacted_run_keeps_none(tmp_path):
    m = _model()
    m.topk_ranks([[3, 4]])  # no run: nothing cached, and it says why
    assert m.cache_stats()["location"].startswith("off (no run")
    with open_run(tmp_path / "run"):
        m.topk_ranks([[3, 4]])
        m.topk_ranks([[3, 4]])
    assert (tmp_path / "run" / RUN_CACHE / TAG).exists()
    assert m.cache_stats()["hits"] == 1 and m.cache_stats()["location"] == str(
        (tmp_path / "run" / RUN_CACHE).resolve()
    )
    r = _model(f"&cache={tmp_path / 'named'}")
    with open_run(tmp_path / "redacted", redacted=True):
        r.topk_ranks([[3, 4]])
        r.topk_ranks([[3, 4]])
    assert (
        r.cache_stats()["hits"] == 0 and r.cache_stats()["location"] == "off (a redacted run keeps no cache)"
    )
    assert not (tmp_path / "named").exists() and not (tmp_path / "redacted" / RUN_CACHE).exists()
    off = _model("&cache=off")
    with open_run(tmp_path / "run2"):
        off.topk_ranks([[3, 4]])
    assert not (tmp_path / "run2" / RUN_CACHE).exists()
