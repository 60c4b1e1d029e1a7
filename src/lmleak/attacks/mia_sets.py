"""Clean membership-inference sets and the groups their texts come in (issue 26, items 1 and 2).

A membership AUC is only as good as its two sets. Three things go wrong without anyone noticing:

- **Repeats.** The same text (or the same text up to a word) counted several times on one side
  weighs that text several times in the AUC and makes its interval too narrow. Each side keeps one
  text per *near-duplicate cluster* (below); :class:`SideCounts` says how many went.
- **Texts on both sides.** A text that is both a "member" and a "non-member" cannot be told apart
  by any attack and only pulls the AUC towards 0.5; a near-duplicate across the sides does the
  same. Every near-duplicate cluster that reaches both sides is removed from both
  (``removed_overlap``).
- **Texts are not independent.** Texts of one person share names, e-mails, phrasing: a text-only
  classifier cross-validated over texts learns a person's label from one text and applies it to
  another (the blind baseline then "finds" a split bias that is not there), and a bootstrap over
  texts counts a prolific person many times. Both need *groups*: the users when the split is by
  user (``--corpus`` + ``holdout.json``), else :func:`text_clusters` — texts linked when they share
  an identifying PII value (e-mail, phone, name, address, SSN, card number; lmleak's regex
  detector) or are near-duplicates, joined transitively (connected components).

Near-duplicates: the Jaccard similarity of two texts' sets of 5-grams (5-byte windows of the UTF-8
of the lowercased text with runs of whitespace as one space: its character 5-grams for ASCII) is at
least :data:`NEAR_DUPLICATE_JACCARD` (0.8), *and* the two hold the same numbers and the same
identifying PII values (:func:`pii_keys`). Two texts of one template that differ in their
secret — "My PIN is 4412" against "My PIN is 9051", paper 002 A.4's members and non-members of the
same format — are different texts for membership inference, however similar their letters: only
repeats up to case, punctuation, spacing and a word or two count as duplicates.

:func:`near_duplicate_pairs` finds the pairs with the prefix filter of set-similarity joins
(Chaudhuri, Ganti & Kaushik 2006; Bayardo, Ma & Srikant 2007): with the 5-grams of every text sorted
by one global order (rarest first), two sets with Jaccard >= t share a 5-gram among their first
``|s| - ceil(t |s|) + 1``, so only texts that do are compared — one sparse product, the 5-grams
packed into 40-bit integers. A MinHash estimate then spares counting the intersections of pairs far
below t (it drops a pair at or above t with probability below 1e-8), and every pair kept is verified
by its exact Jaccard; the tests compare the result with every pair's Jaccard computed directly.
1,250 synthetic 200-word dialogues take about 4 s on a busy 2-core machine (33 s without the MinHash
filter, 75 s with the pure-Python join it replaced). On the demo's synthetic dialogue lines, two
lines of different people from the same template reach 0.63 ("Please send the confirmation to
<e-mail>"), lines of one person in different templates at most 0.53: 0.8 merges neither.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from lmleak.pii.regex import RegexDetector

#: Two texts whose 5-gram sets have at least this Jaccard similarity are near-duplicates.
NEAR_DUPLICATE_JACCARD = 0.8
#: Bytes (characters, for ASCII text) per shingle.
SHINGLE_CHARS = 5
#: PII types whose values identify a person: texts that share one are grouped together.
LINKING_ENTITIES = ("EMAIL", "PHONE", "PERSON", "ADDRESS", "SSN", "CREDIT_CARD")
#: Rows of the candidate search per block (bounds the memory of the sparse product).
_BLOCK = 2048


def normalise(text: str) -> str:
    """Lowercase, runs of whitespace as one space, no leading or trailing space.

    Example:
        >>> normalise("  Hello\\n  World ")
        'hello world'
    """
    return " ".join(text.lower().split())


def shingle_codes(text: str) -> np.ndarray:
    """The 5-byte windows of the UTF-8 of :func:`normalise` (text) — its character 5-grams when the
    text is ASCII; a shorter text is its one shingle — as sorted unique integers: a 5-byte window
    packed into 40 bits (no hashing, so no collisions); a text of k < 5 bytes is its bytes plus
    ``(k + 1) << 40``. The tests hold the set-of-bytes oracle.

    Example:
        >>> shingle_codes("Ab  cdef").tolist() == sorted(int.from_bytes(g, "little") for g in (b"ab cd", b"b cde", b" cdef"))
        True
    """
    b = np.frombuffer(normalise(text).encode("utf-8"), dtype=np.uint8).astype(np.uint64)
    n = SHINGLE_CHARS
    if len(b) <= n:
        return np.array(
            [int.from_bytes(bytes(b.astype(np.uint8)), "little") | ((len(b) + 1) << 40)], dtype=np.uint64
        )
    code = np.zeros(len(b) - n + 1, dtype=np.uint64)
    for k in range(n):
        code |= b[k : len(b) - n + 1 + k] << np.uint64(8 * k)
    return np.unique(code)


# long: 22 of its lines are the docstring (the join and its filters); the code is 40
def near_duplicate_pairs(
    texts: Sequence[str], *, threshold: float = NEAR_DUPLICATE_JACCARD
) -> list[tuple[int, int]]:
    """Every pair ``(i, j)``, ``i < j``, of texts whose shingle sets have Jaccard >= ``threshold``,
    sorted (see the module docstring).

    Sparse and vectorised: the shingles of all texts are ranked by (frequency, code), rarest first;
    ``P`` marks each text's prefix of ``|s| - ceil(t |s|) + 1`` rarest shingles. The candidates are
    the non-zeros of ``P Pᵀ`` (a shared prefix shingle), kept when their sizes allow a Jaccard of
    ``t`` (``t |a| <= |b| <= |a| / t``) and their MinHash estimate (64 hashes) is within six
    standard errors of ``t``, then verified by counting ``|a ∩ b|``. The prefix and size filters are
    exact; the MinHash filter drops a pair at Jaccard ``>= t`` with probability below 1e-8 (a
    binomial tail six standard deviations out) — on templated text, where most pairs share a
    prefix shingle, it spares counting the intersections of pairs near 0.5.

    Example:
        >>> near_duplicate_pairs(["the parcel came late today", "the parcel came late today!", "hello"])
        [(0, 1)]
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"the Jaccard threshold must be in (0, 1], got {threshold}")
    from scipy import sparse  # scipy is a core dependency; imported here to keep import light

    n = len(texts)
    if n < 2:
        return []
    codes = [shingle_codes(t) for t in texts]
    sizes = np.array([len(c) for c in codes], dtype=np.int64)
    uniq, inverse, counts = np.unique(np.concatenate(codes), return_inverse=True, return_counts=True)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.lexsort((uniq, counts))] = np.arange(len(uniq))  # rarest first, ties by code: one global order
    col = rank[inverse.ravel()]
    row = np.repeat(np.arange(n), sizes)
    order = np.lexsort((col, row))
    row, col = row[order], col[order]
    position = np.arange(len(col)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    # a longer prefix is always safe: the 1e-9 keeps float error (0.7 * 10 = 7.000000000000001) from shortening it
    prefix_len = sizes - np.ceil(threshold * sizes - 1e-9).astype(np.int64) + 1
    in_prefix = position < np.repeat(prefix_len, sizes)
    shape = (n, len(uniq))
    P = sparse.csr_matrix(
        (np.ones(int(in_prefix.sum()), dtype=np.float32), (row[in_prefix], col[in_prefix])), shape=shape
    )
    # every (text, shingle) as one sorted key text * V + rank: |a ∩ b| is how many of b's keys,
    # moved to row a, are found among a's (searchsorted over the one sorted array)
    keys = row * len(uniq) + col
    sig = _minhash(np.concatenate(codes), np.cumsum(sizes) - sizes)
    floor = threshold - 6.0 * np.sqrt(threshold * (1.0 - threshold) / sig.shape[1]) - 1.0 / sig.shape[1]
    out: list[tuple[int, int]] = []
    for a in range(0, n, _BLOCK):
        cand = (P[a : a + _BLOCK] @ P.T).tocoo()
        i, j = cand.row.astype(np.int64) + a, cand.col.astype(np.int64)
        keep = (j > i) & (threshold * sizes[i] <= sizes[j] + 1e-9) & (threshold * sizes[j] <= sizes[i] + 1e-9)
        i, j = i[keep], j[keep]
        likely = np.concatenate(
            [
                (sig[i[c : c + 65536]] == sig[j[c : c + 65536]]).mean(axis=1) >= floor
                for c in range(0, len(i), 65536)
            ]
            or [np.zeros(0, dtype=bool)]
        )
        out.extend(_verified(i[likely], j[likely], sizes, col, keys, threshold))
    return sorted(out)


def _verified(
    i: np.ndarray, j: np.ndarray, sizes: np.ndarray, col: np.ndarray, keys: np.ndarray, threshold: float
) -> list[tuple[int, int]]:
    """The candidate pairs whose exact Jaccard is at least ``threshold``. ``col`` holds every text's
    shingle ranks (texts in order, ranks sorted), ``keys`` the same as ``text * V + rank``: |a ∩ b|
    is how many of b's ranks, as keys of row a, are found among a's (one searchsorted)."""
    num_ranks = int(col.max()) + 1
    starts = np.cumsum(sizes) - sizes
    out: list[tuple[int, int]] = []
    for ci, cj in _chunks(i, j, sizes, limit=1 << 22):
        lengths = sizes[cj]
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        query = np.repeat(ci, lengths) * num_ranks + col[np.repeat(starts[cj], lengths) + offsets]
        at = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
        inter = np.add.reduceat((keys[at] == query).astype(np.int64), np.cumsum(lengths) - lengths)
        ok = inter >= (threshold - 1e-12) * (sizes[ci] + sizes[cj] - inter)
        out.extend(zip(ci[ok].tolist(), cj[ok].tolist(), strict=True))
    return out


#: MinHash signatures per text (the verification's pre-filter).
_HASHES = 64


def _minhash(codes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each text's MinHash signature (``_HASHES`` seeded multiply-add hashes mod 2^64, the minimum
    over its shingles): two signatures agree in a position with probability their Jaccard."""
    rng = np.random.default_rng(20240626)  # fixed: the same pairs on every run
    mult = rng.integers(1, 2**63, size=_HASHES, dtype=np.uint64) | np.uint64(1)
    add = rng.integers(0, 2**63, size=_HASHES, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return np.stack(
            [np.minimum.reduceat(codes * m + b, starts) for m, b in zip(mult, add, strict=True)], axis=1
        )


def _chunks(
    i: np.ndarray, j: np.ndarray, sizes: np.ndarray, *, limit: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Candidate pairs cut so that each piece gathers at most about ``limit`` shingles."""
    if len(i) == 0:
        return []
    total = np.cumsum(sizes[j])
    cuts = np.searchsorted(total, np.arange(limit, int(total[-1]), limit))
    bounds = [0, *sorted(set(cuts.tolist()) - {0}), len(i)]
    return [(i[x:y], j[x:y]) for x, y in zip(bounds, bounds[1:], strict=False) if y > x]


def _secrets(text: str, detector: Any = None) -> tuple[tuple[str, ...], frozenset[str]]:
    return tuple(sorted(re.findall(r"\d+", text))), frozenset(pii_keys(text, detector))


def near_duplicates(
    texts: Sequence[str], *, threshold: float = NEAR_DUPLICATE_JACCARD, detector: Any = None
) -> list[tuple[int, int]]:
    """The pairs of :func:`near_duplicate_pairs` whose texts also hold the same secrets (the same
    numbers, as a multiset of digit runs, and the same identifying PII values, :func:`pii_keys`):
    what :func:`clean_sets` and :func:`text_clusters` call near-duplicates.

    Example:
        >>> near_duplicates(["Order 4412 came late today.", "order 4412 came late today", "Order 9051 came late today."])
        [(0, 1)]
    """
    pairs = near_duplicate_pairs(texts, threshold=threshold)
    secrets: dict[int, Any] = {}
    for i in {i for p in pairs for i in p}:
        secrets[i] = _secrets(texts[i], detector)
    return [(i, j) for i, j in pairs if secrets[i] == secrets[j]]


def components(num: int, pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """Connected components of the graph on ``0..num-1`` with edges ``pairs``, each labelled by its
    smallest member (so labels do not depend on the edges' order).

    Example:
        >>> components(5, [(3, 1), (4, 3)]).tolist()
        [0, 1, 2, 1, 1]
    """
    parent = list(range(num))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(i) for i in range(num)], dtype=np.int64)


