"""``lmleak serve`` (lmleak.cli.serve): the options reach lmleak.serve.serve (tier, name, limits, API
key from the option or LMLEAK_SERVE_KEY, allowed hosts), and bad input exits 2 before the model loads."""

from __future__ import annotations

import json

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient
from typer.testing import CliRunner

import lmleak.serve.server as server_mod
from lmleak.cli.main import app


def _corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        "".join(json.dumps({"text": t}) + "\n" for t in ["my name is ada", "call me at 555 0100"])
    )
    return path


@pytest.fixture
def ran(monkeypatch):
    """Replaces the server loop: records the app and the bound port instead of serving."""
    calls = []

    def fake(served_app, sock):
        calls.append((served_app, sock.getsockname()[1]))
        sock.close()

    monkeypatch.setattr(server_mod, "run_foreground", fake)
    return calls


def test_serve_builds_the_app_with_its_options_and_binds_the_port(tmp_path, ran):
    corpus = _corpus(tmp_path)
    r = CliRunner().invoke(
        app,
        [
            "serve",
            f"fake:{corpus}",
            "--tier",
            "text",
            "--port",
            "0",
            "--name",
            "m1",
            "--max-n",
            "4",
            "--deadline",
            "9",
        ],
    )
    assert r.exit_code == 0, r.output
    ((served, port),) = ran
    assert isinstance(served, FastAPI) and served.title == "lmleak serve: m1"
    out = " ".join(r.output.split())
    assert f"serving m1 (tier text) at http://127.0.0.1:{port}/v1" in out
    assert "no API key" in out and "n <= 4" in out and "deadline 9 s" in out and "stopped" in out
    limits = served.state.served.limits
    assert (limits.max_n, limits.deadline_s, limits.max_body_bytes) == (4, 9.0, 1 << 20)
    c = TestClient(served, base_url=f"http://localhost:{port}")
    assert c.get("/v1/models").json()["data"][0]["id"] == "m1"
    assert TestClient(served, base_url=f"http://localhost:{port + 1}").get("/v1/models").status_code == 400


def test_the_key_comes_from_the_environment_and_allowed_hosts_are_added(tmp_path, ran, monkeypatch):
    monkeypatch.setenv("LMLEAK_SERVE_KEY", "env-key-123")
    r = CliRunner().invoke(
        app,
        [
            "serve",
            f"fake:{_corpus(tmp_path)}",
            "--tier",
            "text",
            "--port",
            "0",
            "--allowed-host",
            "box.example.org",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "env-key-123" not in r.output and "API key required" in r.output
    ((served, port),) = ran
    c = TestClient(served, base_url=f"http://box.example.org:{port}")
    assert c.get("/v1/models").status_code == 401
    assert c.get("/v1/models", headers={"Authorization": "Bearer env-key-123"}).status_code == 200


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--tier", "everything"], "unknown tier 'everything'"),
        (["--max-n", "0"], "--max-n"),
        (["--deadline", "nan"], "--deadline"),
        (["--max-body", "-5"], "--max-body"),
        (["--api-key", "has space"], "--api-key"),
        (["--port", "70000"], "--port"),
        (["--port", "-1"], "--port"),
    ],
)
def test_bad_options_exit_2_before_loading_the_model(tmp_path, ran, args, says):
    r = CliRunner().invoke(app, ["serve", str(tmp_path / "no-such-model"), *args])
    assert r.exit_code == 2, r.output
    assert says in " ".join(r.output.split()) and not ran


def test_serve_help_lists_every_tier_and_the_safety_options():
    r = CliRunner().invoke(app, ["serve", "--help"])
    assert r.exit_code == 0
    out = " ".join(r.output.split())
    assert all(t in out for t in ("prompt_logprobs", "echo", "chat", "text")) and "--batch-tokens" in out
    assert all(
        o in out for o in ("--api-key", "LMLEAK_SERVE_KEY", "--allowed-host", "--max-body", "--deadline")
    )


def test_a_port_in_use_exits_2_with_the_fix_before_loading_the_model(tmp_path, ran):
    """It said 'Address already in use. Fix: check the path and its permissions', after loading."""
    import socket

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        port = holder.getsockname()[1]
        r = CliRunner().invoke(app, ["serve", str(tmp_path / "no-such-model"), "--port", str(port)])
    finally:
        holder.close()
    out = " ".join(r.output.split())
    assert r.exit_code == 2 and not ran, r.output
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in out and "--port 0" in out
    assert "does not exist" not in out  # refused before the model (which is missing too) was looked at
