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

Near-duplicates: the Jaccard similarity of two texts' sets of character 5-grams (of the lowercased
text with runs of whitespace as one space) is at least :data:`NEAR_DUPLICATE_JACCARD` (0.8), *and*
the two hold the same numbers and the same identifying PII values (:func:`same_secrets`). Two
texts of one template that differ in their secret — "My PIN is 4412" against "My PIN is 9051",
paper 002 A.4's members and non-members of the same format — are different texts for membership
inference, however similar their letters: only repeats up to case, punctuation, spacing and a
word or two count as duplicates.
:func:`near_duplicate_pairs` finds every such pair exactly — no MinHash sampling error — with the
prefix filter of set-similarity joins (Chaudhuri, Ganti & Kaushik 2006; Bayardo, Ma & Srikant
2007): with the 5-grams of every text sorted by a global order (rarest first), two sets with
Jaccard >= t share a 5-gram among their first ``|s| - ceil(t |s|) + 1``, so only texts that do are
compared. On the demo's synthetic dialogue lines, two lines of different people from the same
template reach 0.63 ("Please send the confirmation to <e-mail>"), lines of one person in
different templates at most 0.53: 0.8 merges neither.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from lmleak.pii.regex import RegexDetector

#: Two texts whose character-5-gram sets have at least this Jaccard similarity are near-duplicates.
NEAR_DUPLICATE_JACCARD = 0.8
#: Characters per shingle.
SHINGLE_CHARS = 5
#: PII types whose values identify a person: texts that share one are grouped together.
LINKING_ENTITIES = ("EMAIL", "PHONE", "PERSON", "ADDRESS", "SSN", "CREDIT_CARD")


def normalise(text: str) -> str:
    """Lowercase, runs of whitespace as one space, no leading or trailing space.

    Example:
        >>> normalise("  Hello\\n  World ")
        'hello world'
    """
    return " ".join(text.lower().split())


def shingles(text: str, n: int = SHINGLE_CHARS) -> frozenset[str]:
    """The set of character ``n``-grams of :func:`normalise` (text); a shorter text is its one shingle.

    Example:
        >>> sorted(shingles("Ab  cde", 5))
        ['ab cd', 'b cde']
        >>> shingles("ok", 5)
        frozenset({'ok'})
    """
    t = normalise(text)
    if len(t) <= n:
        return frozenset([t])
    return frozenset(t[i : i + n] for i in range(len(t) - n + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a ∩ b| / |a ∪ b|`` (1.0 for two empty sets).

    Example:
        >>> jaccard(frozenset("abc"), frozenset("bcd"))
        0.5
    """
    union = len(a | b)
    return 1.0 if union == 0 else len(a & b) / union


def near_duplicate_pairs(
    texts: Sequence[str], *, threshold: float = NEAR_DUPLICATE_JACCARD, n: int = SHINGLE_CHARS
) -> list[tuple[int, int]]:
    """Every pair ``(i, j)``, ``i < j``, of texts whose shingle sets have Jaccard >= ``threshold``,
    sorted; exact (prefix-filtered candidates, each verified by its Jaccard; see the module docstring).

    Example:
        >>> near_duplicate_pairs(["the parcel came late today", "the parcel came late today!", "hello"])
        [(0, 1)]
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"the Jaccard threshold must be in (0, 1], got {threshold}")
    sets = [shingles(t, n) for t in texts]
    freq = Counter(g for s in sets for g in s)
    index: dict[str, list[int]] = defaultdict(list)
    pairs: set[tuple[int, int]] = set()
    for i, s in enumerate(sets):
        ordered = sorted(s, key=lambda g: (freq[g], g))
        # a longer prefix is always safe: the 1e-9 keeps float error (0.7 * 10 = 7.000000000000001) from shortening it
        prefix = ordered[: len(ordered) - math.ceil(threshold * len(ordered) - 1e-9) + 1]
        candidates = {j for g in prefix for j in index[g]}
        for g in prefix:
            index[g].append(i)
        pairs.update((j, i) for j in candidates if jaccard(sets[j], s) >= threshold - 1e-12)
    return sorted(pairs)


def same_secrets(a: str, b: str, detector: Any = None) -> bool:
    """Whether two texts hold the same numbers (digit runs, as a multiset) and the same identifying
    PII values (:func:`pii_keys`): a condition of being near-duplicates.

    Example:
        >>> same_secrets("My PIN is 4412.", "my pin is 4412"), same_secrets("My PIN is 4412", "My PIN is 9051")
        (True, False)
    """
    return _secrets(a, detector) == _secrets(b, detector)


def _secrets(text: str, detector: Any = None) -> tuple[tuple[str, ...], frozenset[str]]:
    return tuple(sorted(re.findall(r"\d+", text))), frozenset(pii_keys(text, detector))


def near_duplicates(
    texts: Sequence[str], *, threshold: float = NEAR_DUPLICATE_JACCARD, detector: Any = None
) -> list[tuple[int, int]]:
    """The pairs of :func:`near_duplicate_pairs` whose texts also hold the same secrets
    (:func:`same_secrets`): what :func:`clean_sets` and :func:`text_clusters` call near-duplicates.

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