def pii_keys(text: str, detector: Any = None) -> set[str]:
    """The identifying PII values of a text (:data:`LINKING_ENTITIES`), normalised: e-mails, names
    and addresses lowercased, phone, SSN and card numbers as their digits (a phone's last 10; a
    phone number without its area code links nothing).

    Example:
        >>> sorted(pii_keys("Hi, this is Ada Lovelace: (201) 555-0142, Ada.L@example.org"))
        ['EMAIL:ada.l@example.org', 'PERSON:ada lovelace', 'PHONE:2015550142']
    """
    det = detector or _DETECTOR
    out = set()
    for s in det.detect(text):
        if s.entity not in LINKING_ENTITIES:
            continue
        value = text[s.start : s.end]
        if s.entity in ("PHONE", "SSN", "CREDIT_CARD"):
            digits = re.sub(r"\D", "", value)
            if s.entity == "PHONE" and len(digits) < 10:
                continue  # "555-0142" without its area code: shared by many people
            value = digits[-10:] if s.entity == "PHONE" else digits
        else:
            value = normalise(value)
        if value:
            out.add(f"{s.entity}:{value}")
    return out


_DETECTOR = RegexDetector(entities=LINKING_ENTITIES)


@dataclass(frozen=True, slots=True)
class Clusters:
    """Texts grouped by shared PII values and near-duplication (:func:`text_clusters`).

    ``ids[i]`` is the cluster of text ``i`` (its smallest index). ``ignored_values``: PII values
    found on both sides of a split, which link nothing (a value shared by members and non-members
    — a support address, a shop's phone — is no person's identity in a split by person).
    """

    ids: np.ndarray
    num_clusters: int
    largest: int
    linked_by_pii: int  # texts in a cluster with another text through a shared PII value
    ignored_values: int = 0


