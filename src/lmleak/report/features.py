"""Features of every distinct leaked sequence (paper 001 §4, Table 1), from the ledger and the index.

For each distinct token sequence w in S (per k): its text, length in tokens and whitespace
words, *total count in S*, *user count in S*, *total count in D*, *user count in D* (from
:class:`~lmleak.ledger.index.CorpusIndex`, never by scanning text), the contexts (document text
before each occurrence) with their lengths in tokens, and the model's perplexity of w at each
occurrence.

Perplexity normalisation (so models with different tokenizers compare, §5 Eq. 2):
``PP(w | context) = exp(-(sum of the model's log-probs of w's tokens given the context) / words(w))``
with ``words`` the whitespace words of w's text (at least 1). The model's value comes from the
ledger's log-probabilities (no new forward pass); the public model's from
``public.score_text(context, text)``, i.e. the same text given the same context text.

Per-sequence summaries of per-occurrence values: ``perplexity_ratio`` is the largest
``PP_public / PP_lm`` over the scored occurrences (the worst case, as ε_l is), and
``perplexity`` / ``public_perplexity`` are taken at that occurrence; without a public model
``perplexity`` is the smallest (most confident) perplexity over the occurrences.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lmleak.ledger.index import CorpusIndex
from lmleak.ledger.ledger import Ledger
from lmleak.models.base import count_words

SEQUENCE_COLUMNS = [
    "k", "sequence_id", "text", "length_tokens", "length_words", "count_in_s", "users_in_s", "count_in_d",
    "users_in_d", "unique", "contexts", "context_lengths", "mean_context_length", "min_context_length",
    "perplexities", "perplexity", "public_perplexities", "public_perplexity", "perplexity_ratio", "user_ids",
]  # fmt: skip


def per_word_perplexity(logprob_sum: np.ndarray | float, num_words: np.ndarray | int) -> np.ndarray:
    """``exp(-logprob / max(words, 1))``: per-word perplexity of a span (nats in, ratio out).

    Example:
        >>> float(per_word_perplexity(-2 * np.log(1.3), 2))
        1.3
    """
    words = np.maximum(np.asarray(num_words, dtype=np.float64), 1.0)
    with np.errstate(over="ignore"):
        return np.round(np.exp(-np.asarray(logprob_sum, dtype=np.float64) / words), 12)


class SpanTexts:
    """Decodes occurrence and context texts so that ``context + text`` is the document's prefix.

    Decoding a slice on its own can drop a leading space that the tokenizer folds into the token
    (Metaspace, byte-level BPE); cutting the decoded prefix ``ids[:end]`` at the length of the
    decoded ``ids[:start]`` keeps it, so a public model sees exactly the text the user wrote.
    """

    def __init__(self, ledger: Ledger, tokenizer: Any) -> None:
        self.ledger, self.tokenizer = ledger, tokenizer

    def context_and_text(self, doc: int, start: int, end: int) -> tuple[str, str]:
        ids = self.ledger.doc_tokens(doc)
        ctx = self.tokenizer.decode(ids[:start].tolist()) if start else ""
        full = self.tokenizer.decode(ids[:end].tolist())
        if full.startswith(ctx):
            return ctx, full[len(ctx) :]
        return ctx, self.tokenizer.decode(ids[start:end].tolist())


def sequence_features(
    ledger: Ledger,
    occ: Any,
    index: CorpusIndex,
    tokenizer: Any,
    *,
    public_model: Any | None = None,
    public_scope: str = "unique",
    max_contexts: int = 20,
) -> tuple[Any, Any]:
    """Compute the features table (one row per (k, sequence)) and enrich the occurrence rows.

    Args:
        ledger: the model's ledger over D.
        occ: occurrences from :func:`lmleak.report.sequences.occurrences` (with ``doc``).
        index: the corpus index over the same tokenisation.
        tokenizer: the audited model's tokenizer (decodes the leaked tokens).
        public_model: a model with SCORE access, or None.
        public_scope: ``"unique"`` scores only occurrences of sequences whose user count in D is
            1 (all that ε_l and the curated count need); ``"all"`` scores every occurrence.
        max_contexts: context texts kept per sequence (all context lengths and perplexities are
            kept); bounds the size of the table for sequences leaked thousands of times.

    Returns:
        ``(sequences, occurrences)`` as pandas DataFrames.
    """
    import pandas as pd

    occ = occ.copy()
    n = len(occ)
    if n == 0:
        for c in ("context_length", "perplexity", "public_perplexity", "perplexity_ratio"):
            occ[c] = pd.Series(dtype=np.float64)
        return pd.DataFrame({c: pd.Series(dtype=object) for c in SEQUENCE_COLUMNS}), occ
    texts = SpanTexts(ledger, tokenizer)
    base = ledger.offsets[occ["doc"].to_numpy()] if n else np.zeros(0, np.int64)
    starts = occ["start"].to_numpy(np.int64)
    ends = occ["end"].to_numpy(np.int64)
    doc_arr = occ["doc"].to_numpy(np.int64)
    lp_cum = np.concatenate([[0.0], np.cumsum(ledger.logprobs.astype(np.float64))])
    lp_sum = lp_cum[base + ends] - lp_cum[base + starts]

    # one representative occurrence per (k, sequence) gives the text and the token ids
    key = ["k", "sequence_id"]
    first = occ.reset_index().groupby(key, sort=False)["index"].first()
    seq_rows: list[dict[str, Any]] = []
    seq_tokens: list[np.ndarray] = []
    text_of: dict[str, str] = {}
    for (k, sid), i in first.items():
        b, s, e = int(base[i]), int(starts[i]), int(ends[i])
        toks = ledger.token_ids[b + s : b + e]
        if sid not in text_of:
            # shown without the separating space the tokenizer folds into the first token
            text_of[sid] = texts.context_and_text(int(doc_arr[i]), s, e)[1].strip()
        seq_tokens.append(toks)
        seq_rows.append({"k": int(k), "sequence_id": sid, "length_tokens": int(e - s)})
    seqs = pd.DataFrame(seq_rows, columns=["k", "sequence_id", "length_tokens"])
    seqs["text"] = [text_of[s] for s in seqs["sequence_id"]]
    seqs["length_words"] = [count_words(t) for t in seqs["text"]]

    # counts in D from the suffix array, once per distinct token sequence
    distinct: dict[str, int] = {}
    queries: list[np.ndarray] = []
    for sid, toks in zip(seqs["sequence_id"], seq_tokens, strict=True):
        if sid not in distinct:
            distinct[sid] = len(queries)
            queries.append(toks)
    total_d, users_d = index.counts(queries) if queries else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    seqs["count_in_d"] = [int(total_d[distinct[s]]) for s in seqs["sequence_id"]]
    seqs["users_in_d"] = [int(users_d[distinct[s]]) for s in seqs["sequence_id"]]

    words = seqs.set_index(key)["length_words"]
    occ_words = words.reindex(pd.MultiIndex.from_frame(occ[key])).to_numpy() if n else np.zeros(0)
    occ["context_length"] = starts
    occ["perplexity"] = per_word_perplexity(lp_sum, occ_words)
    unique_ids = set(seqs.loc[seqs["users_in_d"] == 1, "sequence_id"])

    # contexts: the first max_contexts occurrences of each sequence, plus every occurrence the
    # public model scores
    rank_in_seq = occ.groupby(key, sort=False).cumcount().to_numpy() if n else np.zeros(0, np.int64)
    want_public = np.zeros(n, dtype=bool)
    if public_model is not None:
        want_public = (
            np.ones(n, dtype=bool)
            if public_scope == "all"
            else occ["sequence_id"].isin(unique_ids).to_numpy()
        )
    need_ctx = (rank_in_seq < max_contexts) | want_public
    ctx_text = np.full(n, None, dtype=object)
    occ_text = np.full(n, None, dtype=object)
    for i in np.nonzero(need_ctx)[0]:
        ctx_text[i], occ_text[i] = texts.context_and_text(int(doc_arr[i]), int(starts[i]), int(ends[i]))
    occ["public_perplexity"] = np.nan
    if public_model is not None and want_public.any():
        idx = np.nonzero(want_public)[0]
        pub_lp = np.empty(idx.size, dtype=np.float64)
        # a folded leave-out public scores each occurrence with the model that never saw its owner
        route = getattr(public_model, "model_for", None)
        owners = occ["user_id"].to_numpy(dtype=object)[idx]
        by_model: dict[int, tuple[Any, list[int]]] = {}
        for j, u in enumerate(owners):
            m = route(str(u)) if route is not None else public_model
            by_model.setdefault(id(m), (m, []))[1].append(j)
        for m, js in by_model.values():
            scores = m.score_text([ctx_text[idx[j]] for j in js], [occ_text[idx[j]] for j in js])
            pub_lp[js] = [sc.logprob for sc in scores]
        pp_pub = per_word_perplexity(pub_lp, occ_words[idx])
        col = occ["public_perplexity"].to_numpy(copy=True)
        col[idx] = pp_pub
        occ["public_perplexity"] = col
    with np.errstate(invalid="ignore", divide="ignore"):
        occ["perplexity_ratio"] = occ["public_perplexity"].to_numpy() / occ["perplexity"].to_numpy()

    # per-group lists with one stable sort (pandas' Python-level list aggregation is slow)
    codes = occ.groupby(key, sort=False).ngroup().to_numpy() if n else np.zeros(0, np.int64)
    order = np.argsort(codes, kind="stable")
    cuts = np.nonzero(np.diff(codes[order]))[0] + 1

    def lists(values: np.ndarray) -> list[list[Any]]:
        return [part.tolist() for part in np.split(values[order], cuts)] if n else []

    group_keys = occ[key].drop_duplicates().to_numpy() if n else np.zeros((0, 2))
    user_lists = [sorted(set(u)) for u in lists(occ["user_id"].to_numpy(dtype=object))]
    keep_ctx = rank_in_seq < max_contexts
    ctx_lists = [
        [str(c) for c, kp in zip(cs, ks_, strict=True) if kp]
        for cs, ks_ in zip(lists(ctx_text), lists(keep_ctx), strict=True)
    ]
    agg = pd.DataFrame(
        {
            "k": [int(x) for x in group_keys[:, 0]],
            "sequence_id": [str(x) for x in group_keys[:, 1]],
            "count_in_s": [len(u) for u in lists(starts)],
            "users_in_s": [len(u) for u in user_lists],
            "contexts": ctx_lists,
            "context_lengths": lists(starts),
            "perplexities": lists(occ["perplexity"].to_numpy(np.float64)),
            "public_perplexities": lists(occ["public_perplexity"].to_numpy(np.float64)),
            "user_ids": user_lists,
        }
    ).set_index(key)
    seqs = seqs.join(agg, on=key)
    seqs["mean_context_length"] = [float(np.mean(x)) for x in seqs["context_lengths"]]
    seqs["min_context_length"] = [int(np.min(x)) for x in seqs["context_lengths"]]

    # the per-sequence summaries described in the module docstring
    best = []
    for pp, pub in zip(seqs["perplexities"], seqs["public_perplexities"], strict=True):
        pp_a, pub_a = np.asarray(pp, np.float64), np.asarray(pub, np.float64)
        ratio = pub_a / pp_a
        if np.isfinite(ratio).any():
            j = int(np.nanargmax(np.where(np.isfinite(ratio), ratio, -np.inf)))
            best.append((pp_a[j], pub_a[j], ratio[j]))
        elif np.isfinite(pp_a).any():
            best.append((float(np.nanmin(pp_a)), np.nan, np.nan))
        else:
            best.append((np.nan, np.nan, np.nan))
    seqs["perplexity"] = [b[0] for b in best]
    seqs["public_perplexity"] = [b[1] for b in best]
    seqs["perplexity_ratio"] = [b[2] for b in best]
    seqs["unique"] = seqs["users_in_d"] == 1
    cols = SEQUENCE_COLUMNS
    return seqs[cols].reset_index(drop=True), occ


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


def redact_occurrences(occ: Any) -> Any:
    """Occurrences with user ids replaced by their hashes (offsets and ids of documents stay)."""
    occ = occ.copy()
    if "user_id" in occ.columns:
        occ["user_id"] = hashed([str(u) for u in occ["user_id"]])
    return occ


def hashed(values: Sequence[str]) -> list[str]:
    """Unsalted, stable hashes of identifiers for redacted outputs.

    Example:
        >>> hashed(["u1"]) == hashed(["u1"])
        True
    """
    import xxhash

    return [xxhash.xxh3_64_hexdigest(v.encode()) for v in values]
