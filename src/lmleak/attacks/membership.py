"""Membership inference on texts: individual and group attacks (paper 002 §5.1 and appendix A.4).

The attack of Carlini et al. (2021), as paper 002 uses it: score each candidate text by the
model's perplexity and call the most likely ones members. The evaluation set is balanced (A.4):
N protected secrets/sentences that were in training against N random ones of the same format
that were not, so guessing scores 50 %. The group attack (A.4) classifies groups of 20 texts —
all members or all non-members — by the sum of their perplexities.

Scores (higher = "more likely a member"; every feature is one column):

- ``perplexity``: ``-PPL`` per token (A.4; Carlini et al. 2021).
- ``zlib``: ``-log(PPL) / zlib entropy`` (Carlini et al. 2021 §6.1: text that is easy to compress
  is likely under any model, so divide it out). zlib entropy = bytes of ``zlib.compress(text)``.
- ``min_k``: mean of the ``k`` % lowest token log-probabilities (Shi et al. 2024, "Min-K% Prob").
- ``reference``: ``-log(PPL_target) / log(PPL_reference)`` (Carlini et al. 2021 §6.1 "Small"/"Medium"
  calibration against a public model). Per-word perplexities, so models with different tokenizers
  compare on the same text (DESIGN.md).

A group's score is the sum of its members' individual scores; for ``perplexity`` that is minus
the sum of perplexities, the statistic of A.4.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lmleak.attacks.roc import RocCurve, plot_roc, roc_curve, summarize
from lmleak.data.holdout import read_holdout
from lmleak.data.sidefiles import read_side_file
from lmleak.errors import ConfigError, DataFileError
from lmleak.jsonl import iter_jsonl
from lmleak.models.base import Capability, count_words, require
from lmleak.runs import secure_dir, write_parquet, write_summary
from lmleak.scenarios import scenario_record
from lmleak.shards import fingerprint_of, run_rows

FEATURES = ("perplexity", "zlib", "min_k", "reference")


def zlib_entropy(text: str) -> int:
    """Bytes of the zlib-compressed UTF-8 text (Carlini et al. 2021's zlib entropy).

    Example:
        >>> zlib_entropy("aaaa" * 50) < zlib_entropy("My ID is: 123456, ship to 1 Example Rd")
        True
    """
    return len(zlib.compress(text.encode("utf-8")))


def min_k_prob(token_logprobs: np.ndarray, k: float = 0.2) -> float:
    """Mean of the ``ceil(k * n)`` lowest token log-probabilities (Shi et al. 2024).

    Example:
        >>> min_k_prob(np.array([-0.1, -5.0, -0.2, -3.0, -0.3]), 0.4)
        -4.0
    """
    lp = np.sort(np.asarray(token_logprobs, dtype=np.float64))
    if len(lp) == 0:
        raise ValueError("no tokens")
    m = max(1, math.ceil(k * len(lp)))
    return float(lp[:m].mean())


def text_scores(
    model: Any, texts: Sequence[str], *, reference: Any = None, min_k: float = 0.2
) -> dict[str, np.ndarray]:
    """Per-text statistics and attack scores (see the module docstring), as aligned arrays.

    Returns a dict with ``num_tokens``, ``logprob`` (nats, summed), ``log_ppl`` (per token),
    ``log_ppl_word``, ``zlib_bytes``, ``ref_log_ppl_word`` (NaN without a reference) and one array per
    feature in :data:`FEATURES` (``reference`` is NaN without a reference model).
    """
    require(model, Capability.SCORE, attack="membership inference")
    if reference is not None:
        require(reference, Capability.SCORE, attack="reference-calibrated membership inference")
    enc = model.tokenizer.encode
    seqs = [enc(t) for t in texts]
    for i, s in enumerate(seqs):
        if not s:
            raise DataFileError("text has no tokens", line=i + 1, field="text", hint="drop empty texts")
    stats = model.token_stats(seqs)
    n_tok = np.array([len(s) for s in seqs], dtype=np.int64)
    lp_sum = np.array([float(st.logprobs.astype(np.float64).sum()) for st in stats])
    words = np.array([count_words(t) or 1 for t in texts], dtype=np.float64)
    log_ppl = -lp_sum / n_tok
    log_ppl_word = -lp_sum / words
    zbytes = np.array([zlib_entropy(t) for t in texts], dtype=np.float64)
    mk = np.array([min_k_prob(st.logprobs, min_k) for st in stats])
    ref_word = np.full(len(texts), np.nan)
    if reference is not None:
        ref = reference.score_text([""] * len(texts), list(texts))
        ref_word = np.array([-r.logprob / max(r.num_words, 1) for r in ref])
    return {
        "num_tokens": n_tok,
        "logprob": lp_sum,
        "log_ppl": log_ppl,
        "log_ppl_word": log_ppl_word,
        "zlib_bytes": zbytes,
        "ref_log_ppl_word": ref_word,
        "perplexity": -np.exp(log_ppl),
        "zlib": -log_ppl / zbytes,
        "min_k": mk,
        "reference": -log_ppl_word / np.maximum(ref_word, 1e-6),
    }


def group_scores(
    scores: np.ndarray, group_size: int, *, num_groups: int | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Sum individual scores over groups of ``group_size`` texts (paper 002 A.4).

    With ``num_groups=None`` the texts are shuffled and cut into disjoint groups (a remainder is
    dropped); otherwise ``num_groups`` groups are drawn, each without repetition inside it, as A.4
    draws 1000 groups of 20 from 1000 secrets. Returns (group scores, member index matrix).

    Example:
        >>> s, idx = group_scores(np.arange(6.0), 3, seed=0)
        >>> bool(np.allclose(s, np.arange(6.0)[idx].sum(1))), idx.shape
        (True, (2, 3))
    """
    x = np.asarray(scores, dtype=np.float64)
    if group_size < 1 or len(x) < group_size:
        raise ValueError(f"need at least group_size={group_size} texts, got {len(x)}")
    rng = np.random.default_rng(seed)
    if num_groups is None:
        perm = rng.permutation(len(x))
        k = len(x) // group_size
        idx = perm[: k * group_size].reshape(k, group_size)
    else:
        idx = np.stack([rng.choice(len(x), size=group_size, replace=False) for _ in range(num_groups)])
    return x[idx].sum(axis=1), idx


@dataclass
class MembershipResult:
    """Scores, metrics and ROC curves of one membership-inference run."""

    scores: Any  # pandas DataFrame, one row per text
    metrics: Any  # pandas DataFrame, one row per (level, feature)
    curves: dict[str, RocCurve] = field(default_factory=dict)
    num_per_side: int = 0
    group_size: int = 0


def evaluate_membership(
    model: Any,
    members: Sequence[str],
    non_members: Sequence[str],
    *,
    num_per_side: int = 1000,
    group_size: int = 20,
    num_groups: int | None = None,
    reference: Any = None,
    min_k: float = 0.2,
    seed: int = 0,
    work_dir: str | Path | None = None,
    shard_size: int = 256,
) -> MembershipResult:
    """Individual and group membership inference on a balanced evaluation set (paper 002 A.4).

    ``num_per_side`` texts are drawn (seeded) from each side; if a side has fewer, both sides are
    cut to the smaller size so chance stays 50 %. ``group_size=0`` skips the group attack. With
    ``work_dir`` the scoring runs in resumable shards of ``shard_size`` texts there
    (:func:`lmleak.shards.run_rows`): an interrupted run picks up where it stopped.
    """
    import pandas as pd

    n = min(num_per_side, len(members), len(non_members))
    if n < 2:
        raise DataFileError(
            f"need at least 2 members and 2 non-members, got {len(members)} and {len(non_members)}",
            hint="give more texts in --members / --non-members",
        )
    rng = np.random.default_rng(seed)
    mem = [members[i] for i in sorted(rng.choice(len(members), size=n, replace=False))]
    non = [non_members[i] for i in sorted(rng.choice(len(non_members), size=n, replace=False))]
    texts = mem + non
    labels = np.r_[np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)]
    if work_dir is None:
        sc = text_scores(model, texts, reference=reference, min_k=min_k)
    else:
        sc = _sharded_text_scores(model, texts, reference, min_k, work_dir, shard_size)
    features = [f for f in FEATURES if f != "reference" or reference is not None]
    table = pd.DataFrame({"text": texts, "member": labels, **{k: v for k, v in sc.items()}})
    rows: list[dict[str, Any]] = []
    curves: dict[str, RocCurve] = {}
    for f in features:
        rows.append({"level": "individual", "feature": f, **summarize(sc[f], labels)})
        curves[f"individual/{f}"] = roc_curve(sc[f], labels)
    if group_size and n >= group_size:
        for f in features:
            gm, _ = group_scores(sc[f][:n], group_size, num_groups=num_groups, seed=seed + 1)
            gn, _ = group_scores(sc[f][n:], group_size, num_groups=num_groups, seed=seed + 2)
            g_scores = np.r_[gm, gn]
            g_labels = np.r_[np.ones(len(gm), dtype=np.int64), np.zeros(len(gn), dtype=np.int64)]
            rows.append({"level": f"group{group_size}", "feature": f, **summarize(g_scores, g_labels)})
            curves[f"group{group_size}/{f}"] = roc_curve(g_scores, g_labels)
    return MembershipResult(table, pd.DataFrame(rows), curves, n, group_size)