def text_clusters(
    texts: Sequence[str],
    *,
    labels: Sequence[int] | None = None,
    threshold: float = NEAR_DUPLICATE_JACCARD,
    detector: Any = None,
) -> Clusters:
    """Group texts that share an identifying PII value (:func:`pii_keys`) or are near-duplicates
    (:func:`near_duplicates`), transitively. With ``labels`` (member 1 / non-member 0) a PII
    value found under both labels links nothing (see :class:`Clusters`).

    Example:
        >>> c = text_clusters(["mail ada@example.org", "ada@example.org again", "bob here", "bob here!"])
        >>> c.ids.tolist(), c.num_clusters, c.largest
        ([0, 0, 2, 2], 2, 2)
    """
    keys = [pii_keys(t, detector) for t in texts]
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, ks in enumerate(keys):
        for k in ks:
            by_key[k].append(i)
    ignored = 0
    pii_pairs: list[tuple[int, int]] = []
    for items in by_key.values():
        if labels is not None and len({int(labels[i]) for i in items}) > 1:
            ignored += 1
            continue
        pii_pairs.extend((items[0], j) for j in items[1:])
    ids = components(
        len(texts), [*pii_pairs, *near_duplicates(texts, threshold=threshold, detector=detector)]
    )
    sizes = Counter(ids.tolist())
    linked = len({i for p in pii_pairs for i in p})
    return Clusters(ids, len(sizes), max(sizes.values(), default=0), linked, ignored)


