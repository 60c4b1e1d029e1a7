"""lmleak.serve.worker: one model thread, a deadline per request (queued or running), and stop()
answering every waiting request at once."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from lmleak.serve.errors import APIError
from lmleak.serve.worker import ModelWorker


def _busy(seconds: float, seen: list[str] | None = None):
    """A job that works in small steps, checking between them, for ``seconds``."""

    def fn(check):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            check()
            time.sleep(0.005)
        if seen is not None:
            seen.append("done")
        return "finished"

    return fn


async def _run(w: ModelWorker, fn, deadline_s: float):
    return await w.run(fn, time.monotonic() + deadline_s, deadline_s)


def test_a_job_runs_and_returns_its_value():
    w = ModelWorker()
    assert asyncio.run(_run(w, lambda check: 41 + 1, 5)) == 42
    w.stop()


def test_a_running_job_is_stopped_at_its_deadline_and_the_next_one_runs():
    w = ModelWorker()
    seen: list[str] = []

    async def main():
        t = time.monotonic()
        with pytest.raises(APIError) as e:
            await _run(w, _busy(30, seen), 0.3)
        elapsed = time.monotonic() - t
        return e.value, elapsed, await _run(w, lambda check: "next", 5)

    err, elapsed, nxt = asyncio.run(main())
    assert err.status == 503 and err.code == "deadline_exceeded" and "waiting" not in err.message
    assert elapsed < 5 and nxt == "next" and seen == []  # the long job stopped at a check
    w.stop()


def test_a_queued_job_is_answered_at_its_deadline_and_never_run():
    w = ModelWorker()
    ran = threading.Event()

    async def main():
        first = asyncio.ensure_future(_run(w, _busy(1.0), 10))
        await asyncio.sleep(0.05)
        with pytest.raises(APIError) as e:
            await _run(w, lambda check: ran.set(), 0.2)
        assert await first == "finished"
        return e.value

    err = asyncio.run(main())
    assert err.status == 503 and "busy with other requests" in err.message
    time.sleep(0.05)
    assert not ran.is_set()
    w.stop()


def test_stop_answers_running_and_queued_jobs_at_once():
    w = ModelWorker()

    async def main():
        running = asyncio.ensure_future(_run(w, _busy(30), 60))
        queued = asyncio.ensure_future(_run(w, _busy(30), 60))
        await asyncio.sleep(0.1)
        t = time.monotonic()
        threading.Thread(target=w.stop).start()
        results = await asyncio.gather(running, queued, return_exceptions=True)
        return results, time.monotonic() - t

    results, elapsed = asyncio.run(main())
    assert all(isinstance(r, APIError) and r.code == "server_shutting_down" for r in results)
    assert elapsed < 2
    with pytest.raises(APIError, match="shutting down"):
        asyncio.run(_run(w, lambda check: 1, 5))


def test_errors_in_a_job_reach_the_request():
    w = ModelWorker()

    def refuse(check):
        raise APIError(400, "no")

    def bug(check):
        raise ValueError("a bug")

    with pytest.raises(APIError, match="no"):
        asyncio.run(_run(w, refuse, 5))
    with pytest.raises(ValueError):
        asyncio.run(_run(w, bug, 5))
    assert asyncio.run(_run(w, lambda check: "still serving", 5)) == "still serving"
    w.stop()
