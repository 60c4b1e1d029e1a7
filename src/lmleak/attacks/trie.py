"""Exact canary ranks by a pruned search over the token trie of all candidates.

The exposure of a canary (Carlini et al. 2019, "The Secret Sharer", §4; paper 002 §5.1, Def. 9)
needs its rank among *all* |R| candidate secrets of its format (10^6 six-digit numbers after
``My ID is: ``), ordered by the model's log-probability of the secret given the prefix.

Scoring every candidate from scratch costs |R| forward passes. Candidates share token prefixes,
so this module walks them as a trie: every distinct token prefix is scored once with
``model.next_logprobs`` (batched over the frontier of one depth), and all children of a node are
read from that one softmax. The cost ``-log p`` of a prefix only grows along a path, so a subtree
whose prefix already costs at least the canary's cost can hold no candidate more likely than the
canary and is pruned: the rank stays exact while the work is proportional to the number of
candidates more likely than the canary (a memorised canary ranked 1st costs ``length`` model
steps for the canary's path plus a few dozen nodes).

Definitions (the test oracle scores every full string one by one with the same rules):

- **Canonical tokenisation.** A candidate ``c`` is the text ``prefix + c``; its token sequence is
  ``tokenizer.encode(prefix + c)`` — what scoring the string does. The fixed context ``P`` is the
  longest token prefix shared by all candidates; the candidate's score is
  ``log p(encode(prefix + c)[len(P):] | BOS + P)``. With BPE a string has other tokenisations
  (``"12"+"3"`` vs ``"1"+"23"``); only the canonical one counts, as in Carlini et al.
- **Ties.** Candidates whose log-probability is within ``tie_tolerance`` nats of the canary's
  (float32 noise between batch layouts is ~1e-5) are ties — among them every candidate sharing
  the canary's token sequence, e.g. all out-of-vocabulary secrets a word model maps to ``<unk>``.
  ``rank = 1 + #{strictly more likely} + floor(#{other ties} / 2)``: ties are broken at the middle
  of their group, the expected position under a random order. (Ties favouring the canary, the
  token-rank convention of :mod:`lmleak.models.base`, would give a model that cannot tell any
  two candidates apart the maximal exposure.)

Two trie shapes, chosen by :class:`CandidateSpace`:

- ``digit_tree``: every alphabet character is exactly one token and no other token contains an
  alphabet character (word-level tokenizers with single-digit tokens, Llama/SmolLM2 digits;
  characters missing from the vocabulary may share ``<unk>``). The trie is implicit — each node
  has one child per distinct character token — and nothing is enumerated up front.
- ``explicit``: anything else (BPE merging digits, whitespace word models). All candidates are
  tokenised once (batched through the Rust tokenizer when available), sorted, and the trie is the
  grouping of equal token prefixes of that sorted matrix; it is built once per format and reused
  for every canary of that format.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from lmleak.errors import DataFileError

DIGITS = "0123456789"


@dataclass(frozen=True, slots=True)
class CanaryFormat:
    """The randomness space R of a canary: ``prefix`` followed by ``length`` characters of ``alphabet``.

    Candidates are numbered in lexicographic order (index ``i`` written in base ``len(alphabet)``).

    Example:
        >>> fmt = CanaryFormat("My ID is: ")
        >>> fmt.num_candidates, fmt.candidate(42), fmt.index("000042")
        (1000000, '000042', 42)
    """

    prefix: str
    alphabet: str = DIGITS
    length: int = 6

    def __post_init__(self) -> None:
        if self.length < 1 or len(self.alphabet) < 2 or len(set(self.alphabet)) != len(self.alphabet):
            raise ValueError("a canary format needs length >= 1 and >= 2 distinct alphabet characters")

    @property
    def num_candidates(self) -> int:
        return len(self.alphabet) ** self.length

    def candidate(self, index: int) -> str:
        base, chars = len(self.alphabet), []
        for _ in range(self.length):
            index, r = divmod(index, base)
            chars.append(self.alphabet[r])
        return "".join(reversed(chars))

    def candidates(self, indices: Sequence[int] | np.ndarray) -> list[str]:
        """Candidate strings for many indices (vectorised)."""
        idx = np.asarray(indices, dtype=np.int64)
        base = len(self.alphabet)
        digits = np.empty((len(idx), self.length), dtype=np.int64)
        rest = idx.copy()
        for j in range(self.length - 1, -1, -1):
            digits[:, j] = rest % base
            rest //= base
        if self.alphabet.isascii():
            # one vectorised view of the character codes as fixed-width byte strings (~20x a join)
            codes = np.frombuffer(self.alphabet.encode("ascii"), dtype=np.uint8)[digits]
            return (
                np.ascontiguousarray(codes).view(f"S{self.length}").ravel().astype(f"U{self.length}").tolist()
            )
        table = np.array(list(self.alphabet))
        return ["".join(row) for row in table[digits]]

    def contains(self, secret: str) -> bool:
        return len(secret) == self.length and all(ch in self.alphabet for ch in secret)

    def index(self, secret: str) -> int:
        if not self.contains(secret):
            raise ValueError(f"{secret!r} is not {self.length} characters of {self.alphabet!r}")
        out = 0
        for ch in secret:
            out = out * len(self.alphabet) + self.alphabet.index(ch)
        return out

    @classmethod
    def infer(cls, prefix: str, secret: str, alphabet: str | None = None) -> CanaryFormat:
        """The format of a canary record: digits unless an alphabet is given (a canary record may
        carry its own ``alphabet``: ``synth mail``'s hex tokens do).

        Example:
            >>> CanaryFormat.infer("My ID is: ", "123456")
            CanaryFormat(prefix='My ID is: ', alphabet='0123456789', length=6)
        """
        if alphabet is None:
            if not secret.isascii() or not secret.isdigit():
                raise ValueError(f"secret {secret!r} is not all digits; give its alphabet explicitly")
            alphabet = DIGITS
        return cls(prefix, alphabet, len(secret))


def _encode_many(tokenizer: Any, texts: list[str]) -> list[list[int]]:
    """Encode many texts: the Rust backend's batch call when the tokenizer wraps one (~10x a loop)."""
    hf = getattr(tokenizer, "hf", None)
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "encode_batch_fast"):
        return [e.ids for e in backend.encode_batch_fast(texts, add_special_tokens=False)]
    return [list(tokenizer.encode(t)) for t in texts]


