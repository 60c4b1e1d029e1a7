"""``lmleak serve`` (lmleak.cli.serve): the options reach lmleak.serve.serve, and bad input exits 2."""

from __future__ import annotations

import json

import uvicorn
from fastapi import FastAPI
from typer.testing import CliRunner

from lmleak.cli.main import app


def _corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        "".join(json.dumps({"text": t}) + "\n" for t in ["my name is ada", "call me at 555 0100"])
    )
    return path


def test_serve_builds_the_app_at_the_tier_and_runs_uvicorn_with_host_and_port(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append((app, kw)))  # no server loop
    corpus = _corpus(tmp_path)
    r = CliRunner().invoke(
        app, ["serve", f"fake:{corpus}", "--tier", "text", "--port", "8123", "--name", "m1"]
    )
    assert r.exit_code == 0, r.output
    ((served, kw),) = calls
    assert isinstance(served, FastAPI) and served.title == "lmleak serve: m1"
    assert kw == {"host": "127.0.0.1", "port": 8123, "log_level": "warning"}
    assert "serving m1 (tier text) at http://127.0.0.1:8123/v1" in " ".join(r.output.split())


def test_serve_with_an_unknown_tier_exits_2_before_loading_the_model(tmp_path, monkeypatch):
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: (_ for _ in ()).throw(AssertionError("served")))
    r = CliRunner().invoke(app, ["serve", str(tmp_path / "no-such-model"), "--tier", "everything"])
    assert r.exit_code == 2
    out = " ".join(r.output.split())
    assert "unknown tier 'everything'" in out and "--tier" in out


def test_serve_help_lists_every_tier():
    r = CliRunner().invoke(app, ["serve", "--help"])
    assert r.exit_code == 0
    out = " ".join(r.output.split())
    assert all(t in out for t in ("prompt_logprobs", "echo", "chat", "text")) and "--batch-tokens" in out