@dataclass(slots=True)
class SideCounts:
    """What happened to one side's texts: ``rows`` given, ``distinct`` after exact de-duplication
    (whitespace runs as one space), ``near_duplicates`` dropped as near-duplicates of a text kept
    on the same side, ``removed_overlap`` dropped because a near-duplicate (or the text itself) is
    on the other side, ``kept`` = distinct − near_duplicates − removed_overlap. The evaluation may
    use fewer (``used``: balancing, ReCaLL's prefix) and groups them (``groups``)."""

    rows: int
    distinct: int
    near_duplicates: int
    removed_overlap: int
    kept: int
    used: int | None = None
    groups: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CleanSets:
    """Members and non-members after :func:`clean_sets`, with their users (when given) and counts."""

    members: list[str]
    non_members: list[str]
    member_users: list[str] | None
    non_member_users: list[str] | None
    counts: dict[str, SideCounts] = field(default_factory=dict)
    threshold: float = NEAR_DUPLICATE_JACCARD


def _exact_distinct(texts: Sequence[str], users: Sequence[str] | None) -> tuple[list[str], list[str] | None]:
    seen: set[str] = set()
    out: list[str] = []
    out_users: list[str] | None = [] if users is not None else None
    for i, t in enumerate(texts):
        key = " ".join(t.split())
        if key in seen:
            continue
        seen.add(key)
        out.append(t)
        if out_users is not None and users is not None:
            out_users.append(str(users[i]))
    return out, out_users


