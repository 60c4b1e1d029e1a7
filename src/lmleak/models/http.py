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
threads over one ``httpx.Client``), retried with exponential backoff on 429 and 5xx (``retries=``
tries after the first, honouring ``Retry-After``), cached on disk under ``cache=DIR`` (default
``~/.cache/lmleak/http``, owner-only; key = SHA-256 of the endpoint, path and request body) so an
interrupted audit asks nothing twice, and counted; ``max_requests=N`` (or ``lmleak
--max-requests N``) stops the run with exit 2 once N requests have gone over the network.

An API gives at most the top ``top_n`` (default 20, vLLM's ``max_logprobs``) next tokens, never the
whole distribution: ``next_logprobs`` is refused with :class:`CapabilityError` (so canary exposure,
whose trie walk reads every token's probability, is skipped by the audit with that reason), and
``next_top_logprobs`` returns the known top ``top_n`` with NaN (unknown) elsewhere.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
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

from lmleak.errors import CapabilityError, LmleakError, ModelError
from lmleak.models.base import (
    Capability,
    SpanScore,
    TokenStats,
    continuation_logprobs,
    score_text_by_ids,
)
from lmleak.models.tokenizer import HFTokenizer

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
    timeout: float = 300.0
    max_requests: int | None = None
    cache: str | None = None  # cache dir; "off" disables the cache
    max_length: int | None = None  # longest input (BOS included); default: the server's max_model_len
    top_n: int = CHAT_MAX_K  # how many next-token log-probs next_logprobs asks for


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
        kind = str(names[key].type)
        try:
            if value is not None and "int" in kind:
                kw[key] = int(value)
            elif value is not None and "float" in kind:
                kw[key] = float(value)
        except (TypeError, ValueError):
            raise ModelError(f"{spec!r}: option {key}={value!r} is not a number") from None
    opts = HTTPOptions(**kw)
    if opts.tier is not None and opts.tier not in TIERS:
        raise ModelError(
            f"{spec!r}: unknown tier {opts.tier!r}; use one of {', '.join(TIERS)} (or leave it out to detect)"
        )
    if opts.concurrency < 1 or opts.batch < 1 or opts.retries < 0:
        raise ModelError(f"{spec!r}: concurrency and batch must be >= 1, retries >= 0")
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    return base, model, opts


def _api_key() -> str | None:
    for env in API_KEY_ENVS:
        if os.environ.get(env):
            return os.environ[env]
    return None


def default_cache_dir() -> Path:
    return Path(os.environ.get("LMLEAK_CACHE", Path.home() / ".cache" / "lmleak")) / "http"


class _Unsupported(Exception):
    """The server refused a request shape (400/404/422): a tier it does not grant."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


@dataclass
class Counters:
    requests: int = 0  # sent over the network (retries included)
    cached: int = 0  # answered from the disk cache
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


class HTTPClient:
    """POSTs JSON with retries, a disk cache and a request budget; see the module docstring."""

    def __init__(
        self,
        base_url: str,
        options: HTTPOptions,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url
        self.options = options
        headers = {"Content-Type": "application/json"}
        key = _api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        root = urllib.parse.urlsplit(base_url)
        self.root = urllib.parse.urlunsplit((root.scheme, root.netloc, "", "", ""))
        self.client = httpx.Client(
            headers=headers,
            timeout=options.timeout,
            transport=transport,
            limits=httpx.Limits(max_connections=max(options.concurrency, 1) + 2),
        )
        self.counters = Counters()
        self.sleep = sleep
        self.cache_dir: Path | None = None
        if options.cache != "off":
            self.cache_dir = Path(options.cache).expanduser() if options.cache else default_cache_dir()

    def close(self) -> None:
        self.client.close()

    def url(self, path: str) -> str:
        """``/completions`` is under the base URL; ``/tokenize`` (vLLM) sits at the server's root."""
        return (self.root if path in ("/tokenize", "/detokenize") else self.base_url) + path

    # ------------------------------------------------------------------ disk cache
    def _cache_path(self, path: str, body: Any) -> Path | None:
        if self.cache_dir is None:
            return None
        key = hashlib.sha256(json.dumps([self.base_url, path, body], sort_keys=True).encode()).hexdigest()
        return self.cache_dir / key[:2] / f"{key}.json"

    def _cache_put(self, p: Path, answer: Any) -> None:
        for d in (self.cache_dir, p.parent):
            assert d is not None
            if not d.is_dir():  # only folders lmleak creates are made owner-only (never a chmod of /tmp)
                d.mkdir(parents=True, exist_ok=True, mode=0o700)
                os.chmod(d, 0o700)  # mkdir's mode is masked by the umask
        tmp = p.with_name(f".{p.name}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(answer, f)
        os.replace(tmp, p)

    # ------------------------------------------------------------------ requests
    def get(self, path: str) -> Any:
        """The JSON answer to a GET (cached too: a resumed run sends nothing it sent before)."""
        return self.post(path, None)

    def post(self, path: str, body: dict[str, Any] | None, *, cache: bool = True) -> Any:
        """The JSON answer to one POST (a GET when ``body`` is None), from the cache when asked before."""
        p = self._cache_path(path, body) if cache else None
        if p is not None and p.exists():
            try:
                answer = json.loads(p.read_text(encoding="utf-8"))
                with self.counters.lock:
                    self.counters.cached += 1
                return answer
            except (OSError, json.JSONDecodeError):
                pass  # a damaged entry (killed mid-write before the rename cannot happen; a full disk can): ask again
        answer = self._send("GET" if body is None else "POST", path, body)
        if p is not None:
            self._cache_put(p, answer)
        return answer

    def _budget(self) -> None:
        limit = self.options.max_requests
        with self.counters.lock:
            if limit is not None and self.counters.requests >= limit:
                where = f" in {self.cache_dir}" if self.cache_dir else ""
                raise RequestBudgetError(
                    f"--max-requests {limit} reached ({self.counters.requests} requests sent, {self.counters.cached} "
                    f"answered from the cache{where}); every answer so far is cached, so rerunning with a higher "
                    "--max-requests resumes without asking them again"
                )
            self.counters.requests += 1

    def _send(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        url = self.url(path)
        delay = self.options.backoff
        last = ""
        for attempt in range(self.options.retries + 1):
            self._budget()
            try:
                r = self.client.request(method, url, json=body)
            except httpx.ConnectError as e:
                raise ModelError(
                    f"{url}: cannot connect ({e}); is the server running and listening there? "
                    "(test locally with: lmleak serve MODEL --port PORT)"
                ) from None
            except httpx.TimeoutException as e:
                last = f"timed out ({type(e).__name__})"
            else:
                if r.status_code == 429 or r.status_code >= 500:
                    last = f"HTTP {r.status_code}: {_error_message(r)}"
                    retry_after = r.headers.get("retry-after")
                    if retry_after and retry_after.replace(".", "", 1).isdigit():
                        delay = max(delay, float(retry_after))
                else:
                    return self._answer(r, url, body)
            if attempt < self.options.retries:
                with self.counters.lock:
                    self.counters.retried += 1
                self.sleep(delay)
                delay *= 2
        raise ModelError(
            f"{url}: no answer after {self.options.retries + 1} tries (last: {last}); "
            "the server is overloaded or failing — retry later, or raise retries= / lower concurrency="
        )

    def _answer(self, r: httpx.Response, url: str, body: dict[str, Any] | None) -> Any:
        if r.status_code in (400, 404, 405, 422):
            raise _Unsupported(r.status_code, _error_message(r))
        if r.status_code in (401, 403):
            raise ModelError(
                f"{url}: HTTP {r.status_code} ({_error_message(r)}); set the API key in "
                f"{' or '.join(API_KEY_ENVS)}"
            )
        if r.status_code >= 300:
            raise ModelError(f"{url}: HTTP {r.status_code}: {_error_message(r)}")
        try:
            answer = r.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            tail = r.text[-60:]
            raise ModelError(
                f"{url}: the server's answer is not complete JSON ({len(r.content)} bytes, ending "
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


def _error_message(r: httpx.Response) -> str:
    try:
        d = r.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return r.text[:200]
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
    """The server's tokenizer through ``POST /tokenize`` and ``/detokenize`` (cached like every request)."""

    def __init__(self, client: HTTPClient, model: str, card: dict[str, Any]) -> None:
        self.client = client
        self.model = model
        meta = card.get("lmleak") or {}
        bos = meta.get("bos_id")
        if bos is None:  # vLLM: the tokenizer's BOS is what it adds as a special token to an empty text
            try:
                toks = self.client.post(
                    "/tokenize", {"model": model, "prompt": "", "add_special_tokens": True}
                )["tokens"]
            except _Unsupported as e:
                if (err := _wrong_model(e, client.base_url, model)) is not None:
                    raise err from None
                toks = []
            except (KeyError, TypeError):
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

    def encode(self, text: str) -> list[int]:
        try:
            answer = self.client.post(
                "/tokenize", {"model": self.model, "prompt": text, "add_special_tokens": False}
            )
        except _Unsupported as e:
            raise ModelError(
                f"{self.client.url('/tokenize')}: the server does not tokenize ({e}); give its "
                "tokenizer: tokenizer=DIR in the URL query or lmleak --tokenizer DIR"
            ) from None
        return [int(t) for t in answer["tokens"]]

    def decode(self, ids: Sequence[int]) -> str:
        answer = self.client.post("/detokenize", {"model": self.model, "tokens": [int(i) for i in ids]})
        return str(answer["prompt"])


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
def _token_id(key: str, tokenizer: Any) -> int | None:
    """A token of a logprobs answer as an id: ``token_id:N`` (``return_tokens_as_token_ids``), a bare id
    (vLLM's prompt_logprobs keys), or a decoded string that encodes to exactly one token."""
    if key.startswith("token_id:"):
        return int(key[9:])
    if key.lstrip("-").isdigit():
        return int(key)
    ids = tokenizer.encode(key)
    return ids[0] if len(ids) == 1 else None


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


def _tier_probes(probe: list[int]) -> list[tuple[str, str, dict[str, Any], Callable[[Any], bool]]]:
    """(tier, endpoint, request body, does the answer grant the tier?), richest tier first."""
    return [
        (
            "prompt_logprobs",
            "/completions",
            {"prompt": probe, "max_tokens": 1, "temperature": 0, "prompt_logprobs": 1},
            lambda a: isinstance(a["choices"][0].get("prompt_logprobs"), list),
        ),
        (
            "echo",
            "/completions",
            {
                "prompt": probe,
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
            {
                "messages": [{"role": "user", "content": "Hi"}],
                "max_tokens": 1,
                "temperature": 0,
                "logprobs": True,
                "top_logprobs": 1,
            },
            lambda a: bool((a["choices"][0].get("logprobs") or {}).get("content")),
        ),
        (
            "text",
            "/completions",
            {"prompt": "Hi", "max_tokens": 1, "temperature": 0},
            lambda a: "text" in a["choices"][0],
        ),
        (  # a chat-only API without log-probabilities: generation through chat
            "chat",
            "/chat/completions",
            {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1, "temperature": 0},
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
        self.client = HTTPClient(base, opts, transport=transport, sleep=sleep)
        card = self._model_card()
        self.max_length = int(
            opts.max_length
            or card.get("max_model_len")
            or (card.get("lmleak") or {}).get("max_length")
            or 2048
        )
        if tokenizer is not None:
            self.tokenizer: Any = tokenizer
            self.tokenizer_source = f"given ({type(tokenizer).__name__})"
        elif opts.tokenizer:
            self.tokenizer = load_tokenizer(opts.tokenizer)
            self.tokenizer_source = opts.tokenizer
        else:
            self.tokenizer = RemoteTokenizer(self.client, model, card)
            self.tokenizer_source = "server /tokenize"
        self.tier = opts.tier or self.detect_tier()
        self.capabilities = TIER_CAPABILITIES[self.tier]
        self.access = TIER_ACCESS[self.tier]
        self.k = {"prompt_logprobs": opts.top_n, "echo": ECHO_MAX_K}.get(self.tier, 0)

    def __repr__(self) -> str:
        return f"HTTPModel({self.name!r}, tier={self.tier!r})"

    @property
    def counters(self) -> Counters:
        return self.client.counters

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
            **self.counters.as_dict(),
        }

    # ------------------------------------------------------------------ set-up
    def _model_card(self) -> dict[str, Any]:
        try:
            answer = self.client.get("/models")
        except _Unsupported:
            return {}  # a server without /models: the first real request tells whether the model exists
        ids = [str(m.get("id")) for m in answer.get("data", []) if isinstance(m, dict)]
        if ids and self.model not in ids:
            raise ModelError(
                f"{self.base_url} does not serve a model named {self.model!r}; it serves: "
                f"{', '.join(ids)}. Write {self.base_url}#{ids[0]}"
            )
        return next((m for m in answer.get("data", []) if m.get("id") == self.model), {})

    def _wrong_model(self, e: _Unsupported) -> ModelError | None:
        return _wrong_model(e, self.base_url, self.model)

    def _completions(self, body: dict[str, Any], *, chat: bool = False) -> dict[str, Any]:
        path = "/chat/completions" if chat else "/completions"
        try:
            return self.client.post(path, {"model": self.model, **body})
        except _Unsupported as e:
            raise self._wrong_model(e) or ModelError(
                f"{self.client.url(path)}: the server refused a '{self.tier}'-tier request ({e}); "
                "give the tier it grants with ?tier=... in the model URL"
            ) from None

    def detect_tier(self) -> str:
        """The richest tier the server answers, by one tiny request per tier (cached like any other)."""
        probe = [self.tokenizer.bos_id, *self.tokenizer.encode("Hi")][:2]
        tries = _tier_probes(probe)
        why = []
        for tier, path, body, ok in tries:
            try:
                if ok(self.client.post(path, {"model": self.model, **body})):
                    return tier
                why.append(f"{tier}: answer without the fields")
            except _Unsupported as e:
                if (err := self._wrong_model(e)) is not None:
                    raise err from None
                why.append(f"{tier}: {e}")
            except (KeyError, IndexError, TypeError, AttributeError):
                why.append(f"{tier}: unexpected answer shape")
        raise ModelError(f"{self.name}: the server answers none of the tiers ({'; '.join(why)})")

    # ------------------------------------------------------------------ batching
    def _batched(self, rows: Sequence[Any], ask: Callable[[list[Any]], list[Any]]) -> list[Any]:
        """``ask`` over chunks of ``batch`` rows, ``concurrency`` chunks at once; results in row order."""
        b = self.options.batch
        chunks = [list(rows[i : i + b]) for i in range(0, len(rows), b)]
        return [x for part in self.client.map(ask, chunks) for x in part]

    @staticmethod
    def _choices(answer: dict[str, Any], n: int) -> list[dict[str, Any]]:
        choices = sorted(answer.get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) != n:
            raise ModelError(f"the server answered {len(choices)} choices for {n} prompts")
        return choices

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

    def _prompt_logprob_rows(self, rows: list[list[int]]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        answer = self._completions({"prompt": rows, "max_tokens": 1, "temperature": 0, "prompt_logprobs": 1})
        out = []
        for row, choice in zip(rows, self._choices(answer, len(rows)), strict=True):
            entries = choice.get("prompt_logprobs")
            if not isinstance(entries, list) or len(entries) != len(row):
                raise ModelError(
                    f"{self.name}: prompt_logprobs of {len(entries or [])} entries for a prompt of "
                    f"{len(row)} tokens"
                )
            n = len(row) - 1
            r, lp, t = np.empty(n, np.int32), np.empty(n, np.float32), np.empty(n, np.float32)
            for i in range(n):
                d = entries[i + 1]
                true = d.get(str(row[i + 1]))
                if true is None:
                    raise ModelError(
                        f"{self.name}: prompt_logprobs at position {i + 1} lack the prompt token {row[i + 1]}"
                    )
                r[i], lp[i] = int(true["rank"]), float(true["logprob"])
                t[i] = max(float(v["logprob"]) for v in d.values())
            out.append((r, lp, t))
        return out

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
            answer = self._completions(
                {
                    "prompt": chunk,
                    "max_tokens": 1,
                    "temperature": 0,
                    "logprobs": k,
                    "return_tokens_as_token_ids": True,
                }
            )
            res = []
            for c in self._choices(answer, len(chunk)):
                top = ((c.get("logprobs") or {}).get("top_logprobs") or [None])[0] or {}
                pairs = [
                    (tid, float(v))
                    for key, v in top.items()
                    if (tid := _token_id(key, self.tokenizer)) is not None
                ]
                pairs.sort(key=lambda p: (-p[1], p[0]))  # the ledger's order: by logprob, ties by id
                res.append(
                    (
                        np.array([p[0] for p in pairs[:k]], dtype=np.int64),
                        np.array([p[1] for p in pairs[:k]], dtype=np.float32),
                    )
                )
            return res

        return self._batched(rows, ask)

    def _echo_rows(self, rows: list[list[int]]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        k = ECHO_MAX_K
        answer = self._completions(
            {
                "prompt": rows,
                "max_tokens": 1,
                "temperature": 0,
                "echo": True,
                "logprobs": k,
                "return_tokens_as_token_ids": True,
            }
        )
        out = []
        for row, c in zip(rows, self._choices(answer, len(rows)), strict=True):
            lp_info = c.get("logprobs") or {}
            tops, token_lps = lp_info.get("top_logprobs") or [], lp_info.get("token_logprobs") or []
            if len(tops) < len(row) or len(token_lps) < len(row):
                raise ModelError(
                    f"{self.name}: echo answered {len(tops)} positions for a prompt of {len(row)} tokens"
                )
            n = len(row) - 1
            r, lp, t = np.full(n, k + 1, np.int32), np.empty(n, np.float32), np.full(n, np.nan, np.float32)
            for i in range(n):
                true_lp = float(token_lps[i + 1])
                top = {
                    tid: float(v)
                    for key, v in (tops[i + 1] or {}).items()
                    if (tid := _token_id(key, self.tokenizer)) is not None
                }
                lp[i] = true_lp
                if top:
                    t[i] = max(top.values())
                if row[i + 1] in top:  # the ledger's rank: 1 + how many are strictly more likely
                    r[i] = 1 + sum(v > true_lp for v in top.values())
            out.append((r, lp, t))
        return out

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
                res = []
                for p in chunk:
                    a = self._completions({**body, "messages": [{"role": "user", "content": p}]}, chat=True)
                    res.append([str(c["message"]["content"]) for c in self._choices(a, n)])
                return res
            a = self._completions({**body, "prompt": chunk})
            texts = [str(c["text"]) for c in self._choices(a, n * len(chunk))]
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
