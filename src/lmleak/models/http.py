"""A model behind an OpenAI-compatible HTTP API, audited at the access level the server grants.

Spec: ``http://HOST:PORT/v1#MODEL`` (``https`` too), with options in the query part before the
``#``: ``http://127.0.0.1:8000/v1?tier=echo&tokenizer=/models/smol&concurrency=8#smol``. The API
key comes from ``LMLEAK_API_KEY`` or ``OPENAI_API_KEY`` only; it never appears in the spec, a
cache key, a log line or a run directory (a key written into the URL is refused).

Tiers (detected by a few tiny requests unless ``tier=`` names one; see docs/http.md):

=================  ======================================================  =======================
tier               what the server answers                                 capabilities
=================  ======================================================  =======================
prompt_logprobs    ``/v1/completions`` with vLLM's ``prompt_logprobs``:    SCORE, TOP_K, GENERATE
                   logprob and rank of every prompt token
echo               legacy ``echo`` + ``logprobs <= 5``: the top-5 at every  TOP_K (k <= 5), GENERATE
                   prompt position and each prompt token's logprob
chat               ``/v1/chat/completions`` with ``top_logprobs <= 20``:    GENERATE
                   the top tokens of *generated* tokens only
text               text only                                               GENERATE
=================  ======================================================  =======================

Token ids: lmleak scores token ids, so it needs the server's tokenizer. ``tokenizer=DIR`` (or
``lmleak --tokenizer DIR``) loads it locally (a Hugging Face or lmleak model folder, or
``smollm2-135m``); without one the server's ``POST /tokenize`` / ``POST /detokenize`` are used
(vLLM and ``lmleak serve`` have them), and the BOS / EOS ids come from ``lmleak serve``'s model
card or, for vLLM, from ``/tokenize`` with special tokens. Scoring requests send token ids
(``[BOS, *ids]``), generation requests send text.

Requests: several prompts per request (``batch=``), several requests in flight (``concurrency=``,
threads over one ``httpx.Client``), retried with exponential backoff on 429, 5xx and timeouts
(``retries=`` tries after the first, honouring ``Retry-After``), each bounded by a deadline
(``connect_timeout=`` to connect, ``timeout=`` for the whole request, not per read: see
:mod:`lmleak.models.http_transport`) and a size cap (``max_response_mb=``), and counted;
``max_requests=N`` (or ``lmleak --max-requests N``) stops the run with exit 2 once N requests have
gone over the network. Every answer is checked before it is used or kept
(:mod:`lmleak.models.http_answers`: no logprob above 0, no NaN, no rank below 1, no wrong length).

Fingerprint and cache: at the start of every run (never from a cache) lmleak reads the server's
``/v1/models`` entry and sends a fixed probe (the tier's own request over a fixed token sequence);
together they are the model's fingerprint (:class:`~lmleak.models.http_cache.Probe`), recorded in
``provenance`` and keying the answer cache (:mod:`lmleak.models.http_cache`). The cache holds
training text: by default it lives inside the run (``RUN/http-cache``), or in ``cache=DIR`` /
``lmleak --cache-dir DIR``; ``cache=off`` disables it; a redacted run keeps none. So an interrupted
audit asks nothing twice, and a server that now serves another model under the same name never
answers from the old model's cache.

An API gives at most the top ``top_n`` (default 20, vLLM's ``max_logprobs``) next tokens, never the
whole distribution: ``next_logprobs`` is refused with :class:`CapabilityError` (so canary exposure,
whose trie walk reads every token's probability, is skipped by the audit with that reason), and
``next_top_logprobs`` returns the known top ``top_n`` with NaN (unknown) elsewhere.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import math
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from lmleak import progress
from lmleak.errors import CapabilityError, LmleakError, ModelError
from lmleak.models import http_answers as answers
from lmleak.models.base import (
    Capability,
    SpanScore,
    TokenStats,
    continuation_logprobs,
    score_text_by_ids,
)
from lmleak.models.http_cache import RUN_CACHE, AnswerCache, Probe
from lmleak.models.http_transport import DeadlineTransport, deadline, read_capped
from lmleak.models.tokenizer import HFTokenizer
from lmleak.runs import current_run

TIERS = ("prompt_logprobs", "echo", "chat", "text")
# what each tier grants, as lmleak capabilities and as a KART access kind
TIER_CAPABILITIES: dict[str, frozenset[Capability]] = {
    "prompt_logprobs": frozenset({Capability.SCORE, Capability.TOP_K, Capability.GENERATE}),
    "echo": frozenset({Capability.TOP_K, Capability.GENERATE}),
    "chat": frozenset({Capability.GENERATE}),
    "text": frozenset({Capability.GENERATE}),
}
TIER_ACCESS = {"prompt_logprobs": "scores", "echo": "top_k", "chat": "generation", "text": "generation"}
ECHO_MAX_K = 5  # the legacy completions API's cap on logprobs
CHAT_MAX_K = 20  # the chat API's cap on top_logprobs
API_KEY_ENVS = ("LMLEAK_API_KEY", "OPENAI_API_KEY")
#: The fingerprint probe of the scoring tiers: a fixed token sequence after the start token (cut to
#: the server's window and, when known, its vocabulary); no tokenizer is needed to send it.
PROBE_IDS = tuple(range(3, 19))
#: The fingerprint probe of the generation tiers (greedy, ``PROBE_NEW_TOKENS`` new tokens).
PROBE_TEXT = "The capital of France is"
PROBE_NEW_TOKENS = 4
#: The shortest window a scoring request can have: the start token and one scored token.
MIN_MAX_LENGTH = 2


class RequestBudgetError(LmleakError):
    """The run reached ``--max-requests``."""


def is_http_spec(spec: Any) -> bool:
    """Whether a model spec names an HTTP endpoint.

    Example:
        >>> is_http_spec("http://127.0.0.1:8000/v1#smol"), is_http_spec("models/smol")
        (True, False)
    """
    return isinstance(spec, str) and spec.startswith(("http://", "https://"))


@dataclass(frozen=True)
class HTTPOptions:
    """How to talk to the server. Every field can be set in the spec's query (``?concurrency=4``)."""

    tier: str | None = None  # None: detect
    tokenizer: str | None = None  # a local tokenizer (model folder); None: the server's /tokenize
    concurrency: int = 4  # requests in flight
    batch: int = 8  # prompts per request
    retries: int = 4  # tries after the first on 429 / 5xx / timeouts
    backoff: float = 0.5  # seconds before the first retry; doubles each time
    timeout: float = 300.0  # seconds for a whole request (connect, send, every read), not per read
    connect_timeout: float = 10.0  # seconds to connect
    max_response_mb: float = 64.0  # larger answers are refused
    max_requests: int | None = None
    cache: str | None = None  # cache dir; None: inside the run being written; "off": no cache
    max_length: int | None = None  # longest input (BOS included); default: the server's max_model_len
    top_n: int = CHAT_MAX_K  # how many next-token log-probs next_logprobs asks for


