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

By name shape (issue 28): ``secrets.jsonl`` rows carry the ``name_shape`` of the person whose PII
each span is (:data:`lmleak.data.names.NAME_SHAPES`; a file without it gets a PERSON span's shape
from its value). :func:`score_by_shape` gives the same recall-side columns per shape — a policy
that finds ``Ann Lee`` but not ``佐藤 陽子`` protects people unequally, and the pooled row hides
it — with an exact (Clopper-Pearson) 95 % interval of each γ; precision has no shape (a predicted
span names nobody) and is left out there. :func:`shape_gaps` names the shapes whose PERSON recall
trails the best shape's by more than :data:`SHAPE_GAP`; :func:`gamma_by_shape` is what training
records beside the pooled γ.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Corpus
from lmleak.data.loaders import load_corpus
from lmleak.data.names import NAME_SHAPES, name_shape
from lmleak.errors import ConfigError, DataFileError
from lmleak.intervals import clopper_pearson_interval
from lmleak.jsonl import iter_jsonl
from lmleak.pii.policies import PolicyChoice
from lmleak.pii.spans import Detector, PiiSpan, detect_many, merge_spans
from lmleak.runs import atomic_write_json

SECRET_FIELDS = ("doc_id", "user_id", "start", "end", "entity", "value")
#: Recall on names in one shape this far (or more) below the best shape's is reported as a gap.
SHAPE_GAP = 0.05


@dataclass(frozen=True)
class Secret:
    """One ground-truth PII span of a document (``name_shape``: whose name shape, when recorded)."""

    doc_id: str
    user_id: str
    start: int
    end: int
    entity: str
    value: str
    name_shape: str | None = None

    @property
    def shape(self) -> str | None:
        """The recorded name shape, else a PERSON span's own shape, else None."""
        if self.name_shape is not None:
            return self.name_shape
        return name_shape(self.value) if self.entity == "PERSON" else None


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
        shape = row.get("name_shape")
        if shape is not None and shape not in NAME_SHAPES:
            raise DataFileError(f"unknown name_shape {shape!r}", path=path, line=n, field="name_shape",
                                hint=f"one of {', '.join(NAME_SHAPES)}, or leave it out")  # fmt: skip
        s = Secret(str(row["doc_id"]), str(row["user_id"]), int(row["start"]), int(row["end"]),
                   str(row["entity"]), str(row["value"]), shape)  # fmt: skip
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
    return evaluate_policy_shapes(corpus, secrets, policy, min_overlap=min_overlap, splitter=splitter)[0]


def evaluate_policy_shapes(
    corpus: Corpus,
    secrets: Sequence[Secret],
    policy: Detector,
    *,
    min_overlap: float = 0.5,
    splitter: Callable[[str], list[tuple[int, int]]] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, dict[str, Any]]]]:
    """:func:`evaluate_policy` and :func:`score_by_shape` from one detection pass: the table, and
    the table per name shape."""
    gold: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for s in secrets:
        gold[s.doc_id].append((s.start, s.end, s.entity))
    found = detect_many(policy, corpus.texts())
    predicted = {d.doc_id: spans for d, spans in zip(corpus, found, strict=True)}
    sentences = None if splitter is None else {d.doc_id: splitter(d.text) for d in corpus}
    table = score_spans(gold, predicted, min_overlap=min_overlap, sentences=sentences)
    return table, score_by_shape(secrets, predicted, min_overlap=min_overlap, sentences=sentences)


