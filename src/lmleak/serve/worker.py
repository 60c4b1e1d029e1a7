"""One thread runs the model, one request at a time, each within its deadline.

The model is not safe to call from two threads, and one forward pass already uses every core, so
requests queue for a single worker thread. Each job carries its deadline: a job still queued when it
passes is dropped, a running one stops at its next check (between forward passes or decoding steps,
:func:`Job.check`), and the request is answered 503 at the deadline either way — a request never
waits behind another for longer than its own deadline.

:meth:`ModelWorker.stop` (the first Ctrl-C / SIGTERM) answers every queued and running request 503
at once. The thread is a daemon, so a forward pass that is still running cannot keep the process
alive after the server has closed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lmleak.serve.errors import APIError

T = TypeVar("T")
Check = Callable[[], None]


def shutting_down() -> APIError:
    return APIError(503, "lmleak serve is shutting down", code="server_shutting_down")


def past_deadline(deadline_s: float, started: bool) -> APIError:
    busy = "" if started else " waiting for the model (the server was busy with other requests)"
    return APIError(
        503,
        f"the request did not finish within the server's deadline of {deadline_s:g} s{busy}; "
        "ask for fewer tokens or prompts, retry later, or start lmleak serve with a longer --deadline",
        code="deadline_exceeded",
    )


@dataclass(eq=False)
class Job:
    """A unit of model work: ``fn(check)`` runs on the worker thread."""

    fn: Callable[[Check], Any]
    deadline: float  # time.monotonic()
    deadline_s: float  # the server's deadline, for the message
    future: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future)
    stopped: threading.Event = field(default_factory=threading.Event)
    started: bool = False

    def check(self) -> None:
        """Raise when the job must stop (its deadline passed, its request is gone, or the server stops)."""
        if self.stopped.is_set() or time.monotonic() > self.deadline:
            raise _Stopped


class _Stopped(Exception):
    """Raised inside a job by :meth:`Job.check`; its request has already been answered."""


class ModelWorker:
    """The single daemon thread that runs model jobs in arrival order (see the module docstring)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._running: Job | None = None
        self._pending: set[Job] = set()
        self.stopping = False

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="lmleak-serve-model", daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            with self._lock:
                self._pending.discard(job)
                if job.stopped.is_set() or job.future.done() or not job.future.set_running_or_notify_cancel():
                    continue
                self._running, job.started = job, True
            try:
                result = job.fn(job.check)
            except _Stopped:  # usually answered already (by run() or stop()); whichever came first wins
                _settle(
                    job.future, exc=shutting_down() if self.stopping else past_deadline(job.deadline_s, True)
                )
            except APIError as e:
                _settle(job.future, exc=e)
            except Exception as e:  # noqa: BLE001 - a bug: the route answers 500 without the message
                _settle(job.future, exc=e)
            else:
                _settle(job.future, result=result)
            finally:
                with self._lock:
                    self._running = None

    async def run(self, fn: Callable[[Check], T], deadline: float, deadline_s: float) -> T:
        """``fn(check)`` on the worker thread; 503 when ``deadline`` (monotonic) passes first."""
        job = Job(fn, deadline, deadline_s)
        with self._lock:  # with stop(): a job is either refused here or answered by stop()
            if self.stopping:
                raise shutting_down()
            self._pending.add(job)
        self._ensure_thread()
        self._jobs.put(job)
        try:
            return await asyncio.wait_for(
                asyncio.wrap_future(job.future), max(0.0, deadline - time.monotonic())
            )
        except TimeoutError:
            job.stopped.set()
            raise past_deadline(deadline_s, job.started) from None
        except asyncio.CancelledError:  # the client went away or the server is stopping
            job.stopped.set()
            raise

    def stop(self) -> None:
        """Answer every queued and running job 503 and stop the thread (idempotent)."""
        with self._lock:
            self.stopping = True
            jobs = [*self._pending, *([self._running] if self._running is not None else [])]
            self._pending.clear()
        for job in jobs:
            job.stopped.set()
            _settle(job.future, exc=shutting_down())
        self._jobs.put(None)


def _settle(
    future: concurrent.futures.Future[Any], *, result: Any = None, exc: BaseException | None = None
) -> None:
    """Set a future's outcome unless it already has one (stop() and the thread can race)."""
    try:
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)
    except concurrent.futures.InvalidStateError:
        pass
