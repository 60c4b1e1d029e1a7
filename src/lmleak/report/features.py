"""Features of every distinct leaked sequence (paper 001 §4, Table 1), from the ledger and the index.

For each distinct token sequence w in S (per k): its text, length in tokens and whitespace
words, *total count in S*, *user count in S*, *total count in D*, *user count in D* (from
:class:`~lmleak.ledger.index.CorpusIndex`, never by scanning text), the contexts (document text
before each occurrence, bounded to a window) with their true lengths in tokens, the model's
perplexity of w at each occurrence, and the PII types the sequence overlaps.

Perplexity normalisation (so models with different tokenizers compare, §5 Eq. 2):
``PP(w | context) = exp(-(sum of the model's log-probs of w's tokens given the context) / words(w))``
with ``words`` the whitespace words of w's text (at least 1). The model's value comes from the
ledger's log-probabilities (no new forward pass); the public model's from
``public.score_text(context, text)``: the same text given the same context text, where the context
is the ``context_tokens`` tokens before the occurrence (:data:`PUBLIC_CONTEXT_TOKENS` by default).

Leakage is computed in log space: ``log_perplexity_ratio = ln(PP_public / PP_lm) =
(logprob - public_logprob) / words``, finite where the ratio itself would overflow a float.
Per-sequence values are taken at one occurrence: the one with the largest log ratio among those the
public model scored (the worst case, as ε_l is), else the one with the lowest perplexity.

Cost: every step is linear in the occurrences with a constant bounded by ``context_tokens`` — text
is decoded from a window of token ids, never from a document's start, and the public model scores
at most ``public_occurrences`` occurrences per sequence (the audited model's most confident ones),
each identical (context, text) pair once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lmleak.ledger.index import CorpusIndex
from lmleak.ledger.ledger import Ledger
from lmleak.models.base import count_words
from lmleak.progress import track
from lmleak.report.settings import PUBLIC_OCCURRENCES

SEQUENCE_COLUMNS = [
    "k", "sequence_id", "text", "length_tokens", "length_words", "count_in_s", "users_in_s", "count_in_d",
    "users_in_d", "unique", "contexts", "context_lengths", "mean_context_length", "min_context_length",
    "perplexities", "perplexity", "public_perplexities", "public_perplexity", "perplexity_ratio",
    "logprob", "public_logprob", "log_perplexity_ratio", "pii_types", "user_ids",
]  # fmt: skip

#: The column of the features table holding each unique sequence's detected ``(entity, value)`` PII
#: pairs: read by the report (whose PII it is, :mod:`lmleak.report.owners`), never written.
PII_VALUES = "pii_values"
#: Tokens of the audited model's tokenisation before a sequence that the public model sees (and that
#: a displayed context holds). Bounded so the report's cost after the ledger is linear in the corpus;
#: 128 tokens is the half-window of the small GPTs' 256-token ledger windows — every ledger token was
#: scored with at least that much context (see docs/report-at-scale.md).
PUBLIC_CONTEXT_TOKENS = 128
#: Tokens on either side of a unique sequence in which PII is detected (an e-mail address is at most
#: ~30 tokens; a sequence holding part of one must see the rest to be recognised).
PII_WINDOW_TOKENS = 24
#: Tokens decoded before a sequence to recover its text with the leading space its first token folds in.
_TEXT_LEAD = 8
#: The columns naming one row of the features table: a sequence at one k.
_KEY = ["k", "sequence_id"]


def per_word_perplexity(logprob_sum: np.ndarray | float, num_words: np.ndarray | int) -> np.ndarray:
    """``exp(-logprob / max(words, 1))``: per-word perplexity of a span (nats in, ratio out).

    Example:
        >>> float(per_word_perplexity(-2 * np.log(1.3), 2))
        1.3
    """
    words = np.maximum(np.asarray(num_words, dtype=np.float64), 1.0)
    with np.errstate(over="ignore"):
        return np.round(np.exp(-np.asarray(logprob_sum, dtype=np.float64) / words), 12)


def log_perplexity_ratio(logprob: Any, public_logprob: Any, num_words: Any) -> np.ndarray:
    """``ln(PP_public / PP_lm) = (logprob - public_logprob) / words``, computed in log space.

    The ratio itself overflows a float for long, surprising sequences (e^800); its logarithm never
    does, so maxima and percentiles are taken here and exponentiated only for display.

    Example:
        >>> float(log_perplexity_ratio(-2.0, -1602.0, 2))
        800.0
    """
    words = np.maximum(np.asarray(num_words, dtype=np.float64), 1.0)
    return (np.asarray(logprob, dtype=np.float64) - np.asarray(public_logprob, dtype=np.float64)) / words


_CUT = "\ufffd"  # what a byte-level tokenizer decodes a character cut between tokens to


class SpanTexts:
    """Decodes occurrence and context texts from a bounded window of the document's tokens.

    Decoding a slice on its own can drop a leading space that the tokenizer folds into the token
    (Metaspace, byte-level BPE); decoding ``ids[w0:end]`` and cutting it at the length of the decoded
    ``ids[w0:start]`` keeps it, so a public model sees exactly the text the user wrote. The window
    starts at most ``window`` tokens before the span, so each call costs O(window + span) whatever
    the document's length (decoding from the document's start made the report quadratic in it).
    """

    def __init__(self, ledger: Ledger, tokenizer: Any, window: int = PUBLIC_CONTEXT_TOKENS) -> None:
        self.ledger, self.tokenizer, self.window = ledger, tokenizer, int(window)
        self.decoded_tokens = 0  # work done, for the benchmark and the linearity test

    def context_and_text(
        self, doc: int, start: int, end: int, *, window: int | None = None
    ) -> tuple[str, str]:
        ((ctx, text),) = self.many([doc], [start], [end], window=window)
        return ctx, text

    def many(
        self,
        docs: Sequence[int] | np.ndarray,
        starts: Sequence[int] | np.ndarray,
        ends: Sequence[int] | np.ndarray,
        *,
        window: int | None = None,
    ) -> list[tuple[str, str]]:
        """``(context, text)`` of many spans, decoded in batches (the Rust tokenizers' batch decode
        when the tokenizer offers ``decode_many``)."""
        w = self.window if window is None else int(window)
        ids = self.ledger.token_ids
        ctx_rows, full_rows = [], []
        for d, s, e in zip(docs, starts, ends, strict=True):
            b = int(self.ledger.offsets[int(d)])
            w0 = max(0, int(s) - w)
            ctx_rows.append(ids[b + w0 : b + int(s)].tolist())
            full_rows.append(ids[b + w0 : b + int(e)].tolist())
            self.decoded_tokens += (int(s) - w0) + (int(e) - w0)
        ctxs, fulls = self._decode(ctx_rows), self._decode(full_rows)
        out = []
        for i, (ctx, full) in enumerate(zip(ctxs, fulls, strict=True)):
            # a byte-level token can end inside a character (Cyrillic, CJK: 2-4 bytes in UTF-8); the
            # context then decodes the cut character as U+FFFD and the text would start with one
            # ('�ва' for 'Ива'): the text starts at the whole character instead
            cut = ctx.rstrip(_CUT)
            if full.startswith(cut):
                ctx, text = cut, full[len(cut) :]
            else:  # a tokenizer whose decode is not prefix-stable here: decode the span alone
                span = full_rows[i][len(ctx_rows[i]) :]
                self.decoded_tokens += len(span)
                text = self.tokenizer.decode(span)
            # a span that ends inside a character stops before it (a span of part of one character
            # has no text), and a context window that starts inside one starts after it
            out.append((ctx.lstrip(_CUT), text.rstrip(_CUT)))
        return out

    def _decode(self, rows: list[list[int]]) -> list[str]:
        many = getattr(self.tokenizer, "decode_many", None)
        if many is not None:
            return list(many(rows))
        return [self.tokenizer.decode(r) if r else "" for r in rows]

    def text(self, doc: int, start: int, end: int) -> str:
        """The span's text, without the separating space its first token may fold in."""
        return self.context_and_text(doc, start, end, window=_TEXT_LEAD)[1].strip()


