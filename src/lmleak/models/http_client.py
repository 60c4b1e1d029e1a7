"""The HTTP client of :class:`~lmleak.models.http.HTTPModel`: JSON requests with retries, a deadline,
a size cap, a request budget and an answer cache keyed by the model's fingerprint.

:class:`HTTPClient` POSTs (or GETs) one JSON body and returns the parsed answer: from the cache
when a request was answered before (:mod:`lmleak.models.http_cache`), else over the network with
exponential backoff on 429, 5xx and timeouts (honouring ``Retry-After``), each try within its
deadline (:mod:`lmleak.models.http_transport`) and counted against ``max_requests``
(:class:`RequestBudgetError`). A refusal of the request's shape (400, 404, 405, 422) is
:class:`Unsupported`: the tier detection tries the next tier on it.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from lmleak.errors import LmleakError, ModelError
from lmleak.models.http_cache import RUN_CACHE, AnswerCache, Probe
from lmleak.models.http_spec import API_KEY_ENVS, HTTPOptions, api_key
from lmleak.models.http_transport import DeadlineTransport, deadline, read_capped
from lmleak.runs import current_run


class RequestBudgetError(LmleakError):
    """The run reached ``--max-requests``."""


class Unsupported(Exception):
    """The server refused a request shape (400/404/422): a tier it does not grant."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


@dataclass
class Counters:
    requests: int = 0  # sent over the network (retries included)
    cached: int = 0  # answered from the disk cache (cache hits)
    misses: int = 0  # cacheable requests the cache did not hold (sent, then cached)
    prompt_tokens: int = 0  # as the server reports them (usage.prompt_tokens)
    retried: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def as_dict(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "cached": self.cached,
            "prompt_tokens": self.prompt_tokens,
            "retried": self.retried,
        }


def _identity(answer: Any) -> Any:
    return answer