def _token_pieces(tokenizer: Any) -> list[str]:
    """The text each token id decodes to on its own (used only to classify the vocabulary)."""
    n = int(tokenizer.vocab_size)
    hf = getattr(tokenizer, "hf", None)
    if hf is not None and hasattr(hf, "batch_decode"):
        return list(
            hf.batch_decode(
                [[i] for i in range(n)], skip_special_tokens=False, clean_up_tokenization_spaces=False
            )
        )
    return [tokenizer.decode([i]) for i in range(n)]


@dataclass
class CandidateSpace:
    """The candidates of one format as token sequences for one tokenizer (see module docstring).

    Build with :meth:`build`. ``kind`` is ``"digit_tree"`` or ``"explicit"``; ``context_ids`` is the
    fixed token context ``P``. For ``explicit`` spaces ``matrix`` holds every candidate's canonical
    continuation tokens, sorted lexicographically and padded with -1, and ``order[i]`` is the
    candidate index of sorted row ``i``.
    """

    fmt: CanaryFormat
    kind: Literal["digit_tree", "explicit"]
    context_ids: list[int]
    char_ids: list[int] = field(default_factory=list)  # digit_tree: token of alphabet[j]
    matrix: np.ndarray | None = None
    lengths: np.ndarray | None = None
    order: np.ndarray | None = None
    tokenizer: Any = None

    @classmethod
    def build(
        cls,
        tokenizer: Any,
        fmt: CanaryFormat,
        *,
        force: Literal["digit_tree", "explicit"] | None = None,
        sample_size: int = 256,
        seed: int = 0,
    ) -> CandidateSpace:
        """Classify the tokenizer for this format and build the candidate trie it needs.

        ``digit_tree`` is chosen only when the vocabulary proves every tokenisation of the
        continuation is one token per character — no token's text holds an alphabet character
        unless it is exactly that one character, and no character has two such tokens — and a
        seeded sample of full strings (every character at every position included) tokenises as
        ``P`` + one token per character through one consistent map. A character without a
        token of its own may map to a shared token (a word model's ``<unk>``); its candidates
        then share trie nodes. Otherwise every candidate is tokenised (``explicit``), which is
        exact for any tokenizer.
        """
        rng = np.random.default_rng(seed)
        n = fmt.num_candidates
        sample_idx = np.unique(np.concatenate([[0, n - 1], rng.integers(0, n, size=min(sample_size, n))]))
        sample = [*fmt.candidates(sample_idx), *(ch * fmt.length for ch in fmt.alphabet)]
        if force != "explicit":
            char_ids = cls._char_map(tokenizer, fmt, sample)
            if char_ids is not None:
                context, ids = char_ids
                return cls(fmt, "digit_tree", context, char_ids=ids, tokenizer=tokenizer)
            if force == "digit_tree":
                raise ValueError("this tokenizer does not split the alphabet into one token per character")
        return cls._explicit(tokenizer, fmt)

    @staticmethod
    def _char_map(tokenizer: Any, fmt: CanaryFormat, sample: list[str]) -> tuple[list[int], list[int]] | None:
        """(context, token of each alphabet character) when the digit-tree conditions hold."""
        alpha = set(fmt.alphabet)
        owners: dict[str, list[int]] = {}
        for tid, piece in enumerate(_token_pieces(tokenizer)):
            if any(ch in alpha for ch in piece):
                if len(piece) != 1:
                    return None  # a multi-character token: tokenisations are not unique
                owners.setdefault(piece, []).append(tid)
        if any(len(v) > 1 for v in owners.values()):
            return None
        seqs = _encode_many(tokenizer, [fmt.prefix + c for c in sample])
        plen = len(seqs[0]) - fmt.length
        if plen < 0:
            return None
        context = seqs[0][:plen]
        mapping: dict[str, int] = {ch: ids[0] for ch, ids in owners.items()}
        for s, c in zip(seqs, sample, strict=True):
            if len(s) != plen + fmt.length or s[:plen] != context:
                return None
            for ch, tid in zip(c, s[plen:], strict=True):
                if mapping.setdefault(ch, tid) != tid:
                    return None
        if any(ch not in mapping for ch in fmt.alphabet):
            return None
        owned = {ids[0] for ids in owners.values()}
        for ch in fmt.alphabet:  # a character without its own token must not borrow another's
            if ch not in owners and mapping[ch] in owned:
                return None
        return list(context), [mapping[ch] for ch in fmt.alphabet]

    @classmethod
    def _explicit(cls, tokenizer: Any, fmt: CanaryFormat, chunk: int = 65536) -> CandidateSpace:
        n = fmt.num_candidates
        parts: list[np.ndarray] = []
        lens: list[np.ndarray] = []
        first: list[int] | None = None
        plen = 1 << 30
        for lo in range(0, n, chunk):
            seqs = _encode_many(
                tokenizer, [fmt.prefix + c for c in fmt.candidates(np.arange(lo, min(lo + chunk, n)))]
            )
            if first is None:
                first = seqs[0]
            ln = np.fromiter((len(s) for s in seqs), dtype=np.int32, count=len(seqs))
            width = int(ln.max())
            m = np.full((len(seqs), width), -1, dtype=np.int32)
            for size in np.unique(ln):  # rows of one length convert to an array in one call
                rows = np.flatnonzero(ln == size)
                m[rows, :size] = np.array([seqs[i] for i in rows], dtype=np.int32).reshape(len(rows), size)
            # longest token prefix every row shares with the first candidate
            ref = np.full(width, -2, dtype=np.int32)
            k = min(width, len(first))
            ref[:k] = first[:k]
            same = np.logical_and.accumulate(m == ref, axis=1)
            plen = min(plen, int(same.sum(axis=1).min()))
            parts.append(m)
            lens.append(ln)
        assert first is not None
        shortest = int(min(x.min() for x in lens))
        # Subtle: keep at least one token in every continuation, so each candidate is a leaf below
        # the root and is priced by at least one softmax.
        plen = min(plen, shortest - 1)
        width = max(p.shape[1] for p in parts) - plen
        full = np.full((n, width), -1, dtype=np.int32)
        row = 0
        for p in parts:
            full[row : row + len(p), : p.shape[1] - plen] = p[:, plen:]
            row += len(p)
        lengths = np.concatenate(lens) - plen
        order = np.lexsort(full.T[::-1])
        return cls(
            fmt,
            "explicit",
            list(first[:plen]),
            matrix=full[order],
            lengths=lengths[order],
            order=order.astype(np.int64),
            tokenizer=tokenizer,
        )

    def continuation(self, secret: str) -> list[int]:
        """Canonical continuation tokens of one candidate (after ``context_ids``)."""
        if self.kind == "digit_tree":
            return [self.char_ids[self.fmt.alphabet.index(ch)] for ch in secret]
        full = _encode_many(self.tokenizer, [self.fmt.prefix + secret])[0]
        if full[: len(self.context_ids)] != self.context_ids:
            raise AssertionError("tokenisation changed between building the trie and ranking")
        return full[len(self.context_ids) :]

    def continuations(self, secrets: Sequence[str]) -> list[list[int]]:
        if self.kind == "digit_tree":
            return [self.continuation(s) for s in secrets]
        fulls = _encode_many(self.tokenizer, [self.fmt.prefix + s for s in secrets])
        return [f[len(self.context_ids) :] for f in fulls]


