"""Precision, recall and γ = 1 − recall of a policy against a ``secrets.jsonl`` ground truth.

Paper 002 (Proposition 6, Theorem 8) states confidentiality in terms of the policy's false
negative rate γ on the secret distribution; this module measures it per entity type.

Span matching (overlap-based, label-agnostic):
    - a ground-truth secret is *recalled* when the union of the predicted spans (of any entity)
      covers at least ``min_overlap`` of its characters (default 0.5); ``recall_full`` also
      reports the strict version (every character covered), which is what a redaction needs to
      hide the whole value;
    - a predicted span is a *true positive* when at least ``min_overlap`` of its characters lie
      inside ground-truth secrets (of any entity).
    Labels are ignored because redaction masks a span whatever its label: Presidio calling part
    of an address LOCATION still hides it. Recall is reported per ground-truth entity, precision
    per predicted entity, and both micro-averaged over all spans (row ``ALL``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Corpus
from lmleak.data.loaders import load_corpus
from lmleak.errors import DataFileError
from lmleak.jsonl import iter_jsonl
from lmleak.pii.policies import get_policy
from lmleak.pii.spans import Detector, PiiSpan, detect_many, merge_spans
from lmleak.runs import atomic_write_json

SECRET_FIELDS = ("doc_id", "user_id", "start", "end", "entity", "value")


@dataclass(frozen=True)
class Secret:
    """One ground-truth PII span of a document."""

    doc_id: str
    user_id: str
    start: int
    end: int
    entity: str
    value: str


def load_secrets(path: str | Path, corpus: Corpus | None = None) -> list[Secret]:
    """Read ``secrets.jsonl``; with ``corpus``, check each span's text equals its ``value``.

    Raises:
        DataFileError: bad JSON, a missing field, an unknown doc_id or a span that does not match.
    """
    path = Path(path)
    out = []
    for n, row in iter_jsonl(path, hint="pass the secrets.jsonl that `lmleak synth` wrote"):
        missing = [k for k in SECRET_FIELDS if k not in row]
        if missing:
            raise DataFileError(f"missing {', '.join(missing)}", path=path, line=n, field=missing[0])
        s = Secret(str(row["doc_id"]), str(row["user_id"]), int(row["start"]), int(row["end"]),
                   str(row["entity"]), str(row["value"]))  # fmt: skip
        if corpus is not None:
            try:
                text = corpus.get(s.doc_id).text
            except KeyError:
                raise DataFileError(f"doc_id {s.doc_id!r} is not in the corpus", path=path, line=n,
                                    field="doc_id", hint="use the secrets file written with this corpus") from None  # fmt: skip
            if text[s.start : s.end] != s.value:
                raise DataFileError(f"span [{s.start}, {s.end}) reads {text[s.start:s.end]!r}, not {s.value!r}",
                                    path=path, line=n, field="start")  # fmt: skip
        out.append(s)
    return out


def _covered(intervals: list[tuple[int, int]], start: int, end: int) -> int:
    return sum(max(0, min(b, end) - max(a, start)) for a, b in intervals)


@dataclass
class _Row:
    support: int = 0
    recalled: int = 0
    recalled_full: int = 0
    sentence_caught: int = 0
    predicted: int = 0
    true_positive: int = 0

    def to_dict(self) -> dict[str, Any]:
        recall = self.recalled / self.support if self.support else None
        return {
            "support": self.support,
            "recall": recall,
            "recall_full": self.recalled_full / self.support if self.support else None,
            "gamma": None if recall is None else 1.0 - recall,
            "sentence_recall": self.sentence_caught / self.support if self.support else None,
            "predicted": self.predicted,
            "precision": self.true_positive / self.predicted if self.predicted else None,
        }


def score_spans(
    gold: Mapping[str, Sequence[tuple[int, int, str]]],
    predicted: Mapping[str, Sequence[PiiSpan]],
    *,
    min_overlap: float = 0.5,
    sentences: Mapping[str, Sequence[tuple[int, int]]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per-entity table from gold ``(start, end, entity)`` and predicted spans, keyed by doc.

    With ``sentences`` (sentence spans per doc), ``sentence_recall`` is the fraction of secrets
    whose sentence holds any detection — the recall that matters for π_c, which sends a whole
    sentence to D_pri (paper 002, Algorithm 1 line 3); without it every doc is one sentence.

    Example:
        >>> t = score_spans({"d": [(0, 4, "PHONE"), (10, 14, "PERSON")]},
        ...                 {"d": [PiiSpan(0, 4, "PHONE"), PiiSpan(20, 22, "DATE")]})
        >>> t["PHONE"]["recall"], t["PERSON"]["gamma"], t["DATE"]["precision"], t["ALL"]["precision"]
        (1.0, 1.0, 0.0, 0.5)
    """
    rows: dict[str, _Row] = defaultdict(_Row)
    total = rows["ALL"]
    for doc_id in set(gold) | set(predicted):
        g = [(a, b, e) for a, b, e in gold.get(doc_id, ())]
        p = list(predicted.get(doc_id, ()))
        pred_union = merge_spans(p)
        gold_union = merge_spans(PiiSpan(a, b, e) for a, b, e in g)
        sents = sentences.get(doc_id, ()) if sentences is not None else ()
        for a, b, e in g:
            cov = _covered(pred_union, a, b)
            around = [(x, y) for x, y in sents if x < b and a < y] or [(0, 1 << 62)]
            flagged = any(_covered(pred_union, x, y) > 0 for x, y in around)
            for row in (rows[e], total):
                row.support += 1
                row.recalled += cov >= min_overlap * (b - a)
                row.recalled_full += cov >= b - a
                row.sentence_caught += flagged
        for s in p:
            tp = _covered(gold_union, s.start, s.end) >= min_overlap * (s.end - s.start)
            for row in (rows[s.entity], total):
                row.predicted += 1
                row.true_positive += tp
    order = sorted(k for k in rows if k != "ALL") + ["ALL"]
    return {k: rows[k].to_dict() for k in order}


