"""The token ledger: one teacher-forced pass over a corpus, stored once, read by every report.

Paper 001 §4 (Algorithm 1) queries the model once per prefix of every document to learn whether
each true token is in the top-k. Under teacher forcing one forward pass over a document yields
the same prediction at every position, so the ledger stores, for each token position ``i`` of
each document, the 1-based rank of the true token given tokens ``< i`` (and the BOS), its
log-probability and the top-1 log-probability. The multiset S for any k, the perplexities, the
top-k accuracy and the API-hardening curves (§6.1) are then derived without the model.

Storage (``RUN/ledger/``): Parquet shards written by :func:`lmleak.shards.run_sharded`, one row
per document: ``doc_id, user_id, token_ids, ranks, logprobs, top1_logprobs`` (aligned lists),
plus ``ledger.json`` (model, k available, window settings, sizes). An interrupted pass resumes.

Long documents: :class:`~lmleak.models.torch_causal.TorchCausalLM` scores a document longer than
``max_length`` with sliding windows that advance by ``max_length - overlap`` tokens; each token
is scored once, in the first window that gives it at least ``overlap`` tokens of context
(``overlap`` defaults to ``max_length // 2``, recorded in ``ledger.json``). A token scored with a
truncated context may rank differently than under the full prefix a per-prefix query of
Algorithm 1 would give only if that prefix itself exceeds the model's window, in which case a
per-prefix query truncates too.

Access levels:
    - ``Capability.SCORE``: ``model.token_stats`` (batched by the model).
    - a black-box top-k model exposing ``topk_ranks(sequences)`` (``lmleak.models.blackbox.TopKOnly``):
      ranks capped at ``k + 1``, NaN log-probabilities; only that k is available downstream.
    - ``Capability.TOP_K`` alone: one batched ``top_k`` query per prefix — the only way to see a
      pure API's predictions, so Algorithm 1's cost is unavoidable there.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from lmleak import progress
from lmleak.data.corpus import Document
from lmleak.data.loaders import iter_documents
from lmleak.errors import CapabilityError, ConfigError, RunError
from lmleak.ledger.plausibility import check_better_than_uniform
from lmleak.models import vllm_engine, vllm_env
from lmleak.models.base import Capability, TokenStats, require, scoring_convention
from lmleak.models.blackbox import TopKOnly
from lmleak.models.loading import load_model
from lmleak.runs import atomic_write_json
from lmleak.shards import MANIFEST, ShardEngine, read_shards, run_sharded, shard_path

LEDGER_DIR = "ledger"
META = "ledger.json"


@dataclass
class Ledger:
    """The ledger of one model over one corpus, as flat arrays (documents concatenated).

    Attributes:
        doc_ids, user_ids: one per document, in corpus order.
        offsets: int64, ``len(doc_ids) + 1``; document ``d`` owns positions ``offsets[d]:offsets[d+1]``.
        token_ids: int64 token ids (the model's tokenisation, no BOS).
        ranks: int32 1-based ranks (``k_available + 1`` means "not in the top k" for a black box).
        logprobs, top1_logprobs: float32 nats; NaN where the model does not expose them.
        k_available: None for full access, else the largest k a report may use.
        meta: what ``ledger.json`` records.
    """

    doc_ids: list[str]
    user_ids: list[str]
    offsets: np.ndarray
    token_ids: np.ndarray
    ranks: np.ndarray
    logprobs: np.ndarray
    top1_logprobs: np.ndarray
    k_available: int | None = None
    meta: dict[str, Any] | None = None

    @property
    def num_docs(self) -> int:
        return len(self.doc_ids)

    @property
    def num_tokens(self) -> int:
        return int(self.token_ids.size)

    def doc_tokens(self, d: int) -> np.ndarray:
        return self.token_ids[self.offsets[d] : self.offsets[d + 1]]

    def documents(self) -> list[np.ndarray]:
        return [self.doc_tokens(d) for d in range(self.num_docs)]

    def check_k(self, k: int) -> None:
        """Refuse a k the model never revealed (a top-k-only model ranks everything else k+1)."""

        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}", field="k")
        if self.k_available is not None and k > self.k_available:
            raise CapabilityError(
                f"the ledger was built from a top-{self.k_available} black-box model; k={k} is not available. "
                f"Use --k {self.k_available} or less, or a model with score access"
            )

    @classmethod
    def from_stats(
        cls,
        doc_ids: Sequence[str],
        user_ids: Sequence[str],
        token_ids: Sequence[Sequence[int]],
        stats: Sequence[TokenStats],
        *,
        k_available: int | None = None,
    ) -> Ledger:
        """Assemble a ledger in memory (what :func:`read_ledger` returns from the shards)."""
        lengths = np.array([len(t) for t in token_ids], dtype=np.int64)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])

        def cat(arrs: Sequence[Any], dtype: Any) -> np.ndarray:
            return (
                np.concatenate([np.asarray(a, dtype=dtype) for a in arrs])
                if len(arrs)
                else np.zeros(0, dtype)
            )

        return cls(
            list(doc_ids),
            list(user_ids),
            offsets,
            cat(token_ids, np.int64),
            cat([s.ranks for s in stats], np.int32),
            cat([s.logprobs for s in stats], np.float32),
            cat([s.top1_logprobs for s in stats], np.float32),
            k_available,
            {},
        )


# ---------------------------------------------------------------------- the pass
def model_access(model: Any) -> tuple[str, int | None]:
    """How the ledger can read ``model``: ``("score", None)``, ``("topk_ranks", k)`` or ``("top_k", None)``.

    Raises :class:`~lmleak.errors.CapabilityError` when the model grants neither SCORE nor TOP_K.
    """
    caps: frozenset[Any] = getattr(model, "capabilities", frozenset())
    if Capability.SCORE in caps and hasattr(model, "token_stats"):
        return "score", None
    require(model, Capability.TOP_K, attack="the leakage report (tab attack)")
    if hasattr(model, "topk_ranks"):
        return "topk_ranks", int(model.k)
    return "top_k", None


def _as_stats(result: Any, n: int) -> TokenStats:
    if isinstance(result, TokenStats):
        return result
    if hasattr(result, "ranks"):
        return TokenStats(
            np.asarray(result.ranks, np.int32),
            np.asarray(result.logprobs, np.float32),
            np.asarray(result.top1_logprobs, np.float32),
        )
    nan = np.full(n, np.nan, dtype=np.float32)
    return TokenStats(np.asarray(result, dtype=np.int32), nan, nan.copy())


def _per_prefix_stats(model: Any, seqs: Sequence[Sequence[int]], k: int) -> list[TokenStats]:
    """Algorithm 1's access pattern for a pure top-k API: one query per prefix (batched)."""
    prefixes = [list(s[:i]) for s in seqs for i in range(len(s))]
    preds = model.top_k(prefixes, k) if prefixes else []
    out, j = [], 0
    for s in seqs:
        ranks = np.full(len(s), k + 1, dtype=np.int32)
        for i, tok in enumerate(s):
            ids, _ = preds[j]
            j += 1
            hit = np.nonzero(np.asarray(ids) == int(tok))[0]
            if hit.size:
                ranks[i] = int(hit[0]) + 1
        out.append(_as_stats(ranks, len(s)))
    return out


def score_documents(
    model: Any, token_ids: Sequence[Sequence[int] | np.ndarray], *, k: int | None = None
) -> list[TokenStats]:
    """Ledger statistics of already tokenised documents, through the best access ``model`` grants."""
    access, _ = model_access(model)
    nonempty = [i for i, t in enumerate(token_ids) if len(t)]
    empty = TokenStats(np.zeros(0, np.int32), np.zeros(0, np.float32), np.zeros(0, np.float32))
    out: list[TokenStats] = [empty] * len(token_ids)
    seqs = [list(map(int, token_ids[i])) for i in nonempty]
    if not seqs:
        return out
    if access == "score":
        stats = model.token_stats(seqs)
    elif access == "topk_ranks":
        stats = [_as_stats(r, len(s)) for r, s in zip(model.topk_ranks(seqs), seqs, strict=True)]
    else:
        if k is None:
            raise ConfigError("a top-k-only model needs the k to query with", field="k")
        stats = _per_prefix_stats(model, seqs, k)
    for i, st in zip(nonempty, stats, strict=True):
        out[i] = st
    return out


def _fingerprint(model: Any, corpus: Iterable[Document], extra: dict[str, Any]) -> str:
    h = hashlib.sha256()
    parts: tuple[Any, ...] = (
        getattr(model, "name", ""),
        type(model).__name__,
        getattr(model, "max_length", None),
        getattr(model, "overlap", None),
        sorted(extra.items()),
    )
    # a model behind an HTTP API: the same URL may serve another model (models/http_cache.Probe)
    served = getattr(model, "fingerprint", None)
    h.update(repr(parts if served is None else (*parts, str(served))).encode())
    step = 1 << 20
    for d in corpus:
        h.update(f"{d.user_id}\x00{d.doc_id}\x00".encode())
        for i in range(0, len(d.text), step):  # the same digest as the whole text, without a copy of it
            h.update(d.text[i : i + step].encode())
        h.update(b"\x01")
    return h.hexdigest()[:24]


class StreamedCorpus:
    """A corpus file read afresh on every iteration, never held whole in memory.

    The ledger pass iterates its corpus twice (fingerprint, then the shards); a
    :class:`~lmleak.data.corpus.Corpus` holds every document, this re-reads the file through
    :func:`lmleak.data.loaders.iter_documents`, so the pass's memory does not grow with the corpus.

    Example:
        >>> StreamedCorpus("corpus.jsonl").path.name
        'corpus.jsonl'
    """

    def __init__(self, path: str | Path, **options: Any) -> None:
        self.path = Path(path)
        self.options = options

    def __iter__(self) -> Iterator[Document]:
        return iter(iter_documents(self.path, **self.options))


class ModelSpec:
    """A picklable recipe for a model: each Ray actor loads its own copy from the spec.

    Shipping a loaded model to every actor pickles its weights through the object store; a spec
    is a few bytes and lets each actor (on its own GPU) load the checkpoint itself. The same
    secure defaults apply in the actor (no pickled checkpoints unless ``allow_pickle``).

    Example:
        >>> ModelSpec("fake:corpus.jsonl", api_top_k=3).api_top_k
        3
    """

    def __init__(self, spec: str, *, allow_pickle: bool = False, api_top_k: int | None = None) -> None:
        self.spec = str(spec)
        self.allow_pickle = allow_pickle
        self.api_top_k = api_top_k

    def load(self) -> Any:
        model = load_model(self.spec, allow_pickle=self.allow_pickle)
        if self.api_top_k is not None:
            model = TopKOnly(model, self.api_top_k)
        return model


#: Characters per piece when a long text is tokenised piecewise (see :func:`encode_long`).
ENCODE_CHUNK_CHARS = 1 << 16
_PROBES = ("hello world", "My ID is: 123456", "a, b. c", "555-0100 x", "x\ny z", "über straße", "<MASK> w")


def _splits_at_spaces(tokenizer: Any) -> bool:
    """Whether ``encode(a + " " + b) == encode(a) + encode(" " + b)`` on probe texts, i.e. whether
    cutting a text just before a single space between two words leaves its tokenisation unchanged
    (true of word-level Metaspace and byte-level BPE tokenizers; not of every SentencePiece setup)."""
    cached = getattr(tokenizer, "_lmleak_splits_at_spaces", None)
    if cached is not None:
        return bool(cached)
    ok = True
    for probe in _PROBES:
        for i, ch in enumerate(probe):
            if (
                ch == " "
                and 0 < i < len(probe) - 1
                and not probe[i - 1].isspace()
                and not probe[i + 1].isspace()
            ):
                whole = list(map(int, tokenizer.encode(probe)))
                if whole != list(map(int, tokenizer.encode(probe[:i]))) + list(
                    map(int, tokenizer.encode(probe[i:]))
                ):
                    ok = False
    try:
        tokenizer._lmleak_splits_at_spaces = ok
    except AttributeError:  # a tokenizer with __slots__: probe again next time
        pass
    return ok


def _cut_points(text: str, chunk: int) -> list[int]:
    """Cut positions about ``chunk`` characters apart, each just before a single space between two
    non-space characters (the only cut :func:`_splits_at_spaces` vouches for)."""
    cuts, i, n = [0], 0, len(text)
    while n - i > chunk:
        j = i + chunk
        while j < n - 1 and not (text[j] == " " and not text[j - 1].isspace() and not text[j + 1].isspace()):
            j += 1
        if j >= n - 1:
            break
        cuts.append(j)
        i = j
    return cuts + [n]


def encode_long(tokenizer: Any, text: str, *, chunk_chars: int = ENCODE_CHUNK_CHARS) -> np.ndarray:
    """Token ids of ``text`` as an int64 array, tokenised piece by piece when it is long.

    A fast tokenizer encoding a 50 MB string at once holds offsets and token strings for every
    token (~600 bytes a token, measured); pieces of ``chunk_chars`` characters, cut just before a
    single space, keep that transient memory bounded. Cutting is used only when the tokenizer
    passes :func:`_splits_at_spaces`; otherwise the text is encoded whole.

    Example:
        >>> from lmleak.models.fake import SimpleWordTokenizer
        >>> tok = SimpleWordTokenizer("a b c".split())
        >>> encode_long(tok, "a b c a b", chunk_chars=2).tolist() == tok.encode("a b c a b")
        True
    """
    if len(text) <= chunk_chars or not _splits_at_spaces(tokenizer):
        return np.asarray(tokenizer.encode(text), dtype=np.int64)
    cuts = _cut_points(text, chunk_chars)
    parts = [
        np.asarray(tokenizer.encode(text[a:b]), dtype=np.int64) for a, b in zip(cuts, cuts[1:], strict=False)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _list_column(arrays: Sequence[np.ndarray], dtype: Any) -> Any:
    """A list<dtype> Arrow column from numpy arrays, without a Python int per value."""
    import pyarrow as pa

    offsets = np.zeros(len(arrays) + 1, dtype=np.int32)
    np.cumsum([len(a) for a in arrays], out=offsets[1:])
    flat = np.concatenate([np.asarray(a, dtype=dtype) for a in arrays]) if arrays else np.zeros(0, dtype)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat))