def _sharded_text_scores(
    model: Any, texts: list[str], reference: Any, min_k: float, work_dir: str | Path, shard_size: int
) -> dict[str, np.ndarray]:

    def work(chunk: list[str]) -> list[dict[str, Any]]:
        sc = text_scores(model, chunk, reference=reference, min_k=min_k)
        return [{k: v[i].item() for k, v in sc.items()} for i in range(len(chunk))]

    fp = fingerprint_of("mia", getattr(model, "name", ""), type(model).__name__,
                        None if reference is None else getattr(reference, "name", ""), min_k, texts)
    rows = run_rows(texts, work, work_dir, fingerprint=fp, shard_size=shard_size, description="membership scores")
    return {k: np.array([r[k] for r in rows], dtype=np.int64 if k == "num_tokens" else np.float64) for k in rows[0]}


def read_texts(path: str | Path, *, field: str = "text") -> list[str]:
    """Read member / non-member texts: JSONL objects with ``field``, or plain text, one per line.

    A file is JSONL when its name ends in ``.jsonl``/``.json`` or its first non-blank line starts
    with ``{``. Blank lines are skipped in plain text; in JSONL every line must be an object with a
    non-empty string ``field``.

    Raises:
        DataFileError: with the path, line and field of the first bad line.
    """
    p = Path(path)
    lines = read_side_file(p, hint="give a JSONL file with a 'text' field or a text file").splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    is_jsonl = p.suffix in {".jsonl", ".json"} or first.lstrip().startswith("{")
    out: list[str] = [] if is_jsonl else [ln for ln in lines if ln.strip()]
    for i, obj in iter_jsonl(p, hint=f'write {{"{field}": "..."}} per line') if is_jsonl else ():
        val = obj.get(field)
        if not isinstance(val, str) or not val.strip():
            raise DataFileError(
                "missing or empty",
                path=p,
                line=i,
                field=field,
                hint=f"every line needs a non-empty string '{field}' (or use --field)",
            )
        out.append(val)
    if not out:
        raise DataFileError(
            "no texts in file", path=p, hint="one text per line, or JSONL with a 'text' field"
        )
    return out