def evaluate_policy(
    corpus: Corpus,
    secrets: Sequence[Secret],
    policy: Detector,
    *,
    min_overlap: float = 0.5,
    splitter: Callable[[str], list[tuple[int, int]]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run ``policy`` on every document of ``corpus`` and score it against ``secrets``.

    ``splitter`` gives sentence spans for ``sentence_recall`` (the CLI passes
    :func:`lmleak.train.sentences.sentence_spans`; pii does not import train).
    """
    gold: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for s in secrets:
        gold[s.doc_id].append((s.start, s.end, s.entity))
    found = detect_many(policy, corpus.texts())
    predicted = {d.doc_id: spans for d, spans in zip(corpus, found, strict=True)}
    sentences = None if splitter is None else {d.doc_id: splitter(d.text) for d in corpus}
    return score_spans(gold, predicted, min_overlap=min_overlap, sentences=sentences)


@dataclass(frozen=True, slots=True)
class PolicyEvaluation:
    """What ``lmleak pii evaluate`` reports: a policy's scores per entity on one corpus."""

    policy: str
    recall_target: float | None
    seed: int
    min_overlap: float
    documents: int
    entities: dict[str, dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (and ``--save`` file): ``policy, recall_target, seed, min_overlap, documents,
        entities``."""
        return {"policy": self.policy, "recall_target": self.recall_target, "seed": self.seed,
                "min_overlap": self.min_overlap, "documents": self.documents, "entities": self.entities}  # fmt: skip


def evaluate_policy_files(
    corpus: str | Path,
    secrets: str | Path,
    policy: str,
    *,
    recall: float | None = None,
    seed: int = 0,
    base_recall: float = 1.0,
    min_overlap: float = 0.5,
    splitter: Callable[[str], list[tuple[int, int]]] | None = None,
    save: str | Path | None = None,
) -> PolicyEvaluation:
    """Load ``corpus`` and its ``secrets.jsonl``, build the named policy (degraded to ``recall`` if
    given, see :func:`~lmleak.pii.policies.get_policy`) and score it (:func:`evaluate_policy`);
    with ``save``, also write the result as JSON there.

    Raises:
        ConfigError: an unknown policy name (raised after the corpus and secrets are read).
    """
    docs = load_corpus(corpus)
    gold = load_secrets(secrets, docs)
    pol = get_policy(policy, recall=recall, seed=seed, base_recall=base_recall)
    table = evaluate_policy(docs, gold, pol, min_overlap=min_overlap, splitter=splitter)
    result = PolicyEvaluation(getattr(pol, "name", policy), recall, seed, min_overlap, len(docs), table)
    if save is not None:
        atomic_write_json(save, result.to_dict())
    return result