#: (lowest, highest) accepted value of each numeric option (None: unbounded); checked by parse_spec.
OPTION_RANGES: dict[str, tuple[float, float | None]] = {
    "concurrency": (1, 256),
    "batch": (1, None),
    "retries": (0, 100),
    "backoff": (0, 3600),
    "timeout": (0.001, None),
    "connect_timeout": (0.001, None),
    "max_response_mb": (0.001, None),
    "max_requests": (0, None),
    "max_length": (MIN_MAX_LENGTH, None),
    "top_n": (1, None),
}


_DEFAULTS: contextvars.ContextVar[tuple[tuple[str, Any], ...]] = contextvars.ContextVar(
    "lmleak_http_defaults", default=()
)


@contextlib.contextmanager
def use_http_options(**defaults: Any) -> Iterator[None]:
    """Defaults for HTTP models loaded inside the block (the CLI's ``--max-requests``, ``--tokenizer``);
    the spec's own query still wins. ``None`` values are ignored."""
    merged = {**dict(_DEFAULTS.get()), **{k: v for k, v in defaults.items() if v is not None}}
    token = _DEFAULTS.set(tuple(merged.items()))
    try:
        yield
    finally:
        _DEFAULTS.reset(token)


def parse_spec(spec: str) -> tuple[str, str, HTTPOptions]:
    """``(base_url, model, options)`` of an HTTP spec.

    Example:
        >>> base, model, opts = parse_spec("http://127.0.0.1:8000/v1?tier=echo&batch=4#smol")
        >>> base, model, opts.tier, opts.batch
        ('http://127.0.0.1:8000/v1', 'smol', 'echo', 4)
    """
    url, _, model = spec.partition("#")
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        raise ModelError(
            f"{parts.hostname}: credentials in the model URL are refused (they would be written "
            "into the run); put the API key in LMLEAK_API_KEY or OPENAI_API_KEY"
        )
    if not model:
        raise ModelError(
            f"{spec!r} names no model; write URL#MODEL, e.g. http://127.0.0.1:8000/v1#my-model "
            "(GET URL/models lists the names the server serves)"
        )
    names = {f.name: f for f in fields(HTTPOptions)}
    kw: dict[str, Any] = {k: v for k, v in _DEFAULTS.get() if k in names}
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if key not in names:
            raise ModelError(f"{spec!r}: unknown option {key!r} in the query; use one of {', '.join(names)}")
        kw[key] = value
    for key, value in list(kw.items()):
        kw[key] = _option_value(spec, key, value, str(names[key].type))
    opts = HTTPOptions(**kw)
    if opts.tier is not None and opts.tier not in TIERS:
        raise ModelError(
            f"{spec!r}: unknown tier {opts.tier!r}; use one of {', '.join(TIERS)} (or leave it out to detect)"
        )
    if opts.cache == "":
        raise ModelError(f"{spec!r}: option cache= is empty; give a folder, or cache=off")
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    return base, model, opts