class HTTPClient:
    """POSTs JSON with retries, a deadline, a size cap, a request budget and an answer cache keyed by
    the model's fingerprint; see the module docstring."""

    def __init__(
        self,
        base_url: str,
        options: HTTPOptions,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        name: str | None = None,
    ) -> None:
        self.base_url = base_url
        self.name = name or base_url
        self.options = options
        headers = {"Content-Type": "application/json"}
        key = api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        root = urllib.parse.urlsplit(base_url)
        self.root = urllib.parse.urlunsplit((root.scheme, root.netloc, "", "", ""))
        limits = httpx.Limits(max_connections=max(options.concurrency, 1) + 2)
        self.client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(options.timeout, connect=min(options.connect_timeout, options.timeout)),
            transport=transport if transport is not None else DeadlineTransport(limits),
            limits=limits,
        )
        self.counters = Counters()
        self.sleep = sleep
        self.max_bytes = int(options.max_response_mb * (1 << 20))
        self.probe: Probe | None = (
            None  # set once the model's fingerprint is known: only then is anything cached
        )
        self._stores: dict[str, AnswerCache] = {}
        self._store_lock = threading.Lock()
        self.cache_note: str | None = None  # why nothing is cached (a redacted run, no run, cache=off)
        self.invalidated: list[str] = []

    def close(self) -> None:
        self.client.close()

    def url(self, path: str) -> str:
        """``/completions`` is under the base URL; ``/tokenize`` (vLLM) sits at the server's root."""
        return (self.root if path in ("/tokenize", "/detokenize") else self.base_url) + path

    # ------------------------------------------------------------------ the answer cache
    def cache(self) -> AnswerCache | None:
        """The answer cache requests use now: ``cache=DIR``, else the folder inside the run being
        written; None before the fingerprint is known, with ``cache=off``, in a redacted run, or
        with no run and no folder named."""
        if self.probe is None:
            return None
        opt = self.options.cache
        run = current_run()
        if opt == "off":
            self.cache_note = "off (cache=off)"
            return None
        if run is not None and run[1]:
            self.cache_note = "off (a redacted run keeps no cache)"
            return None
        if opt:
            root = Path(opt).expanduser()
        elif run is not None:
            root = run[0] / RUN_CACHE
        else:
            self.cache_note = "off (no run is being written and no cache folder was named)"
            return None
        with self._store_lock:
            store = self._stores.get(str(root))
            if store is None:
                store = self._stores[str(root)] = AnswerCache(root, self.probe)
                if store.invalidated:
                    self.invalidated.append(store.invalidated)
            return store

    def fingerprint(self) -> str:
        """The model's fingerprint as the cache last opened knows it (a cache keeps the one it first saw
        while the model stays within the probe's tolerance), else the probe's own. Opens nothing."""
        assert self.probe is not None, "the fingerprint is known once the model is loaded"
        with self._store_lock:
            stores = list(self._stores.values())
        return stores[-1].fingerprint if stores else self.probe.fingerprint()

    def cache_location(self) -> str:
        """Where the answers of this run are cached (the folder), or why they are not."""
        with self._store_lock:
            roots = list(self._stores)
        return ", ".join(roots) if roots else (self.cache_note or "none yet")

    # ------------------------------------------------------------------ requests
    def get(self, path: str, *, parse: Callable[[Any], Any] = _identity, cache: bool = True) -> Any:
        """The answer to a GET (see :meth:`post`)."""
        return self.post(path, None, parse=parse, cache=cache)

    def post(
        self,
        path: str,
        body: dict[str, Any] | None,
        *,
        parse: Callable[[Any], Any] = _identity,
        cache: bool = True,
    ) -> Any:
        """``parse(answer)`` of one POST (a GET when ``body`` is None), from the cache when asked before.

        ``parse`` checks the answer (raising :class:`~lmleak.models.http_answers.BadAnswer`) before
        it is cached: a bad answer is never kept. A cached answer that fails the check (kept by an
        older lmleak) is dropped and asked again."""
        store = self.cache() if cache else None
        if store is not None:
            hit, answer = store.get(path, body)
            if hit:
                try:
                    out = parse(answer)
                except ModelError:
                    store.drop(path, body)
                else:
                    with self.counters.lock:
                        self.counters.cached += 1
                    return out
            with self.counters.lock:
                self.counters.misses += 1
        answer = self._send("GET" if body is None else "POST", path, body)
        out = parse(answer)
        if store is not None:
            store.put(path, body, answer)
        return out

    def _budget(self) -> None:
        limit = self.options.max_requests
        with self.counters.lock:
            if limit is not None and self.counters.requests >= limit:
                raise RequestBudgetError(
                    f"--max-requests {limit} reached ({self.counters.requests} requests sent, {self.counters.cached} "
                    f"answered from the cache in {self.cache_location()}); every answer so far is cached, so "
                    "rerunning with a higher --max-requests into the same run (or --cache-dir) resumes without "
                    "asking them again"
                )
            self.counters.requests += 1

    def _send(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        url = self.url(path)
        delay = self.options.backoff
        last = ""
        for attempt in range(self.options.retries + 1):
            self._budget()
            try:
                status, headers, content = self._request(method, url, body)
            except httpx.ConnectError as e:
                raise ModelError(
                    f"{url}: cannot connect ({e}); is the server running and listening there? "
                    "(test locally with: lmleak serve MODEL --port PORT)"
                ) from None
            except httpx.TimeoutException as e:
                last = f"no complete answer within timeout={self.options.timeout:g} s ({type(e).__name__})"
            except (httpx.RemoteProtocolError, httpx.ReadError) as e:
                last = f"the connection broke ({type(e).__name__})"
            else:
                if status == 429 or status >= 500:
                    last = f"HTTP {status}: {error_message(content)}"
                    retry_after = headers.get("retry-after")
                    if retry_after and retry_after.replace(".", "", 1).isdigit():
                        delay = max(delay, min(float(retry_after), 3600.0))
                else:
                    return self._answer(status, content, url)
            if attempt < self.options.retries:
                with self.counters.lock:
                    self.counters.retried += 1
                self.sleep(delay)
                delay *= 2
        raise ModelError(
            f"{url}: no answer after {self.options.retries + 1} tries (last: {last}); "
            "the server is overloaded or failing — retry later, or raise retries= / timeout= / lower concurrency="
        )

    def _request(
        self, method: str, url: str, body: dict[str, Any] | None
    ) -> tuple[int, httpx.Headers, bytes]:
        """One request within its deadline (connect + total), its body read up to the size cap."""
        with deadline(self.options.timeout), self.client.stream(method, url, json=body) as r:
            return r.status_code, r.headers, read_capped(r, self.max_bytes, url)

    def _answer(self, status: int, content: bytes, url: str) -> Any:
        if status in (400, 404, 405, 422):
            raise Unsupported(status, error_message(content))
        if status in (401, 403):
            raise ModelError(
                f"{url}: HTTP {status} ({error_message(content)}); set the API key in "
                f"{' or '.join(API_KEY_ENVS)}"
            )
        if status >= 300:
            raise ModelError(f"{url}: HTTP {status}: {error_message(content)}")
        try:
            answer = json.loads(content)
        except (json.JSONDecodeError, UnicodeDecodeError):
            tail = content[-60:].decode("utf-8", "replace")
            raise ModelError(
                f"{url}: the server's answer is not complete JSON ({len(content)} bytes, ending "
                f"{tail!r}); a proxy or the server cut it off — retry, or lower batch="
            ) from None
        usage = answer.get("usage") if isinstance(answer, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            with self.counters.lock:
                self.counters.prompt_tokens += usage["prompt_tokens"]
        return answer

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """``[fn(x) for x in items]`` with up to ``concurrency`` running at once, in input order."""
        if self.options.concurrency == 1 or len(items) <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(self.options.concurrency) as pool:
            return list(pool.map(fn, items))


def error_message(content: bytes) -> str:
    try:
        d = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return content[:200].decode("utf-8", "replace")
    if isinstance(d, dict):
        err = d.get("error", d.get("detail", d.get("message", d)))
        if isinstance(err, dict):
            err = err.get("message", err)
        return str(err)[:300]
    return str(d)[:200]


def wrong_model(e: Unsupported, base_url: str, model: str) -> ModelError | None:
    """The error to raise when a refusal says the model does not exist (vLLM: 404 "The model `x` does not exist")."""
    if e.status == 404 and "model" in e.message.lower():
        return ModelError(
            f"{base_url}: the server knows no model {model!r} ({e.message}); GET {base_url}/models "
            "lists the names it serves"
        )
    return None
