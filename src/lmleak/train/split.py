"""CRT pre-processing and the public/private split (paper 002, Algorithm 1 lines 1-4).

``crt_split`` runs the steps in the paper's order:

1. sentence splitting (appendix A.5 rules 2-3: data points are whole sentences, split first);
2. ``Dedup`` — repeats of a sentence become ``<MASK>`` (exact SHA-1 or one-pass Bloom);
3. ``Redact_π`` — every span π detects becomes the same ``<MASK>`` (rule 4);
4. D_pri = sentences of D'' with a π or π_c detection, or any ``<MASK>`` (rule 5);
   D_pub = the rest.

What is trained on: both halves come from D'' — the *redacted* corpus. Algorithm 1 defines
D_pri ⊂ D'' and runs DP-SGD on it, so private sentences are kept redacted (their ``<MASK>``
tokens stay in the training text); nothing unredacted is ever returned. A π detection always
leaves a ``<MASK>`` in the sentence, so "π detected something" and "contains ``<MASK>``" coincide,
except that a sentence which already contained the literal token goes to D_pri too (safe side).
π_c is applied to the redacted sentence (line 3 reads s ∈ D'').
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from lmleak.data.corpus import Corpus
from lmleak.errors import ConfigError
from lmleak.pii.policies import get_policy
from lmleak.pii.spans import MASK, Detector, detect_many
from lmleak.train.dedup import dedup_corpus
from lmleak.train.redact import redact_corpus
from lmleak.train.sentences import sentence_corpus


@dataclass
class SplitResult:
    """D_pub and D_pri (sentence documents ``<orig>#s<i>``, redacted) and what happened.

    ``stats`` holds ``sentences``, ``public``, ``private``, ``private_reasons``
    (``dedup``, ``redaction``, ``conservative``), ``dedup`` and ``redaction`` (removed per
    entity) and ``conservative`` (π_c hits per entity). ``redacted`` is D'' in corpus order.
    """

    public: Corpus
    private: Corpus
    stats: dict[str, Any]
    redacted: Corpus | None = None


def _resolve(policy: Detector | str | None) -> Detector | None:
    if policy is None or not isinstance(policy, str):
        return policy

    return get_policy(policy)


def split_public_private(
    redacted: Corpus, *, conservative: Detector | str | None = None, mask: str = MASK
) -> tuple[Corpus, Corpus, dict[str, Any]]:
    """Algorithm 1 lines 3-4 on an already deduplicated and redacted sentence corpus.

    Example:
        >>> from lmleak.data.corpus import Document
        >>> c = Corpus([Document("u", "d#s0", "Hello there."), Document("u", "d#s1", "Call <MASK> now."),
        ...             Document("u", "d#s2", "I met Alice.")])
        >>> pub, pri, st = split_public_private(c, conservative="conservative")
        >>> [d.doc_id for d in pub], [d.doc_id for d in pri], st["private_reasons"]
        (['d#s0'], ['d#s1', 'd#s2'], {'masked': 1, 'conservative': 1})
    """
    pi_c = _resolve(conservative)
    docs = list(redacted)
    hits: list[list[Any]] = [[] for _ in docs]
    if pi_c is not None:
        todo = [i for i, d in enumerate(docs) if mask not in d.text]
        for i, spans in zip(todo, detect_many(pi_c, [docs[i].text for i in todo]), strict=True):
            hits[i] = spans
    public, private = [], []
    reasons: Counter[str] = Counter()
    cons_entities: Counter[str] = Counter()
    for d, h in zip(docs, hits, strict=True):
        if mask in d.text:
            reasons["masked"] += 1
            private.append(d)
        elif h:
            reasons["conservative"] += 1
            cons_entities.update(s.entity for s in h)
            private.append(d)
        else:
            public.append(d)
    stats = {
        "sentences": len(docs),
        "public": len(public),
        "private": len(private),
        "private_fraction": len(private) / len(docs) if docs else 0.0,
        "private_reasons": dict(reasons),
        # a sentence that is nothing but the mask is a repeat Dedup masked (or a sentence π took whole)
        "mask_only": sum(d.text.strip() == mask for d in private),
        "public_words": sum(len(d.text.split()) for d in public),
        "private_words": sum(len(d.text.split()) for d in private),
        "conservative_policy": None if pi_c is None else getattr(pi_c, "name", type(pi_c).__name__),
        "conservative": dict(sorted(cons_entities.items())),
    }
    return Corpus(public, source=redacted.source), Corpus(private, source=redacted.source), stats


def crt_split(
    corpus: Corpus,
    policy: Detector | str,
    conservative: Detector | str | None = None,
    dedup: str | None = "exact",
    *,
    bloom_fp_rate: float = 1e-6,
    mask: str = MASK,
) -> SplitResult:
    """Sentence split → Dedup → Redact_π → (D_pub, D_pri), as Algorithm 1 of paper 002.

    Args:
        corpus: documents (or sentences already split, ids ``<orig>#s<i>``).
        policy: π, a detector or a policy name (:func:`lmleak.pii.policies.get_policy`).
        conservative: π_c (detector or name), or ``None`` for none.
        dedup: ``"exact"``, ``"bloom"`` or ``None`` (skip dedup; not the paper's algorithm).
        bloom_fp_rate: configured false-positive rate of the Bloom filter.
        mask: the single mask token.

    Example:
        >>> from lmleak.data.corpus import Document
        >>> c = Corpus([Document("u1", "a", "Hi. My order is ORD-12345678."),
        ...             Document("u2", "b", "Hi. Nice weather.")])
        >>> r = crt_split(c, "regex")
        >>> [(d.doc_id, d.text) for d in r.public]
        [('a#s0', 'Hi.'), ('b#s1', 'Nice weather.')]
        >>> [(d.doc_id, d.text) for d in r.private]
        [('a#s1', 'My order is <MASK>.'), ('b#s0', '<MASK>')]
    """
    pi = _resolve(policy)
    if pi is None:
        raise ConfigError("crt_split needs a redaction policy π", field="policy")
    sentences = sentence_corpus(corpus)
    stats: dict[str, Any] = {"documents": len(corpus), "policy": getattr(pi, "name", type(pi).__name__)}
    if dedup is not None:
        sentences, dstats = dedup_corpus(sentences, mode=dedup, fp_rate=bloom_fp_rate, mask=mask)
        stats["dedup"] = dstats.to_dict()
    else:
        stats["dedup"] = None
    redacted, rstats = redact_corpus(sentences, pi, mask=mask)
    stats["redaction"] = rstats.to_dict()
    public, private, sstats = split_public_private(redacted, conservative=conservative, mask=mask)
    stats.update(sstats)
    return SplitResult(public, private, stats, redacted)