def _most_confident(
    codes: np.ndarray, logprob_per_word: np.ndarray, candidates: np.ndarray, m: int
) -> np.ndarray:
    """Bool mask: among ``candidates``, the ``m`` occurrences of each group with the highest
    per-word log-prob (ties: earlier occurrence first).

    Example:
        >>> _most_confident(np.array([0, 0, 0, 1]), np.array([-1., -3., -2., -5.]), np.ones(4, bool), 2)
        array([ True, False,  True,  True])
    """
    out = np.zeros(codes.size, dtype=bool)
    idx = np.nonzero(candidates)[0]
    if idx.size == 0 or m <= 0:
        return out
    order = idx[np.lexsort((idx, -logprob_per_word[idx], codes[idx]))]
    g = codes[order]
    first = np.r_[0, np.nonzero(np.diff(g))[0] + 1]
    rank = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
    out[order[rank < m]] = True
    return out


def _score_public(public_model: Any, owners: np.ndarray, contexts: list[str], texts: list[str]) -> np.ndarray:
    """Public log-probs of ``texts`` given ``contexts``; identical pairs scored once; a folded
    leave-out public routes each occurrence to the model that never saw its owner."""
    out = np.empty(len(texts), dtype=np.float64)
    route = getattr(public_model, "model_for", None)
    by_model: dict[int, tuple[Any, dict[tuple[str, str], list[int]]]] = {}
    for j, (u, c, t) in enumerate(zip(owners, contexts, texts, strict=True)):
        m = route(str(u)) if route is not None else public_model
        by_model.setdefault(id(m), (m, {}))[1].setdefault((c, t), []).append(j)
    for m, pairs in by_model.values():
        keys = list(pairs)
        batch = 256  # the public model scores in chunks, so a long pass shows progress
        for i in track(range(0, len(keys), batch), description="public model scoring", unit="batches"):
            chunk = keys[i : i + batch]
            scores = m.score_text([c for c, _ in chunk], [t for _, t in chunk])
            for key, sc in zip(chunk, scores, strict=True):
                out[pairs[key]] = sc.logprob
    return out