def _option_value(spec: str, key: str, value: Any, kind: str) -> Any:
    """One query option as its type, checked against :data:`OPTION_RANGES` (finite, in range).

    Example:
        >>> _option_value("s", "batch", "4", "int")
        4
        >>> _option_value("s", "timeout", "nan", "float")
        Traceback (most recent call last):
        ...
        lmleak.errors.ModelError: 's': option timeout='nan' must be a finite number >= 0.001
    """
    if value is None or ("int" not in kind and "float" not in kind):
        return value
    lo, hi = OPTION_RANGES.get(key, (-math.inf, None))
    want = f"{'an integer' if 'int' in kind else 'a finite number'} >= {lo:g}" + (
        f" and <= {hi:g}" if hi is not None else ""
    )
    try:
        number = int(value) if "int" in kind else float(value)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"{spec!r}: option {key}={value!r} must be {want}") from None
    if not math.isfinite(number) or number < lo or (hi is not None and number > hi):
        raise ModelError(f"{spec!r}: option {key}={value!r} must be {want}")
    return number


def _api_key() -> str | None:
    for env in API_KEY_ENVS:
        if os.environ.get(env):
            return os.environ[env]
    return None


class _Unsupported(Exception):
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
        key = _api_key()
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
                    last = f"HTTP {status}: {_error_message(content)}"
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
            raise _Unsupported(status, _error_message(content))
        if status in (401, 403):
            raise ModelError(
                f"{url}: HTTP {status} ({_error_message(content)}); set the API key in "
                f"{' or '.join(API_KEY_ENVS)}"
            )
        if status >= 300:
            raise ModelError(f"{url}: HTTP {status}: {_error_message(content)}")
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


def _error_message(content: bytes) -> str:
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


def _wrong_model(e: _Unsupported, base_url: str, model: str) -> ModelError | None:
    """The error to raise when a refusal says the model does not exist (vLLM: 404 "The model `x` does not exist")."""
    if e.status == 404 and "model" in e.message.lower():
        return ModelError(
            f"{base_url}: the server knows no model {model!r} ({e.message}); GET {base_url}/models "
            "lists the names it serves"
        )
    return None


# ---------------------------------------------------------------------- tokenizers
class RemoteTokenizer:
    """The server's tokenizer through ``POST /tokenize`` and ``/detokenize`` (cached like every
    request once the model's fingerprint is known; the BOS lookup before it is never cached)."""

    def __init__(self, client: HTTPClient, model: str, card: dict[str, Any]) -> None:
        self.client = client
        self.model = model
        meta = card.get("lmleak") or {}
        bos = meta.get("bos_id")
        if bos is None:  # vLLM: the tokenizer's BOS is what it adds as a special token to an empty text
            try:
                toks = self.client.post(
                    "/tokenize",
                    {"model": model, "prompt": "", "add_special_tokens": True},
                    parse=self._ids,
                    cache=False,
                )
            except _Unsupported as e:
                if (err := _wrong_model(e, client.base_url, model)) is not None:
                    raise err from None
                toks = []
            except answers.BadAnswer:
                toks = []
            bos = toks[0] if toks else None
        if bos is None:
            raise ModelError(
                f"{client.base_url}#{model}: cannot learn the server's BOS token id from /tokenize; "
                "give its tokenizer: tokenizer=DIR in the URL query or lmleak --tokenizer DIR"
            )
        self.bos_id = int(bos)
        self.eos_id = None if meta.get("eos_id") is None else int(meta["eos_id"])
        self.pad_id = int(meta.get("pad_id", self.bos_id))
        self.vocab_size = int(meta.get("vocab_size") or 0)  # 0: unknown (vLLM does not say)

    def _ids(self, answer: Any) -> list[int]:
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        return answers.token_ids(tokens, self.client.name, "/tokenize tokens")

    def _text(self, answer: Any) -> str:
        text = answer.get("prompt") if isinstance(answer, dict) else None
        if not isinstance(text, str):
            raise answers.bad(self.client.name, "/detokenize prompt", text, "the decoded text")
        return text

    def encode(self, text: str) -> list[int]:
        return list(self._encode(text))

    @functools.lru_cache(maxsize=4096)  # noqa: B019 (one tokenizer per model; the decoded keys of top-k answers repeat)
    def _encode(self, text: str) -> tuple[int, ...]:
        try:
            return tuple(
                self.client.post(
                    "/tokenize",
                    {"model": self.model, "prompt": text, "add_special_tokens": False},
                    parse=self._ids,
                )
            )
        except _Unsupported as e:
            raise ModelError(
                f"{self.client.url('/tokenize')}: the server does not tokenize ({e}); give its "
                "tokenizer: tokenizer=DIR in the URL query or lmleak --tokenizer DIR"
            ) from None

    def decode(self, ids: Sequence[int]) -> str:
        return str(
            self.client.post(
                "/detokenize", {"model": self.model, "tokens": [int(i) for i in ids]}, parse=self._text
            )
        )