def ledger_table(model: Any, items: list[tuple[str, str, str]], k: int | None) -> Any:
    """One shard of the ledger: ``(doc_id, user_id, text)`` items -> an Arrow table (one row per document)."""
    import pyarrow as pa

    ids = [encode_long(model.tokenizer, text) for _, _, text in items]
    stats = score_documents(model, ids, k=k)
    return pa.table(
        {
            "doc_id": [d for d, _, _ in items],
            "user_id": [u for _, u, _ in items],
            "token_ids": _list_column(ids, np.int32),
            "ranks": _list_column([s.ranks for s in stats], np.int32),
            "logprobs": _list_column([s.logprobs for s in stats], np.float32),
            "top1_logprobs": _list_column([s.top1_logprobs for s in stats], np.float32),
        }
    )


class LedgerWork:
    """The ledger's work factory for :func:`lmleak.shards.run_sharded`: a loaded model (local
    engine) or a :class:`ModelSpec` loaded once per worker (Ray, where only the spec travels)."""

    def __init__(self, k: int | None, *, model: Any = None, spec: ModelSpec | None = None) -> None:
        if (model is None) == (spec is None):
            raise ValueError("give exactly one of model and spec")
        self.k, self.model, self.spec = k, model, spec

    def __call__(self) -> Callable[[list[tuple[str, str, str]]], Any]:
        model = self.model if self.model is not None else self.spec.load()  # type: ignore[union-attr]
        if self.spec is not None and hasattr(model, "to_device"):
            import torch

            if torch.cuda.is_available():  # a Ray actor that reserved a GPU sees it as cuda:0
                model.to_device("cuda")
        k = self.k
        return lambda items: ledger_table(model, items, k)