class SearchBudgetExceeded(RuntimeError):
    """The pruned search would score more trie nodes than its budget allows."""


@dataclass
class SearchStats:
    """Work done by one search: trie nodes scored (model rows) and candidates reached."""

    nodes_scored: int = 0
    model_calls: int = 0
    tokens_fed: int = 0


class _NodeScorer:
    """``next_logprobs`` after ``BOS + context + prefix`` for many same-length prefixes.

    The context is shared by every node, so its state is computed once and reused for every
    batch: the key/value cache for Hugging Face causal LMs, the (h, c) state for an
    embedding-LSTM-head module like :class:`lmleak.models.small.SmallLSTM`. Only the prefix tokens
    are fed and only the last position's logits are computed. Each fast path checks itself on one
    node against ``model.next_logprobs`` before it is used; any other model (the fake n-gram
    model, remote backends) goes through ``model.next_logprobs``. The oracle tests check every
    path against full-string scoring.
    """

    def __init__(self, model: Any, context: list[int], stats: SearchStats, max_rows: int) -> None:
        self.model, self.context, self.stats, self.max_rows = model, context, stats, max_rows
        self.cache: Any = None
        self.root: np.ndarray | None = None
        self.lstm_state: Any = None
        module = getattr(model, "module", None)
        if module is not None and _is_plain_lstm_lm(module) and hasattr(model, "device"):
            self._init_lstm(module, context)
        elif (
            module is not None
            and hasattr(module, "prepare_inputs_for_generation")
            and hasattr(model, "device")
        ):
            try:
                import torch

                ids = torch.tensor([[model.tokenizer.bos_id, *context]], device=model.device)
                with torch.inference_mode():
                    out = module(input_ids=ids, use_cache=True)
                self.cache = out.past_key_values
                if self.cache is None or not hasattr(self.cache, "batch_repeat_interleave"):
                    self.cache = None
                else:
                    self.root = (
                        torch.log_softmax(out.logits[0, -1].float(), -1)
                        .cpu()
                        .numpy()[None]
                        .astype(np.float64)
                    )
                    stats.tokens_fed += ids.shape[1]
                    # self-check on one node against the protocol method before trusting the cache
                    probe = np.array([[model.tokenizer.bos_id]], dtype=np.int64)
                    want = np.asarray(model.next_logprobs([[*context, int(probe[0, 0])]]), dtype=np.float64)
                    if not np.allclose(self._cached(probe), want, atol=1e-4):
                        self.cache = None
            except Exception:  # any backend quirk: fall back to the protocol method
                self.cache = None

    def _init_lstm(self, module: Any, context: list[int]) -> None:
        import torch

        try:
            ids = torch.tensor([[self.model.tokenizer.bos_id, *context]], device=self.model.device)
            with torch.inference_mode():
                h, state = module.lstm(module.embed(ids))
                root = torch.log_softmax(module.head(h[:, -1]).float(), -1)
            self.lstm_state = state
            self.root = root.cpu().numpy().astype(np.float64)
            self.stats.tokens_fed += ids.shape[1]
            probe = np.array([[self.model.tokenizer.bos_id]], dtype=np.int64)
            want = np.asarray(self.model.next_logprobs([[*context, int(probe[0, 0])]]), dtype=np.float64)
            if not np.allclose(self._lstm(probe), want, atol=1e-4):
                self.lstm_state = None
        except Exception:  # fall back to the protocol method
            self.lstm_state = None

    def _lstm(self, prefixes: np.ndarray) -> np.ndarray:
        import torch

        module, dev = self.model.module, self.model.device
        h0, c0 = self.lstm_state
        out: list[np.ndarray] = []
        with torch.inference_mode():
            for lo in range(0, len(prefixes), self.max_rows):
                chunk = torch.as_tensor(prefixes[lo : lo + self.max_rows], dtype=torch.long, device=dev)
                b = len(chunk)
                state = (h0.expand(-1, b, -1).contiguous(), c0.expand(-1, b, -1).contiguous())
                h, _ = module.lstm(module.embed(chunk), state)
                out.append(
                    torch.log_softmax(module.head(h[:, -1]).float(), -1).cpu().numpy().astype(np.float64)
                )
                self.stats.model_calls += 1
                self.stats.tokens_fed += b * chunk.shape[1]
        return np.concatenate(out)

    def __call__(self, prefixes: np.ndarray) -> np.ndarray:
        n, d = prefixes.shape
        self.stats.nodes_scored += n
        if self.lstm_state is not None:
            if d == 0:
                assert self.root is not None  # set together with the state
                return np.repeat(self.root, n, axis=0)
            return self._lstm(prefixes)
        if self.cache is not None and len(self.context) + 1 + d <= int(self.model.max_length):
            if d == 0:
                assert self.root is not None  # set together with the cache
                return np.repeat(self.root, n, axis=0)
            return self._cached(prefixes)
        rows = [[*self.context, *map(int, r)] for r in prefixes]
        out: list[np.ndarray] = []
        for lo in range(0, len(rows), self.max_rows):
            chunk = rows[lo : lo + self.max_rows]
            out.append(np.asarray(self.model.next_logprobs(chunk), dtype=np.float64))
            self.stats.model_calls += 1
            self.stats.tokens_fed += sum(len(r) + 1 for r in chunk)  # + BOS
        return np.concatenate(out) if out else np.empty((0, 0))

    def _cached(self, prefixes: np.ndarray) -> np.ndarray:
        import copy

        import torch

        module, dev = self.model.module, self.model.device
        n, d = prefixes.shape
        width = len(self.context) + 1 + d
        out: list[np.ndarray] = []
        with torch.inference_mode():
            for lo in range(0, n, self.max_rows):
                chunk = torch.as_tensor(prefixes[lo : lo + self.max_rows], dtype=torch.long, device=dev)
                cache = copy.deepcopy(self.cache)
                cache.batch_repeat_interleave(len(chunk))
                mask = torch.ones((len(chunk), width), dtype=torch.long, device=dev)
                res = module(
                    input_ids=chunk,
                    past_key_values=cache,
                    attention_mask=mask,
                    use_cache=True,
                    logits_to_keep=1,
                )
                out.append(torch.log_softmax(res.logits[:, -1].float(), -1).cpu().numpy().astype(np.float64))
                self.stats.model_calls += 1
                self.stats.tokens_fed += len(chunk) * d
        return np.concatenate(out)