def load_tokenizer(spec: str) -> Any:
    """A local tokenizer: ``smollm2-135m``, or a Hugging Face / lmleak model folder (tokenizer files only)."""
    # lazy: lmleak.models.hf_causal imports torch; the HTTP client runs without it
    from lmleak.models.hf_causal import SMOLLM2, smollm2_plain_dir

    # the start token is HFTokenizer's (lmleak.models.tokenizer.start_token_id): the in-process loader's
    if spec == SMOLLM2:
        return HFTokenizer(_auto_tokenizer(smollm2_plain_dir()))
    p = Path(spec).expanduser()
    if not p.is_dir():
        raise ModelError(
            f"tokenizer {spec!r} is not a folder; give the served model's folder (its tokenizer files)"
        )
    # lazy: lmleak.models.adapters imports the torch loaders, as hf_causal above
    from lmleak.models.adapters import MANIFEST

    manifest = json.loads((p / MANIFEST).read_text(encoding="utf-8")) if (p / MANIFEST).is_file() else {}
    # a LoRA fine-tune folder holds no tokenizer: its base's, as the in-process loader takes it
    has_own = any((p / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json"))
    tok = (
        HFTokenizer(_auto_tokenizer(p))
        if has_own or not manifest.get("base")
        else load_tokenizer(manifest["base"])
    )
    if manifest.get("bos_id") is not None:  # the start token the fine-tune was trained after
        tok.bos_id = int(manifest["bos_id"])
    return tok


def _auto_tokenizer(path: Path) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=True, trust_remote_code=False)
    except Exception as e:  # transformers raises many types for a folder without tokenizer files
        raise ModelError(
            f"{path}: cannot load a tokenizer from this folder ({type(e).__name__}: {e})"
        ) from None


# ---------------------------------------------------------------------- the model
def _windows(n: int, max_length: int) -> list[tuple[int, int, int]]:
    """The sliding windows of :class:`~lmleak.models.torch_causal.TorchCausalLM` (half-window overlap).

    Example:
        >>> _windows(10, 4)
        [(0, 4, 1), (2, 6, 4), (4, 8, 6), (6, 10, 8)]
    """
    if n <= max_length:
        return [(0, n, 1)]
    # lazy: lmleak.models.torch_causal imports torch, needed only for documents longer than the window
    from lmleak.models.torch_causal import _windows as torch_windows

    return torch_windows(n, max_length, max_length // 2)


def _tier_probes(row: list[int]) -> list[tuple[str, str, dict[str, Any], Callable[[Any], bool]]]:
    """(tier, endpoint, request body, does the answer grant the tier?), richest tier first. Each is
    also the tier's fingerprint probe: ``row`` (the start token and :data:`PROBE_IDS`) on the scoring
    tiers, :data:`PROBE_TEXT` on the others."""
    chat = {
        "messages": [{"role": "user", "content": PROBE_TEXT}],
        "max_tokens": PROBE_NEW_TOKENS,
        "temperature": 0,
    }
    return [
        (
            "prompt_logprobs",
            "/completions",
            {"prompt": [row], "max_tokens": 1, "temperature": 0, "prompt_logprobs": 1},
            lambda a: isinstance(a["choices"][0].get("prompt_logprobs"), list),
        ),
        (
            "echo",
            "/completions",
            {
                "prompt": [row],
                "max_tokens": 1,
                "temperature": 0,
                "echo": True,
                "logprobs": ECHO_MAX_K,
                "return_tokens_as_token_ids": True,
            },
            lambda a: bool((a["choices"][0].get("logprobs") or {}).get("top_logprobs")),
        ),
        (
            "chat",
            "/chat/completions",
            {**chat, "logprobs": True, "top_logprobs": 1},
            lambda a: bool((a["choices"][0].get("logprobs") or {}).get("content")),
        ),
        (
            "text",
            "/completions",
            {"prompt": PROBE_TEXT, "max_tokens": PROBE_NEW_TOKENS, "temperature": 0},
            lambda a: "text" in a["choices"][0],
        ),
        (  # a chat-only API without log-probabilities: generation through chat
            "chat",
            "/chat/completions",
            chat,
            lambda a: "message" in a["choices"][0],
        ),
    ]


class HTTPModel:
    """A model served over HTTP; its ``capabilities`` follow its tier (see the module docstring)."""

    def __init__(
        self,
        spec: str,
        *,
        tokenizer: Any = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``tokenizer``: a :class:`~lmleak.models.base.TextTokenizer` object to use instead of
        ``tokenizer=DIR`` or the server's /tokenize (library use)."""
        base, model, opts = parse_spec(spec)
        self.base_url = base
        self.model = model
        self.options = opts
        self.name = f"{base}#{model}"
        self.client = HTTPClient(base, opts, transport=transport, sleep=sleep, name=self.name)
        self.card = self._model_card()
        self.max_length = self._window(self.card)
        if tokenizer is not None:
            self.tokenizer: Any = tokenizer
            self.tokenizer_source = f"given ({type(tokenizer).__name__})"
        elif opts.tokenizer:
            self.tokenizer = load_tokenizer(opts.tokenizer)
            self.tokenizer_source = opts.tokenizer
        else:
            self.tokenizer = RemoteTokenizer(self.client, model, self.card)
            self.tokenizer_source = "server /tokenize"
        self.tier, self.probe = self._fingerprint_probe(opts.tier)
        self.client.probe = self.probe  # from now on answers are cached, keyed by this fingerprint
        self.capabilities = TIER_CAPABILITIES[self.tier]
        self.access = TIER_ACCESS[self.tier]
        self.k = {"prompt_logprobs": opts.top_n, "echo": ECHO_MAX_K}.get(self.tier, 0)

    def __repr__(self) -> str:
        return f"HTTPModel({self.name!r}, tier={self.tier!r})"

    @property
    def counters(self) -> Counters:
        return self.client.counters

    @property
    def fingerprint(self) -> str:
        """16 hex digits naming the model that answers (its card, tier and probe answer; see
        :class:`~lmleak.models.http_cache.Probe`); part of the ledger's and the audit's fingerprints."""
        return self.client.fingerprint()

    @property
    def bos_token_id(self) -> int:
        """The start token every scored text follows (the tokenizer's; see load_tokenizer)."""
        return int(self.tokenizer.bos_id)

    def describe(self) -> dict[str, Any]:
        """What a run records about the access (never the API key)."""
        return {
            "endpoint": self.base_url,
            "model": self.model,
            "tier": self.tier,
            "access": self.access,
            "tokenizer": self.tokenizer_source,
            "max_length": self.max_length,
            **self.counters.as_dict(),
        }

    def cache_stats(self) -> dict[str, Any]:
        """A summary's ``cache``: answers from the cache (``hits``) and sent because it lacked them
        (``misses``) since the model was loaded, the fingerprint they are keyed by, where they are
        kept, and what was invalidated."""
        return {
            "hits": self.counters.cached,
            "misses": self.counters.misses,
            "fingerprint": self.fingerprint,
            "location": self.client.cache_location(),
            "invalidated": list(self.client.invalidated) or None,
        }

    def provenance(self) -> dict[str, Any]:
        """The model's ``provenance`` record (:mod:`lmleak.fingerprints`): the server, the model id and
        the fingerprint (a hash of the ``/v1/models`` entry and of the probe's answer)."""
        return {
            "spec": self.name,
            "backend": "http",
            "server": self.base_url,
            "model_id": self.model,
            "tier": self.tier,
            "device": "remote",
            "dtype": self.card.get("dtype"),
            "hash": "probe",
            "fingerprint": self.fingerprint,
            "probe_sha256": self.probe.probe_sha256(),
            "models_entry": self.probe.card or None,
        }

    # ------------------------------------------------------------------ set-up
    def _model_card(self) -> dict[str, Any]:
        """This model's ``/v1/models`` entry, asked afresh (never cached: it is half the fingerprint)."""
        try:
            answer = self.client.get("/models", cache=False)
        except _Unsupported:
            return {}  # a server without /models: the first real request tells whether the model exists
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise answers.bad(self.name, "/v1/models data", data, "a list of model entries")
        ids = [str(m.get("id")) for m in data if isinstance(m, dict)]
        if ids and self.model not in ids:
            raise ModelError(
                f"{self.base_url} does not serve a model named {self.model!r}; it serves: "
                f"{', '.join(ids)}. Write {self.base_url}#{ids[0]}"
            )
        return next((m for m in data if isinstance(m, dict) and m.get("id") == self.model), {})

    def _window(self, card: dict[str, Any]) -> int:
        """The longest input (start token included): ``max_length=``, at most the server's own."""
        served = card.get("max_model_len") or (card.get("lmleak") or {}).get("max_length")
        if served is not None and (
            isinstance(served, bool) or not isinstance(served, int) or served < MIN_MAX_LENGTH
        ):
            raise answers.bad(
                self.name, "/v1/models max_model_len", served, f"an integer >= {MIN_MAX_LENGTH}"
            )
        want = self.options.max_length
        if want is not None and served is not None and want > served:
            raise ModelError(
                f"{self.name}: max_length={want} is longer than the server's window ({served} tokens, its "
                f"max_model_len); leave max_length out, or give at most {served}"
            )
        if want is not None and served is not None and want < served:
            note = (
                f"{self.name}: scoring with windows of max_length={want} tokens, shorter than the server's "
                f"{served}: every token sees less context than the model can use, so scores differ from the "
                "model's own"
            )
            progress.log(note)
        return int(want or served or 2048)

    def _wrong_model(self, e: _Unsupported) -> ModelError | None:
        return _wrong_model(e, self.base_url, self.model)

    def _completions(self, body: dict[str, Any], parse: Callable[[Any], Any], *, chat: bool = False) -> Any:
        path = "/chat/completions" if chat else "/completions"
        try:
            return self.client.post(path, {"model": self.model, **body}, parse=parse)
        except _Unsupported as e:
            raise self._wrong_model(e) or ModelError(
                f"{self.client.url(path)}: the server refused a '{self.tier}'-tier request ({e}); "
                "give the tier it grants with ?tier=... in the model URL"
            ) from None

    def _probe_row(self) -> list[int]:
        """The start token and :data:`PROBE_IDS`, cut to the window and the vocabulary when known."""
        vocab = int(
            getattr(self.tokenizer, "vocab_size", 0) or (self.card.get("lmleak") or {}).get("vocab_size") or 0
        )
        ids = [i for i in PROBE_IDS if not vocab or i < vocab]
        return [int(self.tokenizer.bos_id), *ids][: self.max_length]

    def _fingerprint_probe(self, tier: str | None) -> tuple[str, Probe]:
        """The tier (``tier``, or the richest the server answers) and the model's answer to the probe,
        sent afresh (never from a cache) and checked like every answer."""
        row = self._probe_row()
        why = []
        for name, path, body, ok in _tier_probes(row):
            if tier is not None and name != tier:
                continue
            try:
                answer = self.client.post(path, {"model": self.model, **body}, cache=False)
                if not ok(answer):
                    why.append(f"{name}: answer without the fields")
                    continue
            except _Unsupported as e:
                if (err := self._wrong_model(e)) is not None:
                    raise err from None
                why.append(f"{name}: {e}")
                continue
            except (KeyError, IndexError, TypeError, AttributeError):
                why.append(f"{name}: unexpected answer shape")
                continue
            return name, self._probe_of(name, row, body, answer)
        if tier is not None:
            raise ModelError(
                f"{self.client.url('/completions')}: the server refused a '{tier}'-tier request "
                f"({'; '.join(why)}); give the tier it grants with ?tier=... in the model URL, or leave it out"
            )
        raise ModelError(f"{self.name}: the server answers none of the tiers ({'; '.join(why)})")

    def _probe_of(self, tier: str, row: list[int], body: dict[str, Any], answer: Any) -> Probe:
        """The :class:`Probe` of a tier's answer to the fingerprint request (checked: a bad answer fails here)."""
        common: dict[str, Any] = {
            "endpoint": self.base_url,
            "model": self.model,
            "tier": tier,
            "card": self.card,
        }
        if tier == "prompt_logprobs":
            ((_, lp, _),) = answers.prompt_logprob_rows([row], answer, self.name)
            return Probe(**common, ids=tuple(row), logprobs=tuple(float(x) for x in lp))
        if tier == "echo":
            ((_, lp, _),) = answers.echo_rows([row], answer, self.name, self.tokenizer.encode, ECHO_MAX_K)
            return Probe(**common, ids=tuple(row), logprobs=tuple(float(x) for x in lp))
        chat = "messages" in body
        (text,) = answers.texts(answer, 1, self.name, chat=chat)
        lps = answers.chat_logprobs(answer, self.name) if chat and body.get("logprobs") else []
        return Probe(**common, logprobs=tuple(lps), text=text)

    def detect_tier(self) -> str:
        """The richest tier the server answers, by one tiny request per tier (never cached)."""
        return self._fingerprint_probe(None)[0]

    # ------------------------------------------------------------------ batching
    def _batched(self, rows: Sequence[Any], ask: Callable[[list[Any]], list[Any]]) -> list[Any]:
        """``ask`` over chunks of ``batch`` rows, ``concurrency`` chunks at once; results in row order."""
        b = self.options.batch
        chunks = [list(rows[i : i + b]) for i in range(0, len(rows), b)]
        return [x for part in self.client.map(ask, chunks) for x in part]

    def _stitched(
        self,
        sequences: Sequence[Sequence[int]],
        score_rows: Callable[[list[list[int]]], list[tuple[np.ndarray, np.ndarray, np.ndarray]]],
    ) -> list[TokenStats]:
        """Per-token stats of whole sequences from windows scored by ``score_rows`` (each row starts with
        its context; results cover positions 1..len(row)-1)."""
        bos = self.tokenizer.bos_id
        rows: list[list[int]] = []
        owners: list[tuple[int, int, int]] = []
        for s, seq in enumerate(sequences):
            full = [bos, *map(int, seq)]
            for start, end, first in _windows(len(full), self.max_length):
                rows.append(full[start:end])
                owners.append((s, first, start))
        ranks = [np.empty(len(seq), dtype=np.int32) for seq in sequences]
        lps = [np.empty(len(seq), dtype=np.float32) for seq in sequences]
        top1 = [np.empty(len(seq), dtype=np.float32) for seq in sequences]
        for (s, first, start), (r, lp, t) in zip(owners, self._batched(rows, score_rows), strict=True):
            keep = slice(first - start - 1, None)
            t0 = first - 1
            t1 = t0 + len(r[keep])
            ranks[s][t0:t1], lps[s][t0:t1], top1[s][t0:t1] = r[keep], lp[keep], t[keep]
        return [TokenStats(r, lp, t) for r, lp, t in zip(ranks, lps, top1, strict=True)]

    # ------------------------------------------------------------------ Capability.SCORE
    def _need(self, *tiers: str, what: str) -> None:
        if self.tier not in tiers:
            raise CapabilityError(
                f"{what} needs a server of tier {' or '.join(tiers)}, but {self.name} is of tier "
                f"'{self.tier}' (it grants only {', '.join(sorted(c.value for c in self.capabilities))})"
            )

    def _prompt_logprob_rows(self, rows: list[list[int]]) -> answers.Rows:
        return self._completions(  # type: ignore[no-any-return]
            {"prompt": rows, "max_tokens": 1, "temperature": 0, "prompt_logprobs": 1},
            lambda a: answers.prompt_logprob_rows(rows, a, self.name),
        )

    def token_stats(self, sequences: Sequence[Sequence[int]]) -> list[TokenStats]:
        self._need("prompt_logprobs", what="token_stats (exact ranks)")
        return self._stitched(sequences, self._prompt_logprob_rows)

    def score_ids(
        self, contexts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]]
    ) -> np.ndarray:
        """Sum of continuation log-probs (also on an ``echo`` server: it returns each prompt token's logprob)."""
        if len(contexts) != len(continuations):
            raise ValueError("contexts and continuations differ in length")
        self._need("prompt_logprobs", "echo", what="score_ids (likelihoods)")
        joined = [[*c, *x] for c, x in zip(contexts, continuations, strict=True)]
        stats = self.token_stats(joined) if self.tier == "prompt_logprobs" else self.topk_ranks(joined)
        return continuation_logprobs(stats, contexts)

    def score_text(self, contexts: Sequence[str], continuations: Sequence[str]) -> list[SpanScore]:
        return score_text_by_ids(self, contexts, continuations)

    def next_logprobs(self, prefixes: Sequence[Sequence[int]]) -> np.ndarray:
        """Refused: an API returns at most its top ``top_n`` next tokens, not the whole distribution.

        Filling the rest with NaN would let a caller that indexes arbitrary tokens (canary exposure's
        trie walk reads every child of a node) compute a wrong answer silently, so this raises
        :class:`CapabilityError` (the audit then skips that stage with the reason). The known part is
        :meth:`next_top_logprobs`.
        """
        raise CapabilityError(
            f"the full next-token distribution is not available from {self.name}: an API returns at most its "
            f"top {self.k} next tokens (canary exposure's trie walk needs every token's probability); "
            "measure it on the model's weights, or use the ledger / membership / probing, which need only "
            "per-token scores"
        )

    def next_top_logprobs(self, prefixes: Sequence[Sequence[int]]) -> np.ndarray:
        """Log-probs of the top ``top_n`` next tokens after each prefix, shape (len(prefixes), vocab);
        every other entry is NaN (unknown, not -inf)."""
        vocab = self.tokenizer.vocab_size
        if not vocab:
            raise ModelError(f"{self.name}: next_top_logprobs needs the vocabulary size; give tokenizer=DIR")
        out = np.full((len(prefixes), vocab), np.nan, dtype=np.float32)
        for i, (ids, lps) in enumerate(self.top_k(prefixes, self.k)):
            out[i, ids] = lps
        return out

    # ------------------------------------------------------------------ Capability.TOP_K
    def top_k(self, prefixes: Sequence[Sequence[int]], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        self._need("prompt_logprobs", "echo", what="top_k")
        if k > self.k:
            raise CapabilityError(
                f"{self.name} returns at most the top {self.k} tokens (tier '{self.tier}'); asked for {k}"
            )
        bos = self.tokenizer.bos_id
        rows = [[bos, *map(int, p)][-self.max_length + 1 :] for p in prefixes]

        def ask(chunk: list[list[int]]) -> list[tuple[np.ndarray, np.ndarray]]:
            body = {
                "prompt": chunk,
                "max_tokens": 1,
                "temperature": 0,
                "logprobs": k,
                "return_tokens_as_token_ids": True,
            }
            return self._completions(  # type: ignore[no-any-return]
                body, lambda a: answers.top_k_rows(a, len(chunk), k, self.name, self.tokenizer.encode)
            )

        return self._batched(rows, ask)

    def _echo_rows(self, rows: list[list[int]]) -> answers.Rows:
        body = {
            "prompt": rows,
            "max_tokens": 1,
            "temperature": 0,
            "echo": True,
            "logprobs": ECHO_MAX_K,
            "return_tokens_as_token_ids": True,
        }
        return self._completions(  # type: ignore[no-any-return]
            body, lambda a: answers.echo_rows(rows, a, self.name, self.tokenizer.encode, ECHO_MAX_K)
        )

    def topk_ranks(self, sequences: Sequence[Sequence[int]]) -> list[TokenStats]:
        """Ranks up to ``k`` (``k + 1``: outside the top k) with each token's exact logprob and the top-1
        logprob, one echo request per document window (the ledger's black-box path)."""
        self._need("echo", what="topk_ranks (echo)")
        return self._stitched(sequences, self._echo_rows)

    # ------------------------------------------------------------------ Capability.GENERATE
    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int,
        num_beams: int = 1,
        do_sample: bool = False,
        num_return_sequences: int = 1,
        temperature: float = 1.0,
        top_k: int | None = None,
        seed: int | None = None,
    ) -> list[list[str]]:
        """Continuations of text prompts (the server tokenises them). Beam search uses vLLM's
        ``use_beam_search`` extension, which ``lmleak serve`` honours too."""
        n = num_return_sequences
        body: dict[str, Any] = {
            "max_tokens": max_new_tokens,
            "n": n,
            "temperature": temperature if do_sample else 0,
        }
        if seed is not None:
            body["seed"] = seed
        if top_k is not None:
            body["top_k"] = top_k
        if num_beams > 1 and not do_sample:
            body.update(use_beam_search=True, best_of=num_beams)
        chat = self.tier == "chat"

        def ask(chunk: list[str]) -> list[list[str]]:
            if chat:  # the chat API takes one conversation per request
                return [
                    self._completions(
                        {**body, "messages": [{"role": "user", "content": p}]},
                        lambda a: answers.texts(a, n, self.name, chat=True),
                        chat=True,
                    )
                    for p in chunk
                ]
            texts = self._completions(
                {**body, "prompt": chunk}, lambda a: answers.texts(a, n * len(chunk), self.name)
            )
            return [texts[i * n : (i + 1) * n] for i in range(len(chunk))]

        return self._batched(list(prompts), ask)


def load_http_model(spec: str, **kw: Any) -> HTTPModel:
    """:class:`HTTPModel` for ``spec`` (the loader's entry point)."""
    return HTTPModel(spec, **kw)


__all__ = [
    "HTTPModel",
    "HTTPOptions",
    "RequestBudgetError",
    "TIERS",
    "TIER_ACCESS",
    "is_http_spec",
    "load_http_model",
    "parse_spec",
    "use_http_options",
]
