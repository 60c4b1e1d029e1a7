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

The parts, bottom up: :mod:`~lmleak.models.http_spec` (the spec and its options),
:mod:`~lmleak.models.http_transport` (deadlines, size caps), :mod:`~lmleak.models.http_answers`
(every answer checked), :mod:`~lmleak.models.http_cache` (fingerprint and answer cache),
:mod:`~lmleak.models.http_client` (requests, retries, budget), :mod:`~lmleak.models.http_tokenizer`
(local or the server's tokenizer); this module detects the tier and implements the model.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import httpx
import numpy as np

from lmleak import progress
from lmleak.errors import CapabilityError, ModelError
from lmleak.models import http_answers as answers
from lmleak.models.base import (
    Capability,
    SpanScore,
    TokenStats,
    continuation_logprobs,
    score_text_by_ids,
)
from lmleak.models.http_cache import Probe
from lmleak.models.http_client import Counters, HTTPClient, RequestBudgetError, Unsupported, wrong_model
from lmleak.models.http_spec import (
    MIN_MAX_LENGTH,
    TIERS,
    HTTPOptions,
    is_http_spec,
    parse_spec,
    use_http_options,
)
from lmleak.models.http_tokenizer import (
    CORPUS_SAMPLE_CHARS,
    CORPUS_SAMPLE_DOCS,
    TOKENIZER_PROBE,
    RemoteTokenizer,
    check_tokenizer,
    load_tokenizer,
    tokenizer_sha256,
)
from lmleak.models.windows import stats_buffers, window_rows

# what each tier grants, as lmleak capabilities and as a KART access kind
TIER_CAPABILITIES: dict[str, frozenset[Capability]] = {
    "prompt_logprobs": frozenset({Capability.SCORE, Capability.TOP_K, Capability.GENERATE}),
    "echo": frozenset({Capability.TOP_K, Capability.GENERATE}),
    "chat": frozenset({Capability.GENERATE}),
    "text": frozenset({Capability.GENERATE}),
}
TIER_ACCESS = {"prompt_logprobs": "scores", "echo": "top_k", "chat": "generation", "text": "generation"}
ECHO_MAX_K = 5  # the legacy completions API's cap on logprobs
#: The fingerprint probe of the scoring tiers: a fixed token sequence after the start token (cut to
#: the server's window and, when known, its vocabulary); no tokenizer is needed to send it.
PROBE_IDS = tuple(range(3, 19))
#: The fingerprint probe of the generation tiers (greedy, ``PROBE_NEW_TOKENS`` new tokens).
PROBE_TEXT = "The capital of France is"
PROBE_NEW_TOKENS = 4


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
        self.tokenizer_verified = self._verify_tokenizer([TOKENIZER_PROBE])
        self.tokenizer_sha256 = (
            "server /tokenize"
            if isinstance(self.tokenizer, RemoteTokenizer)
            else tokenizer_sha256(self.tokenizer)
        )
        self.tier, self.probe = self._fingerprint_probe(opts.tier)
        self.client.probe = self.probe  # from now on answers are cached, keyed by this fingerprint
        if not self.probe.logprobs:
            progress.log(
                f"{self.name}: a weak fingerprint: the '{self.tier}' tier gives no log-probabilities, so the "
                f"model is known only by its {PROBE_NEW_TOKENS} greedy tokens after {PROBE_TEXT!r}; another "
                "model that continues the same way is not told apart (cache, provenance)"
            )
        self.capabilities = TIER_CAPABILITIES[self.tier]
        self.access = TIER_ACCESS[self.tier]
        self.k = {"prompt_logprobs": opts.top_n, "echo": ECHO_MAX_K}.get(self.tier, 0)

    def __repr__(self) -> str:
        return f"HTTPModel({self.name!r}, tier={self.tier!r})"

    def _verify_tokenizer(self, texts: list[str]) -> bool:
        """Whether a local tokenizer is checked against the server's ``/tokenize`` on ``texts`` (raises
        on a mismatch; see :func:`~lmleak.models.http_tokenizer.check_tokenizer`); the server's own
        tokenizer is the served model's by construction. Says once that a tokenizer is unverified."""
        if isinstance(self.tokenizer, RemoteTokenizer):
            return True
        if getattr(self, "tokenizer_verified", True) is False:
            return False  # the server has no /tokenize: said once already
        ok = check_tokenizer(self.client, self.model, self.tokenizer, self.tokenizer_source, texts)
        if not ok:
            progress.log(
                f"{self.name}: the server has no /tokenize, so the tokenizer {self.tokenizer_source} is "
                "unverified (recorded as tokenizer_verified: false): if it is not the served model's, every "
                "score is noise and a leaking model looks clean"
            )
        return ok

    def check_tokenizer_on(self, texts: Iterable[str]) -> None:
        """Check a local tokenizer against the server's on a sample of the corpus (the first
        :data:`CORPUS_SAMPLE_DOCS` texts, cut to :data:`CORPUS_SAMPLE_CHARS` characters): the ledger
        pass calls it before scoring. Raises :class:`ModelError` on a mismatch."""
        sample = [t[:CORPUS_SAMPLE_CHARS] for t in itertools.islice(texts, CORPUS_SAMPLE_DOCS) if t]
        if sample:
            self.tokenizer_verified = self._verify_tokenizer(sample)

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
            "tokenizer_verified": self.tokenizer_verified,
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
            "tokenizer": self.tokenizer_source,
            "tokenizer_sha256": self.tokenizer_sha256,
            "tokenizer_verified": self.tokenizer_verified,
            "models_entry": self.probe.card or None,
        }

    # ------------------------------------------------------------------ set-up
    def _model_card(self) -> dict[str, Any]:
        """This model's ``/v1/models`` entry, asked afresh (never cached: it is half the fingerprint)."""
        try:
            answer = self.client.get("/models", cache=False)
        except Unsupported:
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

    def _wrong_model(self, e: Unsupported) -> ModelError | None:
        return wrong_model(e, self.base_url, self.model)

    def _completions(self, body: dict[str, Any], parse: Callable[[Any], Any], *, chat: bool = False) -> Any:
        path = "/chat/completions" if chat else "/completions"
        try:
            return self.client.post(path, {"model": self.model, **body}, parse=parse)
        except Unsupported as e:
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
            except Unsupported as e:
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
            "tokenizer": self.tokenizer_sha256,
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
        # the half-window overlap of TorchCausalLM's default
        rows, owners = window_rows(sequences, self.tokenizer.bos_id, self.max_length, self.max_length // 2)
        ranks, lps, top1 = stats_buffers(sequences)
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