def _is_plain_lstm_lm(module: Any) -> bool:
    """An embedding -> batch-first LSTM -> linear head module (lmleak's SmallLSTM and its kin)."""
    import torch

    lstm = getattr(module, "lstm", None)
    return (
        isinstance(getattr(module, "embed", None), torch.nn.Embedding)
        and isinstance(lstm, torch.nn.LSTM)
        and bool(lstm.batch_first)
        and isinstance(getattr(module, "head", None), torch.nn.Linear)
    )


def path_cost(model: Any, context: list[int], tokens: Sequence[int]) -> float:
    """``-log p(tokens | BOS + context)`` in nats, computed node by node as the search does."""
    prefixes = [[*context, *tokens[:k]] for k in range(len(tokens))]
    lp = np.asarray(model.next_logprobs(prefixes), dtype=np.float64)
    steps = lp[np.arange(len(tokens)), np.asarray(tokens, dtype=np.int64)]
    return float(np.sum(np.maximum(-steps, 0.0)))


def count_candidates(
    model: Any,
    space: CandidateSpace,
    canary_costs: Sequence[float] | np.ndarray,
    *,
    tie_tolerance: float = 1e-4,
    prune: bool = True,
    stats: SearchStats | None = None,
    max_rows: int | None = None,
    max_nodes: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """For each canary cost c: candidates strictly more likely (cost < c - tol) and tied (|cost - c| <= tol).

    One search serves all canaries of a format: it explores every node whose cost is at most the
    largest ``c + tol`` and collects the leaf costs, then counts per canary. The tie count includes
    the canary itself. With ``prune=False`` every node of the trie is scored (the "grouped"
    baseline of the benchmark).

    Raises:
        SearchBudgetExceeded: more than ``max_nodes`` nodes would be scored.
    """
    stats = stats if stats is not None else SearchStats()
    costs_in = np.asarray(canary_costs, dtype=np.float64)
    limit = float(costs_in.max()) + tie_tolerance if prune else math.inf
    vocab = int(getattr(model.tokenizer, "vocab_size", 0)) or 32768
    max_rows = max_rows or max(1, min(1024, (1 << 24) // max(vocab, 1)))
    score = _NodeScorer(model, list(space.context_ids), stats, max_rows)

    def budget(n_next: int) -> None:
        if max_nodes is not None and stats.nodes_scored + n_next > max_nodes:
            raise SearchBudgetExceeded(f"the search needs more than {max_nodes} trie nodes")

    leaf_costs: list[np.ndarray] = []
    leaf_mult: list[np.ndarray] = []
    walk = _digit_tree_leaves if space.kind == "digit_tree" else _matrix_leaves
    walk(space, score, limit, budget, leaf_costs, leaf_mult)
    return _count_around(leaf_costs, leaf_mult, costs_in, tie_tolerance)


def _digit_tree_leaves(
    space: CandidateSpace,
    score: Any,
    limit: float,
    budget: Any,
    leaf_costs: list[np.ndarray],
    leaf_mult: list[np.ndarray],
) -> None:
    """Walk a digit tree (one token per character) to depth ``length``, keeping nodes with cost
    <= ``limit``; append the leaves' costs and multiplicities."""
    # characters sharing a token (e.g. several digits -> <unk>) are one child with a multiplicity
    child_tok, child_mult = np.unique(np.asarray(space.char_ids, dtype=np.int64), return_counts=True)
    prefixes = np.zeros((1, 0), dtype=np.int64)
    costs = np.zeros(1)
    mult = np.ones(1, dtype=np.int64)
    for depth in range(space.fmt.length):
        if len(prefixes) == 0:
            break
        budget(len(prefixes))
        lp = score(prefixes)
        child = costs[:, None] + np.maximum(-lp[:, child_tok], 0.0)  # (n, distinct tokens)
        parent, which = np.nonzero(child <= limit)
        costs = child[parent, which]
        mult = mult[parent] * child_mult[which]
        prefixes = np.concatenate([prefixes[parent], child_tok[which][:, None]], axis=1)
        if depth == space.fmt.length - 1:
            leaf_costs.append(costs)
            leaf_mult.append(mult)


def _matrix_leaves(
    space: CandidateSpace,
    score: Any,
    limit: float,
    budget: Any,
    leaf_costs: list[np.ndarray],
    leaf_mult: list[np.ndarray],
) -> None:
    """Walk the trie implicit in the sorted candidate token matrix, keeping nodes with cost
    <= ``limit``; append the leaves' costs and multiplicities."""
    m, lengths = space.matrix, space.lengths
    assert m is not None and lengths is not None
    n, width = m.shape
    # Row i starts a new node at depth d+1 iff its first d+1 tokens differ from row i-1's.
    new_node = np.zeros(n, dtype=bool)
    new_node[0] = True
    lo = np.array([0], dtype=np.int64)
    hi = np.array([n], dtype=np.int64)
    costs = np.zeros(1)
    for depth in range(width):
        # leaves: candidates whose continuation ends at this depth (sorted first: pad is -1)
        ends = np.cumsum(np.concatenate([[0], lengths == depth]))
        n_end = ends[hi] - ends[lo]
        has_leaf = n_end > 0
        if has_leaf.any():
            leaf_costs.append(costs[has_leaf])
            leaf_mult.append(n_end[has_leaf].astype(np.int64))
        inner = (hi - lo - n_end) > 0
        lo, hi, costs = lo[inner] + n_end[inner], hi[inner], costs[inner]
        if len(lo) == 0:
            break
        budget(len(lo))
        lp = score(m[lo, :depth])
        col = m[:, depth]
        new_node[1:] |= col[1:] != col[:-1]
        starts = np.flatnonzero(new_node)
        # Children of node k are the node starts inside [lo_k, hi_k); nodes are disjoint and
        # sorted, so one searchsorted assigns every start to its parent.
        owner = np.searchsorted(lo, starts, side="right") - 1
        inside = (owner >= 0) & (starts < hi[np.maximum(owner, 0)])
        child_lo, parent = starts[inside], owner[inside]
        nxt = np.searchsorted(starts, child_lo, side="right")
        child_hi = np.where(nxt < len(starts), starts[np.minimum(nxt, len(starts) - 1)], n)
        child_hi = np.minimum(child_hi, hi[parent])
        tok = col[child_lo].astype(np.int64)
        child_cost = costs[parent] + np.maximum(-lp[parent, tok], 0.0)
        keep = child_cost <= limit
        lo, hi, costs = child_lo[keep], child_hi[keep], child_cost[keep]
    else:
        if len(lo):
            leaf_costs.append(costs)
            leaf_mult.append((hi - lo).astype(np.int64))


def _count_around(
    leaf_costs: list[np.ndarray],
    leaf_mult: list[np.ndarray],
    costs_in: np.ndarray,
    tie_tolerance: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per canary cost: leaves strictly cheaper (beyond the tolerance) and leaves within it."""
    all_costs = np.concatenate(leaf_costs) if leaf_costs else np.empty(0)
    all_mult = np.concatenate(leaf_mult) if leaf_mult else np.empty(0, dtype=np.int64)
    order = np.argsort(all_costs, kind="stable")
    sorted_costs, cum = all_costs[order], np.concatenate([[0], np.cumsum(all_mult[order])])
    more = cum[np.searchsorted(sorted_costs, costs_in - tie_tolerance, side="left")]
    upto = cum[np.searchsorted(sorted_costs, costs_in + tie_tolerance, side="right")]
    return more.astype(np.int64), (upto - more).astype(np.int64)


def rank_from_counts(more: int, tied: int) -> int:
    """Rank with ties broken at the middle of the tie group (``tied`` includes the canary).

    The expected position under a random order of equally likely candidates: a model that cannot
    tell any candidates apart ranks a canary in the middle (about 1 bit of exposure), not first.

    Example:
        >>> rank_from_counts(0, 1), rank_from_counts(4, 1), rank_from_counts(0, 1_000_000)
        (1, 5, 500000)
    """
    return 1 + int(more) + max(int(tied) - 1, 0) // 2


def exact_ranks(
    model: Any,
    space: CandidateSpace,
    secrets: Sequence[str],
    *,
    tie_tolerance: float = 1e-4,
    prune: bool = True,
    stats: SearchStats | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact ranks (1-based) and costs (nats) of ``secrets`` among all candidates of ``space``.

    Example:
        >>> from lmleak.models.fake import FakeLM
        >>> lm = FakeLM.from_texts(["my id is 42"] * 5 + ["my id is 13"], order=4)
        >>> space = CandidateSpace.build(lm.tokenizer, CanaryFormat("my id is ", "01234", 2))
        >>> space.kind
        'explicit'
        >>> ranks, _ = exact_ranks(lm, space, ["42", "13", "00"])  # "00": one of 23 <unk> ties
        >>> [int(r) for r in ranks]
        [1, 2, 14]
    """
    for s in secrets:
        if not space.fmt.contains(s):
            raise DataFileError(
                f"secret {s!r} is not {space.fmt.length} characters of {space.fmt.alphabet!r}",
                field="secret",
                hint="every canary of one format must have a secret of that format",
            )
    conts = space.continuations(list(secrets))
    costs = np.array([path_cost(model, space.context_ids, c) for c in conts])
    more, tied = count_candidates(model, space, costs, tie_tolerance=tie_tolerance, prune=prune, stats=stats)
    ranks = np.array([rank_from_counts(m, t) for m, t in zip(more, tied, strict=True)], dtype=np.int64)
    return ranks, costs