#: Words of a document kept as its candidate text when members and non-members come from a corpus
#: (a digest of 40k tokens is not a "text" an attacker tests; its opening is).
CANDIDATE_WORDS = 200


def split_by_holdout(documents: Any, held_out: Sequence[str], *, max_words: int = CANDIDATE_WORDS) -> tuple[list[str], list[str]]:
    """Members and non-members from a corpus: documents of users the model was trained on, and of
    the users it held out (``holdout.json``), each cut to its first ``max_words`` words.

    Example:
        >>> from lmleak.data.corpus import Document
        >>> docs = [Document("u1", "a", "x y z"), Document("u2", "b", "p q"), Document("u3", "c", "m n o")]
        >>> split_by_holdout(docs, ["u2"], max_words=2)
        (['x y', 'm n'], ['p q'])
    """
    out: tuple[list[str], list[str]] = ([], [])
    held = set(held_out)
    for d in documents:
        out[1 if d.user_id in held else 0].append(" ".join(d.text.split()[:max_words]))
    return out


def members_from_holdout(model_dir: str | Path, documents: Any) -> tuple[list[str], list[str], str]:
    """Members and non-members of a model trained by ``lmleak train``: the corpus documents of the
    users it held out (its ``holdout.json``) are the non-members, the other users' the members.

    Returns ``(members, non_members, source)``, ``source`` saying where the two sides came from.

    Raises:
        ConfigError: the model folder records no held-out users.
    """
    holdout = read_holdout(model_dir)
    if holdout is None or not holdout.users:
        raise ConfigError(
            f"{model_dir}: the model records no held-out users (holdout.json), so there are no non-members",
            field="--members", hint="give members and non-members files, or retrain with --holdout-users 0.1",
        )
    mem, non = split_by_holdout(documents, holdout.users)
    source = (f"non-members: {len(non)} documents of the {len(holdout.users)} users held out of training "
              f"(holdout.json); members: {len(mem)} documents of the other users")
    return mem, non, source