def _pii_spans(detector: Any, before: str, text: str, after: str) -> list[tuple[str, str]]:
    """``(entity, value)`` of each PII span detected in ``before + text + after`` that overlaps
    ``text`` (a sequence holding only part of an e-mail address, its domain following the
    sequence, counts); the value is the whole span (the address a sequence holds part of)."""
    lo = len(before)
    hi = lo + len(text)
    full = before + text + after
    return [
        (s.entity, full[s.start : s.end])
        for s in detector.detect(full)
        if s.start < hi and s.end > lo and not _in_message_id(full, s.start)
    ]


#: A mail header line whose ``<local@domain>`` values are message ids, not anyone's address.
_MESSAGE_ID_LINE = re.compile(r"[ \t>]*(?:Message-ID|In-Reply-To|References|X-Message-ID):", re.IGNORECASE)


def _in_message_id(text: str, start: int) -> bool:
    """Whether the span at ``start`` sits on a ``Message-ID:`` / ``In-Reply-To:`` / ``References:``
    header line: an e-mail-shaped message id (``<7abf30b051ae@lists.example.org>``) names a message.

    Example:
        >>> t = "Message-ID: <7abf@lists.example.org>" + chr(10) + "From: a@example.org"
        >>> _in_message_id(t, t.index("7abf")), _in_message_id(t, t.index("a@ex"))
        (True, False)
    """
    line_start = text.rfind("\n", 0, start) + 1
    return _MESSAGE_ID_LINE.match(text, line_start) is not None