def score_by_shape(
    secrets: Sequence[Secret],
    predicted: Mapping[str, Sequence[PiiSpan]],
    *,
    min_overlap: float = 0.5,
    sentences: Mapping[str, Sequence[tuple[int, int]]] | None = None,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Recall, ``recall_full``, γ and ``sentence_recall`` per name shape and entity (the secrets of
    people of that shape, :attr:`Secret.shape`; secrets of no shape are left out), each γ with its
    exact 95 % interval ``gamma_ci`` (misses of support, Clopper-Pearson). Shapes in the order of
    :data:`~lmleak.data.names.NAME_SHAPES`, those with no secret left out.

    Example:
        >>> sec = [Secret("d", "u", 0, 4, "PERSON", "Ann", "ascii"), Secret("d", "u", 5, 9, "PERSON", "佐藤", "non_latin")]
        >>> t = score_by_shape(sec, {"d": [PiiSpan(0, 4, "PERSON")]})
        >>> t["ascii"]["PERSON"]["recall"], t["non_latin"]["PERSON"]["gamma"], t["non_latin"]["ALL"]["gamma_ci"][0]
        (1.0, 1.0, 0.025)
    """
    by: dict[str, dict[str, list[tuple[int, int, str]]]] = defaultdict(lambda: defaultdict(list))
    for s in secrets:
        shape = s.shape
        if shape is not None:
            by[shape][s.doc_id].append((s.start, s.end, s.entity))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for shape in (*NAME_SHAPES, *sorted(set(by) - set(NAME_SHAPES))):
        if shape not in by:
            continue
        gold = by[shape]
        docs = {d: predicted.get(d, ()) for d in gold}  # precision has no shape: only the gold's documents
        table = score_spans(gold, docs, min_overlap=min_overlap, sentences=sentences)
        rows = {}
        for entity, row in table.items():
            if not row["support"]:
                continue
            misses = row["support"] - round(row["recall"] * row["support"])
            ci = clopper_pearson_interval(misses, row["support"])
            rows[entity] = {
                **{k: row[k] for k in ("support", "recall", "recall_full", "gamma", "sentence_recall")},
                "gamma_ci": None if ci is None else [round(ci[0], 6), round(ci[1], 6)],
            }
        out[shape] = rows
    return out


def shape_gaps(
    by_shape: Mapping[str, Mapping[str, Mapping[str, Any]]], *, entity: str = "PERSON", gap: float = SHAPE_GAP
) -> list[str]:
    """One sentence per shape whose ``entity`` recall trails the best shape's by more than ``gap``.

    Example:
        >>> shape_gaps({"ascii": {"PERSON": {"recall": 0.9, "support": 50}},
        ...             "non_latin": {"PERSON": {"recall": 0.2, "support": 40}}})
        ['PERSON recall on non_latin names is 0.200 (40 spans), 0.700 below ascii (0.900): the policy misses this shape']
    """
    rows = {s: t[entity] for s, t in by_shape.items() if entity in t and t[entity].get("recall") is not None}
    if not rows:
        return []
    best = max(rows, key=lambda s: rows[s]["recall"])
    top = rows[best]["recall"]
    return [
        f"{entity} recall on {s} names is {r['recall']:.3f} ({r['support']} spans), "
        f"{top - r['recall']:.3f} below {best} ({top:.3f}): the policy misses this shape"
        for s, r in rows.items()
        if top - r["recall"] > gap
    ]


def gamma_by_shape(by_shape: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per name shape: γ over all the secrets of people of that shape (the ``ALL`` row), its support
    and interval, and the γ of their names alone (``gamma_person``) — what ``train --mode crt``
    records beside the pooled γ (:func:`score_by_shape` gives the input).

    Example:
        >>> gamma_by_shape({"ascii": {"ALL": {"gamma": 0.1, "support": 20, "gamma_ci": [0.01, 0.3]},
        ...                           "PERSON": {"gamma": 0.0, "support": 5, "gamma_ci": [0.0, 0.52]}}})
        {'ascii': {'gamma': 0.1, 'support': 20, 'gamma_ci': [0.01, 0.3], 'gamma_person': 0.0, 'person_support': 5}}
    """
    out: dict[str, dict[str, Any]] = {}
    for shape, table in by_shape.items():
        row = table.get("ALL")
        if row is None:
            continue
        person = table.get("PERSON", {})
        out[shape] = {
            "gamma": row["gamma"],
            "support": row["support"],
            "gamma_ci": row["gamma_ci"],
            "gamma_person": person.get("gamma"),
            "person_support": person.get("support", 0),
        }
    return out


@dataclass(frozen=True, slots=True)
class PolicyEvaluation:
    """What ``lmleak pii evaluate`` reports: a policy's scores per entity on one corpus."""

    policy: str
    recall_target: float | None
    seed: int
    min_overlap: float
    documents: int
    entities: dict[str, dict[str, Any]]
    by_shape: dict[str, dict[str, dict[str, Any]]] | None = None  # with --by shape
    warnings: tuple[str, ...] = ()  # shapes the policy misses (shape_gaps)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (and ``--save`` file): ``policy, recall_target, seed, min_overlap, documents,
        entities``, and with ``--by shape`` also ``by_shape`` and ``warnings``."""
        out: dict[str, Any] = {"policy": self.policy, "recall_target": self.recall_target, "seed": self.seed,
               "min_overlap": self.min_overlap, "documents": self.documents, "entities": self.entities}  # fmt: skip
        if self.by_shape is not None:
            out.update(by_shape=self.by_shape, warnings=list(self.warnings))
        return out


def evaluate_policy_files(
    corpus: str | Path,
    secrets: str | Path,
    policy: str | PolicyChoice,
    *,
    min_overlap: float = 0.5,
    splitter: Callable[[str], list[tuple[int, int]]] | None = None,
    save: str | Path | None = None,
    by: str | None = None,
) -> PolicyEvaluation:
    """Load ``corpus`` and its ``secrets.jsonl``, build the policy (a name, or a
    :class:`~lmleak.pii.policies.PolicyChoice` degraded to its ``recall``) and score it (:func:`evaluate_policy`);
    ``by="shape"`` adds the table per name shape (:func:`score_by_shape`) and the shapes it misses
    (:func:`shape_gaps`). With ``save``, also write the result as JSON there.

    Raises:
        ConfigError: an unknown policy name or ``by`` (raised after the corpus and secrets are read).
    """
    docs = load_corpus(corpus)
    gold = load_secrets(secrets, docs)
    if by not in (None, "shape"):
        raise ConfigError(f"unknown breakdown {by!r}", field="by", hint="use --by shape")
    choice = PolicyChoice(policy) if isinstance(policy, str) else policy
    pol = choice.detector()
    table, shapes = evaluate_policy_shapes(docs, gold, pol, min_overlap=min_overlap, splitter=splitter)
    result = PolicyEvaluation(
        getattr(pol, "name", choice.policy), choice.recall, choice.seed, min_overlap, len(docs), table,
        shapes if by == "shape" else None, tuple(shape_gaps(shapes)) if by == "shape" else (),
    )  # fmt: skip
    if save is not None:
        atomic_write_json(save, result.to_dict())
    return result