def headline_feature(features: Sequence[str]) -> str:
    """The attack the headline reports: the reference-calibrated one when a reference model scored
    the texts (it is the stronger attack; Carlini et al. 2021 §6.1, 2022), else plain perplexity.

    Example:
        >>> headline_feature(["perplexity", "zlib", "reference"]), headline_feature(["perplexity", "zlib"])
        ('reference', 'perplexity')
    """
    return "reference" if "reference" in features else "perplexity"


def run_membership(
    model: Any,
    members: Sequence[str],
    non_members: Sequence[str],
    out_dir: str | Path,
    *,
    reference: Any = None,
    num_per_side: int = 1000,
    group_size: int = 20,
    num_groups: int | None = None,
    min_k: float = 0.2,
    seed: int = 0,
    source: str | None = None,
) -> dict[str, Any]:
    """Membership inference into a run directory: scores, metrics per attack, ROC curves and plot,
    ``summary.json`` (returned).

    The headline (``mia_auc``, ``mia_accuracy``, ``mia_attack``) is the reference-calibrated attack
    when ``reference`` is given, else perplexity (:func:`headline_feature`); ``mia_auc_by_attack``
    holds every attack's AUC. ``source`` says where the two sides came from (printed and stored).
    """
    import pandas as pd


    if not 0 < min_k <= 1:
        raise ConfigError(f"min_k must be in (0, 1], got {min_k}", field="min_k")
    if group_size < 0:
        raise ConfigError("group_size must be >= 0", field="group_size")
    run = secure_dir(out_dir)
    res = evaluate_membership(model, members, non_members, num_per_side=num_per_side, group_size=group_size,
                              num_groups=num_groups, reference=reference, min_k=min_k, seed=seed,
                              work_dir=run / "passes" / "mia-scores")
    write_parquet(res.scores, run / "mia_scores.parquet")
    write_parquet(res.metrics, run / "mia_metrics.parquet")
    curves = pd.DataFrame(
        [{"curve": name, "fpr": float(f), "tpr": float(tp), "threshold": float(th)}
         for name, c in res.curves.items() for f, tp, th in zip(c.fpr, c.tpr, c.thresholds, strict=True)]
    )
    write_parquet(curves, run / "roc.parquet")
    name = getattr(model, "name", type(model).__name__)
    plot_roc(res.curves, str(run / "roc.png"), title=f"Membership inference — {name}")
    rows = res.metrics.to_dict(orient="records")
    individual = {r["feature"]: r for r in rows if r["level"] == "individual"}
    best = headline_feature(list(individual))
    head = individual[best]
    grp = next((r for r in rows if r["level"] != "individual" and r["feature"] == best), None)
    summary = {
        "attack": "membership_inference",
        "model": name,
        "reference": None if reference is None else getattr(reference, "name", None),
        "source": source,
        "num_per_side": res.num_per_side,
        "group_size": group_size,
        "mia_attack": best,
        "mia_auc": head["auc"],
        "mia_accuracy": head["accuracy"],
        "mia_tpr_at_1pct_fpr": head["tpr_at_1pct_fpr"],
        "mia_tpr_at_1pct_fpr_note": head["tpr_at_1pct_fpr_note"],
        "mia_auc_by_attack": {f: r["auc"] for f, r in individual.items()},
        "perplexity_auc": individual["perplexity"]["auc"],
        "group_accuracy": None if grp is None else grp["accuracy"],
        "metrics": rows,
        "scenario": scenario_record(
            attack="membership_inference", knowledge=("candidate_texts",), access="scores", target="membership",
            resources=("reference_model",) if reference is not None else (),
            notes="balanced members vs same-format non-members (paper 002 A.4)" + (f"; {source}" if source else ""),
        ),
    }
    write_summary(run, summary)
    return summary