class VllmLedgerWork:
    """The ledger's work factory for ``engine="vllm"``: scores through vLLM (see
    :mod:`lmleak.models.vllm_engine`), in-process where vLLM imports, else in a worker run by the
    vLLM venv's Python. Built once per pass (loading a model into vLLM takes minutes on a CPU);
    ``model`` is the in-process lmleak model, used for its tokenizer and window settings, so the
    tokens, windows and BOS are the transformers path's own."""

    def __init__(
        self,
        model: Any,
        model_dir: str | Path,
        *,
        dtype: str = "float32",
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.model, self.model_dir, self.dtype, self.extra = model, str(model_dir), dtype, dict(extra or {})
        self.scorer: Any = None

    def __call__(self) -> Callable[[list[tuple[str, str, str]]], Any]:
        m = self.model
        max_length = int(m.max_length)
        overlap = int(getattr(m, "overlap", None) or max_length // 2)
        backend = vllm_engine.open_backend(
            self.model_dir, dtype=self.dtype, max_model_len=max_length + 1, extra=self.extra
        )
        self.scorer = scorer = vllm_engine.VllmScorer(
            backend, m.tokenizer, name=getattr(m, "name", "vllm"), max_length=max_length, overlap=overlap
        )
        return lambda items: ledger_table(scorer, items, None)

    def close(self) -> None:
        if self.scorer is not None:
            self.scorer.close()
            self.scorer = None


# long: signature and docstring are two thirds of it (every engine's parameters); the body is ~30 lines
def run_ledger_pass(
    model: Any,
    corpus: Iterable[Document],
    run_dir: str | Path,
    *,
    k: int | None = None,
    shard_size: int = 256,
    engine: str | ShardEngine = "local",
    model_spec: ModelSpec | None = None,
    vllm_model_dir: str | Path | None = None,
    vllm_dtype: str = "float32",
) -> dict[str, Any]:
    """Run the ledger pass into ``run_dir/ledger`` without reading it back; returns ``ledger.json``.

    Memory stays flat as the corpus grows: documents are streamed (pass a :class:`StreamedCorpus`
    for a file that should never be loaded whole), at most a few shards are in flight, and the
    sizes recorded in ``ledger.json`` are summed shard by shard.

    Args:
        model: the audited model as loaded in this process (used by the local engine, and for the
            fingerprint and access level).
        corpus: the training data D: a :class:`~lmleak.data.corpus.Corpus` or any re-iterable of
            documents (it is iterated twice: fingerprint, then the pass).
        model_spec: for ``engine="ray"``: each actor loads the model from this spec instead of
            receiving a pickled copy (None: ship ``model`` itself, fine for small models).
        engine: ``"local"``, ``"ray"`` or a :class:`~lmleak.shards.ShardEngine` with Ray's settings
            (see :func:`lmleak.shards.run_sharded`); ``"vllm"`` scores through vLLM in this
            process's pass (:class:`VllmLedgerWork`).
        vllm_model_dir: for ``engine="vllm"``: the Hugging Face folder vLLM loads (None: derived
            from ``model_spec`` by :func:`lmleak.models.vllm_env.vllm_model_dir`).
        vllm_dtype: the dtype vLLM runs the model in (float32 matches the transformers path).
    """
    shards = (
        engine if isinstance(engine, ShardEngine) else ShardEngine("local" if engine == "vllm" else engine)
    )
    kind = "vllm" if engine == "vllm" else shards.engine
    access, k_avail = model_access(model)
    if access == "top_k":
        k_avail = k
    out = Path(run_dir) / LEDGER_DIR
    # the start token is in the fingerprint: a ledger scored after another one is not reused
    settings: dict[str, Any] = {"access": access, "k": k_avail, **scoring_convention(model)}
    factory = _work_factory(
        model,
        kind,
        access,
        k_avail,
        model_spec=model_spec,
        vllm_model_dir=vllm_model_dir,
        vllm_dtype=vllm_dtype,
    )
    check = getattr(model, "check_tokenizer_on", None)
    if callable(check):  # a local tokenizer of a model behind an API: the server's on a corpus sample
        check(d.text for d in corpus)  # it reads the first few documents only
    fp = _fingerprint(model, corpus, settings)
    _drop_stale_ledger(out, fp)
    try:
        run_sharded(
            ((d.doc_id, d.user_id, d.text) for d in corpus),
            factory,
            out,
            fingerprint=fp,
            shard_size=shard_size,
            engine=shards,
            total_items=len(corpus) if isinstance(corpus, Sized) else None,
            description="ledger",
        )
    finally:
        if isinstance(factory, VllmLedgerWork):
            factory.close()
    return _write_meta(out, model, access, k_avail, fp, kind)


def _drop_stale_ledger(out: Path, fp: str) -> None:
    """Delete a ledger of another model, corpus or settings in ``out`` (say so in one line): a rerun of
    the same command after the model changed (a server now serving another model under the same URL)
    must score afresh, not report the old model's numbers or stop on the mismatch."""
    manifest = out / MANIFEST
    if not manifest.exists():
        return
    try:
        old = json.loads(manifest.read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, ValueError):
        old = None
    if old != fp:
        progress.log(f"ledger: {out} was computed for another model, corpus or settings; computing it again")
        shutil.rmtree(out)


def _write_meta(
    out: Path, model: Any, access: str, k_avail: int | None, fp: str, engine: str
) -> dict[str, Any]:
    """Write ``ledger.json``: the model, its access, the shards' sizes, the fingerprint and the engine."""
    num_docs, num_tokens = _shard_sizes(out)
    meta = {
        "model": getattr(model, "name", type(model).__name__),
        "access": access,
        "k_available": k_avail,
        "max_length": getattr(model, "max_length", None),
        "overlap": getattr(model, "overlap", None),
        "num_docs": num_docs,
        "num_tokens": num_tokens,
        "fingerprint": fp,
        **scoring_convention(model),
    }
    # The engine is not in the fingerprint, so that a report finds a ledger scored by vLLM complete
    # and reuses it (as it does a Ray pass); ledger.json says which engine scored it.
    prev = json.loads((out / META).read_text(encoding="utf-8")) if (out / META).exists() else {}
    if engine == "vllm":
        meta["engine"] = "vllm"
    elif prev.get("fingerprint") == fp and "engine" in prev:
        meta["engine"] = prev["engine"]
    atomic_write_json(out / META, meta)
    return meta


def _work_factory(
    model: Any,
    engine: str,
    access: str,
    k_avail: int | None,
    *,
    model_spec: ModelSpec | None,
    vllm_model_dir: str | Path | None,
    vllm_dtype: str,
) -> LedgerWork | VllmLedgerWork:
    """What each worker runs: vLLM scoring, a model loaded from its spec (Ray), or ``model`` itself."""
    if engine == "vllm":
        if access != "score":
            raise CapabilityError(
                "--engine vllm scores the model itself; a black-box (top-k) model needs --engine local"
            )
        if vllm_model_dir is None:
            if model_spec is None:
                raise ValueError("engine='vllm' needs vllm_model_dir or model_spec")
            vllm_model_dir = vllm_env.vllm_model_dir(model_spec.spec)
        return VllmLedgerWork(model, vllm_model_dir, dtype=vllm_dtype)
    if engine == "ray" and model_spec is not None:
        return LedgerWork(k_avail, spec=model_spec)
    return LedgerWork(k_avail, model=model)


def _shard_sizes(out: Path) -> tuple[int, int]:
    """(documents, tokens) in the ledger's shards, read one shard's ranks column at a time."""
    import pyarrow.parquet as pq

    shards = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["shards"]
    num_docs = num_tokens = 0
    for i in sorted(shards):
        col = pq.read_table(shard_path(out, int(i)), columns=["ranks"]).column("ranks")
        num_docs += len(col)
        num_tokens += sum(len(c.flatten()) for c in col.chunks)
    return num_docs, num_tokens


def build_ledger(
    model: Any,
    corpus: Iterable[Document],
    run_dir: str | Path,
    *,
    k: int | None = None,
    shard_size: int = 256,
    engine: str | ShardEngine = "local",
    **engine_options: Any,
) -> Ledger:
    """Run the one teacher-forced pass over ``corpus`` into ``run_dir/ledger`` and return the ledger.

    Args:
        model: any lmleak model with SCORE or TOP_K access (see the module docstring).
        corpus: the training data D.
        run_dir: the report's run directory; shards go to ``run_dir/ledger``.
        k: only for a model with bare ``top_k`` access (the k to query with).
        shard_size: documents per shard (and per ``token_stats`` call, which the model batches
            by tokens internally).
        engine: ``"local"``, ``"ray"`` or a :class:`~lmleak.shards.ShardEngine` (see
            :func:`run_ledger_pass`, which runs the pass without reading it back).
        engine_options: ``model_spec``, ``vllm_model_dir``, ``vllm_dtype`` (:func:`run_ledger_pass`).
    """
    meta = run_ledger_pass(
        model, corpus, run_dir, k=k, shard_size=shard_size, engine=engine, **engine_options
    )
    ledger = read_ledger(run_dir)
    ledger.k_available, ledger.meta = meta["k_available"], meta
    check_better_than_uniform(ledger.logprobs, model)
    return ledger


def read_ledger(run_dir: str | Path, *, meta_missing_ok: bool = False) -> Ledger:
    """Load ``run_dir/ledger`` (complete shards only) as flat arrays."""
    import pyarrow as pa

    out = Path(run_dir) / LEDGER_DIR
    meta: dict[str, Any] = {}
    if (out / META).exists():
        meta = json.loads((out / META).read_text(encoding="utf-8"))
    elif not meta_missing_ok:
        raise RunError(f"{out} holds no complete ledger; run `lmleak report` first")
    table = read_shards(out)
    if table.num_rows == 0:
        return replace(Ledger.from_stats([], [], [], [], k_available=meta.get("k_available")), meta=meta)

    def flat(name: str, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
        col = pa.chunked_array(table.column(name)).combine_chunks()
        return np.asarray(col.offsets, dtype=np.int64), np.asarray(
            col.flatten().to_numpy(zero_copy_only=False), dtype=dtype
        )

    offsets, tokens = flat("token_ids", np.int64)
    _, ranks = flat("ranks", np.int32)
    _, lps = flat("logprobs", np.float32)
    _, top1 = flat("top1_logprobs", np.float32)
    offsets = offsets - offsets[0]
    return Ledger(
        table.column("doc_id").to_pylist(),
        table.column("user_id").to_pylist(),
        offsets,
        tokens,
        ranks,
        lps,
        top1,
        meta.get("k_available"),
        meta,
    )