def clean_sets(
    members: Sequence[str],
    non_members: Sequence[str],
    *,
    users: tuple[Sequence[str], Sequence[str]] | None = None,
    threshold: float = NEAR_DUPLICATE_JACCARD,
) -> CleanSets:
    """De-duplicate each side (exact, then near-duplicates: one text kept per cluster, the first
    given) and remove every cluster that reaches both sides (see the module docstring).

    Example:
        >>> c = clean_sets(["a long member text", "a long member text", "shared words here"],
        ...                ["shared words here", "a non-member sentence"])
        >>> c.members, c.non_members
        (['a long member text'], ['a non-member sentence'])
        >>> c.counts["members"].to_dict()
        {'rows': 3, 'distinct': 2, 'near_duplicates': 0, 'removed_overlap': 1, 'kept': 1, 'used': None, 'groups': None}
    """
    mem, mem_users = _exact_distinct(members, users[0] if users else None)
    non, non_users = _exact_distinct(non_members, users[1] if users else None)
    side = np.r_[np.ones(len(mem), dtype=np.int64), np.zeros(len(non), dtype=np.int64)]
    ids = components(len(side), near_duplicates([*mem, *non], threshold=threshold))
    both = {c for c in np.unique(ids) if len(set(side[ids == c].tolist())) == 2}
    first_of: dict[int, int] = {}
    keep = np.zeros(len(side), dtype=bool)
    for i, c in enumerate(ids.tolist()):
        if c not in both and c not in first_of:
            first_of[c] = i
            keep[i] = True
    overlap = np.isin(ids, list(both))
    counts = {}
    for name, s, rows in (("members", 1, len(members)), ("non_members", 0, len(non_members))):
        on = side == s
        distinct, removed, kept = int(on.sum()), int((overlap & on).sum()), int((keep & on).sum())
        counts[name] = SideCounts(rows, distinct, distinct - removed - kept, removed, kept)
    km, kn = keep[: len(mem)], keep[len(mem) :]
    return CleanSets(
        [t for t, k in zip(mem, km, strict=True) if k],
        [t for t, k in zip(non, kn, strict=True) if k],
        None if mem_users is None else [u for u, k in zip(mem_users, km, strict=True) if k],
        None if non_users is None else [u for u, k in zip(non_users, kn, strict=True) if k],
        counts,
        threshold,
    )