def _pii_column(
    texts: SpanTexts, detector: Any, seqs: Any, doc_arr: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[list[list[str] | None], list[list[tuple[str, str]] | None]]:
    """``pii_types`` of each user-unique sequence (None for the others), detected at its first
    occurrence in a window of :data:`PII_WINDOW_TOKENS` tokens on either side; and the ``(entity,
    value)`` pairs of those spans (``pii_values``, which the report reads and does not write)."""
    rows = np.nonzero(seqs["unique"].to_numpy())[0]
    firsts = seqs["first_occurrence"].to_numpy()[rows]
    sids = seqs["sequence_id"].to_numpy()[rows]
    want: dict[str, int] = {}
    for sid, i in zip(sids, firsts, strict=True):
        want.setdefault(str(sid), int(i))
    occ_idx = np.fromiter(want.values(), dtype=np.int64, count=len(want))
    doc_end = texts.ledger.offsets[doc_arr[occ_idx] + 1] - texts.ledger.offsets[doc_arr[occ_idx]]
    after_end = np.minimum(ends[occ_idx] + PII_WINDOW_TOKENS, doc_end)
    with_before = texts.many(doc_arr[occ_idx], starts[occ_idx], ends[occ_idx], window=PII_WINDOW_TOKENS)
    with_after = texts.many(doc_arr[occ_idx], ends[occ_idx], after_end, window=0)
    found = {
        sid: _pii_spans(detector, before, text, after)
        for sid, (before, text), (_, after) in zip(want, with_before, with_after, strict=True)
    }
    out: list[list[str] | None] = [None] * len(seqs)
    values: list[list[tuple[str, str]] | None] = [None] * len(seqs)
    for row, sid in zip(rows, sids, strict=True):
        out[int(row)] = sorted({entity for entity, _ in found[str(sid)]})
        values[int(row)] = found[str(sid)]
    return out, values


# long: the docstring documents every argument; the body is 25 lines of calls to the helpers below
def sequence_features(
    ledger: Ledger,
    occ: Any,
    index: CorpusIndex,
    texts: SpanTexts,
    *,
    public_model: Any | None = None,
    public_scope: str = "unique",
    max_contexts: int = 20,
    public_occurrences: int = PUBLIC_OCCURRENCES,
    pii_detector: Any | None = None,
) -> tuple[Any, Any]:
    """Compute the features table (one row per (k, sequence)) and enrich the occurrence rows.

    Every step is linear in the number of occurrences, with a constant bounded by
    ``texts.window``: no step looks at a document's text beyond that window before a span.

    Args:
        ledger: the model's ledger over D.
        occ: occurrences from :func:`lmleak.report.sequences.occurrences` (with ``doc``).
        index: the corpus index over the same tokenisation.
        texts: decodes the leaked tokens with the audited model's tokenizer; its ``window`` is the
            tokens before an occurrence in its displayed and public-scored context.
        public_model: a model with SCORE access, or None.
        public_scope: ``"unique"`` scores only sequences whose user count in D is 1 (all that ε_l
            and the curated count need); ``"all"`` scores every sequence.
        max_contexts: context texts kept per sequence for display (all context lengths and
            perplexities are kept).
        public_occurrences: occurrences per sequence the public model scores — those where the
            audited model's per-word perplexity is lowest (0: all of them).
        pii_detector: a PII detector (``detect(text)``); when given, ``pii_types`` lists the entity
            types of PII overlapping each sequence (detected at its first occurrence, in context).

    Returns:
        ``(sequences, occurrences)`` as pandas DataFrames.
    """
    import pandas as pd

    occ = occ.copy()
    if len(occ) == 0:
        for c in ("context_length", "perplexity", "public_perplexity", "perplexity_ratio"):
            occ[c] = pd.Series(dtype=np.float64)
        return pd.DataFrame({c: pd.Series(dtype=object) for c in SEQUENCE_COLUMNS}), occ
    a = _OccurrenceArrays.of(ledger, occ)
    seqs, seq_tokens = _sequence_texts(ledger, occ, a, texts)
    _add_counts_in_d(seqs, seq_tokens, index)

    words = seqs.set_index(_KEY)["length_words"]
    occ_words = words.reindex(pd.MultiIndex.from_frame(occ[_KEY])).to_numpy()
    occ["context_length"] = a.starts
    occ["logprob"] = a.lp_sum
    occ["perplexity"] = per_word_perplexity(a.lp_sum, occ_words)
    unique_ids = set(seqs.loc[seqs["users_in_d"] == 1, "sequence_id"])
    ctx_text = _score_occurrences(
        occ, a, texts, occ_words, unique_ids, public_model, public_scope, public_occurrences, max_contexts
    )
    seqs = seqs.join(_per_sequence(occ, a, ctx_text, occ_words, max_contexts), on=_KEY)
    seqs["mean_context_length"] = [float(np.mean(x)) for x in seqs["context_lengths"]]
    seqs["min_context_length"] = [int(np.min(x)) for x in seqs["context_lengths"]]
    seqs["unique"] = seqs["users_in_d"] == 1
    seqs["pii_types"] = None
    seqs[PII_VALUES] = None
    if pii_detector is not None:
        seqs["pii_types"], seqs[PII_VALUES] = _pii_column(texts, pii_detector, seqs, a.doc, a.starts, a.ends)
    return seqs[[*SEQUENCE_COLUMNS, PII_VALUES]].reset_index(drop=True), occ


@dataclass(frozen=True)
class _OccurrenceArrays:
    """The occurrence arrays every step of :func:`sequence_features` shares (one entry per occurrence)."""

    base: np.ndarray  # ledger offset of the occurrence's document
    starts: np.ndarray
    ends: np.ndarray
    doc: np.ndarray
    lp_sum: np.ndarray  # the audited model's log-probability of the occurrence's tokens
    codes: np.ndarray  # the occurrence's (k, sequence) group number, in order of first appearance
    rank_in_seq: np.ndarray  # its rank among its group's occurrences
    order: np.ndarray  # a stable sort by group
    cuts: np.ndarray  # where each group starts in ``order`` (but the first)

    @classmethod
    def of(cls, ledger: Ledger, occ: Any) -> _OccurrenceArrays:
        """Read the arrays off the occurrence rows and the ledger (log-probabilities by prefix sums)."""
        base = ledger.offsets[occ["doc"].to_numpy()]
        starts = occ["start"].to_numpy(np.int64)
        ends = occ["end"].to_numpy(np.int64)
        lp_cum = np.concatenate([[0.0], np.cumsum(ledger.logprobs.astype(np.float64))])
        codes = occ.groupby(_KEY, sort=False).ngroup().to_numpy()
        order = np.argsort(codes, kind="stable")
        return cls(
            base=base,
            starts=starts,
            ends=ends,
            doc=occ["doc"].to_numpy(np.int64),
            lp_sum=lp_cum[base + ends] - lp_cum[base + starts],
            codes=codes,
            rank_in_seq=occ.groupby(_KEY, sort=False).cumcount().to_numpy(),
            order=order,
            cuts=np.nonzero(np.diff(codes[order]))[0] + 1,
        )

    def lists(self, values: np.ndarray) -> list[list[Any]]:
        """``values`` split into one list per group (one stable sort; pandas' list aggregation is slow)."""
        return [part.tolist() for part in np.split(values[self.order], self.cuts)]

    def groups(self) -> list[np.ndarray]:
        """The occurrence indices of each group, in occurrence order."""
        return np.split(self.order, self.cuts)


def _sequence_texts(
    ledger: Ledger, occ: Any, a: _OccurrenceArrays, texts: SpanTexts
) -> tuple[Any, list[np.ndarray]]:
    """One row per (k, sequence) with its text, length in tokens and words; and each row's token ids.

    One representative occurrence per (k, sequence) gives the text and the token ids.
    """
    import pandas as pd

    first = occ.reset_index().groupby(_KEY, sort=False)["index"].first()
    seq_rows: list[dict[str, Any]] = []
    seq_tokens: list[np.ndarray] = []
    rep_of: dict[str, int] = {}
    for (k, sid), i in first.items():
        b, s, e = int(a.base[i]), int(a.starts[i]), int(a.ends[i])
        rep_of.setdefault(sid, int(i))
        seq_tokens.append(ledger.token_ids[b + s : b + e])
        seq_rows.append({"k": int(k), "sequence_id": sid, "length_tokens": int(e - s)})
    reps = np.fromiter(rep_of.values(), dtype=np.int64, count=len(rep_of))
    decoded = texts.many(a.doc[reps], a.starts[reps], a.ends[reps], window=_TEXT_LEAD)
    text_of = {sid: t.strip() for sid, (_, t) in zip(rep_of, decoded, strict=True)}
    seqs = pd.DataFrame(seq_rows, columns=["k", "sequence_id", "length_tokens"])
    seqs["text"] = [text_of[s] for s in seqs["sequence_id"]]
    seqs["length_words"] = [count_words(t) for t in seqs["text"]]
    return seqs, seq_tokens


def _add_counts_in_d(seqs: Any, seq_tokens: list[np.ndarray], index: CorpusIndex) -> None:
    """Add ``count_in_d`` and ``users_in_d`` from the suffix array, once per distinct token sequence."""
    distinct: dict[str, int] = {}
    queries: list[np.ndarray] = []
    for sid, toks in zip(seqs["sequence_id"], seq_tokens, strict=True):
        if sid not in distinct:
            distinct[sid] = len(queries)
            queries.append(toks)
    total_d, users_d = index.counts(queries)
    seqs["count_in_d"] = [int(total_d[distinct[s]]) for s in seqs["sequence_id"]]
    seqs["users_in_d"] = [int(users_d[distinct[s]]) for s in seqs["sequence_id"]]


def _score_occurrences(
    occ: Any,
    a: _OccurrenceArrays,
    texts: SpanTexts,
    occ_words: np.ndarray,
    unique_ids: set[str],
    public_model: Any | None,
    public_scope: str,
    public_occurrences: int,
    max_contexts: int,
) -> np.ndarray:
    """Decode the contexts needed and add the public model's columns to ``occ``; the context texts.

    An occurrence needs a decoded context when it is among the first ``max_contexts`` of its
    sequence (display) or the public model scores it.
    """
    n = len(occ)
    want_public = np.zeros(n, dtype=bool)
    if public_model is not None:
        in_scope = (
            np.ones(n, dtype=bool)
            if public_scope == "all"
            else occ["sequence_id"].isin(unique_ids).to_numpy()
        )
        m = public_occurrences if public_occurrences > 0 else n
        want_public = _most_confident(a.codes, a.lp_sum / np.maximum(occ_words, 1), in_scope, m)
    need_ctx = (a.rank_in_seq < max_contexts) | want_public
    ctx_text = np.full(n, None, dtype=object)
    occ_text = np.full(n, None, dtype=object)
    need = np.nonzero(need_ctx)[0]
    for j, pair in zip(need, texts.many(a.doc[need], a.starts[need], a.ends[need]), strict=True):
        ctx_text[j], occ_text[j] = pair
    occ["public_logprob"] = np.nan
    if want_public.any():
        idx = np.nonzero(want_public)[0]
        owners = occ["user_id"].to_numpy(dtype=object)[idx]
        col = occ["public_logprob"].to_numpy(copy=True)
        col[idx] = _score_public(public_model, owners, list(ctx_text[idx]), list(occ_text[idx]))
        occ["public_logprob"] = col
    pub_lp = occ["public_logprob"].to_numpy(np.float64)
    occ["public_perplexity"] = per_word_perplexity(pub_lp, occ_words)
    occ["log_perplexity_ratio"] = log_perplexity_ratio(a.lp_sum, pub_lp, occ_words)
    with np.errstate(over="ignore", invalid="ignore"):
        occ["perplexity_ratio"] = np.exp(occ["log_perplexity_ratio"].to_numpy())
    return ctx_text


def _representatives(occ: Any, a: _OccurrenceArrays, occ_words: np.ndarray) -> np.ndarray:
    """Each group's representative occurrence: the largest log ratio among the scored ones (+inf, a
    public model that gives the text probability 0, is the largest: never dropped for a finite one),
    else the most confident (lowest perplexity) one."""
    log_ratio = occ["log_perplexity_ratio"].to_numpy(np.float64)
    scored = ~np.isnan(log_ratio)
    pick_score = np.where(scored, log_ratio, -np.inf)
    fallback = np.where(np.isfinite(a.lp_sum), a.lp_sum / np.maximum(occ_words, 1), -np.inf)
    return np.array(
        [
            part[np.argmax(pick_score[part])] if scored[part].any() else part[np.argmax(fallback[part])]
            for part in a.groups()
        ],
        dtype=np.int64,
    )


def _per_sequence(
    occ: Any, a: _OccurrenceArrays, ctx_text: np.ndarray, occ_words: np.ndarray, max_contexts: int
) -> Any:
    """The per-(k, sequence) columns aggregated over its occurrences, indexed by (k, sequence_id)."""
    import pandas as pd

    group_keys = occ[_KEY].drop_duplicates().to_numpy()
    user_lists = [sorted(set(u)) for u in a.lists(occ["user_id"].to_numpy(dtype=object))]
    keep_ctx = a.rank_in_seq < max_contexts
    ctx_lists = [
        [str(c) for c, kp in zip(cs, ks_, strict=True) if kp]
        for cs, ks_ in zip(a.lists(ctx_text), a.lists(keep_ctx), strict=True)
    ]
    best = _representatives(occ, a, occ_words)
    col = {c: occ[c].to_numpy(np.float64) for c in ("perplexity", "public_perplexity", "perplexity_ratio")}
    return pd.DataFrame(
        {
            "k": [int(x) for x in group_keys[:, 0]],
            "sequence_id": [str(x) for x in group_keys[:, 1]],
            "count_in_s": [len(u) for u in a.lists(a.starts)],
            "users_in_s": [len(u) for u in user_lists],
            "contexts": ctx_lists,
            "context_lengths": a.lists(a.starts),
            "perplexities": a.lists(col["perplexity"]),
            "public_perplexities": a.lists(col["public_perplexity"]),
            "user_ids": user_lists,
            "perplexity": col["perplexity"][best],
            "public_perplexity": col["public_perplexity"][best],
            "perplexity_ratio": col["perplexity_ratio"][best],
            "logprob": a.lp_sum[best],
            "public_logprob": occ["public_logprob"].to_numpy(np.float64)[best],
            "log_perplexity_ratio": occ["log_perplexity_ratio"].to_numpy(np.float64)[best],
            "first_occurrence": np.array([part[0] for part in a.groups()], dtype=np.int64),
        }
    ).set_index(_KEY)


def redact_sequences(seqs: Any) -> Any:
    """The redacted table of paper 001 §4 (end): lengths, counts, context lengths, perplexities and
    the sequence hash — no text, no contexts, no user ids.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"sequence_id": ["ab"], "text": ["my pin 1234"], "contexts": [["x"]],
        ...                    "user_ids": [["u1"]], "length_tokens": [3]})
        >>> list(redact_sequences(df).columns)
        ['sequence_id', 'length_tokens']
    """
    return seqs.drop(columns=[c for c in ("text", "contexts", "user_ids") if c in seqs.columns])
