"""``lmleak cache info`` / ``lmleak cache clear``: a run's cache, a named folder, the old default
folder; a folder that is not an lmleak cache is refused (exit 2) and left alone."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from lmleak.models.http_cache import RUN_CACHE, AnswerCache, Probe


def _cli(*args):
    from lmleak.cli.main import app

    return CliRunner().invoke(app, list(map(str, args)))


def _fill(root, n=3):
    cache = AnswerCache(root, Probe("http://h/v1", "m", "echo", {"id": "m"}, (1, 3), (-1.0,)))
    for i in range(n):
        cache.put("/completions", {"i": i}, {"choices": [{"text": "ada@example.org"}]})


def test_info_and_clear_a_runs_cache_and_a_named_folder(tmp_path):
    run = tmp_path / "run"
    _fill(run / RUN_CACHE)
    res = _cli("cache", "info", "--run", run, "--json")
    assert res.exit_code == 0 and json.loads(res.output)["answers"] == 3
    res = _cli("cache", "clear", "--run", run)
    assert res.exit_code == 0 and "deleted" in res.output and "3 answer(s) of 1 model(s)" in res.output
    assert not (run / RUN_CACHE).exists()
    named = tmp_path / "named"
    _fill(named, 2)
    res = _cli("cache", "clear", "--cache-dir", named, "--json")
    assert res.exit_code == 0 and json.loads(res.output)["deleted"] is True and not named.exists()
    assert "no cache at" in _cli("cache", "clear", "--cache-dir", named).output


def test_clear_refuses_a_folder_that_is_not_a_cache(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.json").write_text("{}")
    res = _cli("cache", "clear", "--cache-dir", mine)
    assert res.exit_code == 2 and "is not an lmleak answer cache" in res.output
    assert (mine / "notes.json").exists()
    assert _cli("cache", "clear", "--cache-dir", mine, "--run", tmp_path).exit_code == 2


def test_without_a_folder_it_is_the_old_default_cache(tmp_path, monkeypatch):
    """lmleak before issue 25 kept every answer in $LMLEAK_CACHE/http, outside any run: clear finds it."""
    monkeypatch.setenv("LMLEAK_CACHE", str(tmp_path))
    (tmp_path / "http" / "ab").mkdir(parents=True)
    (tmp_path / "http" / "ab" / ("ab" + "1" * 62 + ".json")).write_text('{"text": "ada@example.org"}')
    res = _cli("cache", "clear")
    assert res.exit_code == 0 and "1 answer(s)" in res.output and not (tmp_path / "http").exists()
