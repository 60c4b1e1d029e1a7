"""Metrics of a membership score: ROC curve, AUC, accuracy at the best threshold, TPR at low FPR.

Conventions: a higher score means "more likely a member"; label 1 = member. A threshold ``t``
predicts member for ``score >= t``. Equal scores move together (a threshold never splits a tie),
so the ROC has one point per distinct score plus (0, 0).

- Accuracy at the best threshold is what paper 002 plots (Figs. 4, 5; A.4: balanced sets, so
  chance is 0.5). :func:`summarize` reports it balanced — ``(TPR + TNR) / 2`` at the best threshold
  (:func:`best_balanced_accuracy`), the same number on a balanced set — because the sets it sees are
  not always balanced (the split-half headline's reported half, texts too short for Min-K%), and
  there plain accuracy's chance level is the larger side's share, not 0.5. It is optimistic — the threshold is chosen on the evaluation set, as the paper
  does — which is why AUC and TPR at low FPR (Carlini et al. 2022, "Membership inference attacks
  from first principles") are reported beside it.
- AUC is the Mann–Whitney statistic: Pr[score(member) > score(non-member)] + ½ Pr[tie].
- TPR at FPR ``f`` is the largest TPR of a threshold whose FPR is at most ``f`` (no interpolation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lmleak.figures import pyplot, save_figure
from lmleak.intervals import auc_mann_whitney


@dataclass(frozen=True, slots=True)
class RocCurve:
    """Points of a ROC curve, from the strictest threshold (+inf: nothing flagged) down."""

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    num_members: int
    num_non_members: int


def _check(
    scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError("scores and labels must be 1-D and the same length")
    if not y.any() or y.all():
        raise ValueError("need at least one member and one non-member")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    return s, y


def roc_curve(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> RocCurve:
    """ROC curve with ties kept together.

    Example:
        >>> c = roc_curve([0.9, 0.8, 0.8, 0.1], [1, 1, 0, 0])
        >>> c.fpr.tolist(), c.tpr.tolist()
        ([0.0, 0.0, 0.5, 1.0], [0.0, 0.5, 1.0, 1.0])
    """
    s, y = _check(scores, labels)
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1]
    tp = np.cumsum(y)[last_of_tie]
    fp = np.cumsum(~y)[last_of_tie]
    p, n = int(y.sum()), int((~y).sum())
    return RocCurve(
        fpr=np.r_[0.0, fp / n],
        tpr=np.r_[0.0, tp / p],
        thresholds=np.r_[np.inf, s[last_of_tie]],
        num_members=p,
        num_non_members=n,
    )


def roc_auc(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> float:
    """Area under the ROC curve = Pr[member scores higher] + ½ Pr[tie] (Mann–Whitney U / (P·N)).

    Example:
        >>> roc_auc([0.9, 0.8, 0.8, 0.1], [1, 1, 0, 0])
        0.875
    """
    s, y = _check(scores, labels)
    return auc_mann_whitney(s, y)


def best_accuracy(
    scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray
) -> tuple[float, float]:
    """(accuracy, threshold) of the best single threshold ``score >= t`` on this set (paper 002 A.4).

    Example:
        >>> best_accuracy([0.9, 0.8, 0.8, 0.1], [1, 1, 0, 0])
        (0.75, 0.9)
    """
    c = roc_curve(scores, labels)
    acc = (c.tpr * c.num_members + (1.0 - c.fpr) * c.num_non_members) / (c.num_members + c.num_non_members)
    i = int(np.argmax(acc))
    return float(acc[i]), float(c.thresholds[i])


def best_balanced_accuracy(
    scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray
) -> tuple[float, float]:
    """(balanced accuracy, threshold) of the best single threshold ``score >= t``: the mean of the
    members' and the non-members' accuracy, ``(TPR + 1 - FPR) / 2``, so 0.5 is chance whatever the
    sides' sizes. On a balanced set it is :func:`best_accuracy`.

    Subtle: with 11 members and 14 non-members, calling everyone a non-member is 56 % accurate;
    balanced, it is 50 %.

    Example:
        >>> best_balanced_accuracy([0.9, 0.8, 0.8, 0.1], [1, 1, 0, 0])
        (0.75, 0.9)
        >>> s, y = [0.1, 0.2, 0.3, 0.4, 0.5], [1, 0, 0, 0, 0]
        >>> best_accuracy(s, y)[0], best_balanced_accuracy(s, y)[0]
        (0.8, 0.5)
    """
    c = roc_curve(scores, labels)
    acc = (c.tpr + (1.0 - c.fpr)) / 2.0
    i = int(np.argmax(acc))
    return float(acc[i]), float(c.thresholds[i])


def tpr_at_fpr(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray, fpr: float) -> float:
    """Largest TPR among thresholds whose FPR is at most ``fpr``.

    With N non-members, FPRs below 1/N can only be met by flagging nothing among them.

    Example:
        >>> tpr_at_fpr([0.9, 0.8, 0.8, 0.1], [1, 1, 0, 0], 0.0)
        0.5
    """
    c = roc_curve(scores, labels)
    ok = c.fpr <= fpr + 1e-12
    return float(c.tpr[ok].max())


#: TPR at FPR f is reported only with at least this many / f negatives: with fewer, "FPR <= f" is met
#: by a handful of non-members (or none), and the number is noise.
MIN_NEGATIVES_FACTOR = 10


def low_fpr_note(num_negatives: int, fpr: float, *, unit: str = "non-members") -> str | None:
    """Why TPR at ``fpr`` is not reported (None when there are enough negatives, counted in ``unit``).

    Example:
        >>> low_fpr_note(300, 0.001)
        'needs >= 10,000 non-members, have 300'
        >>> low_fpr_note(1000, 0.01) is None
        True
    """
    need = math.ceil(MIN_NEGATIVES_FACTOR / fpr - 1e-9)
    return None if num_negatives >= need else f"needs >= {need:,} {unit}, have {num_negatives:,}"


def summarize(scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray) -> dict[str, Any]:
    """Every metric of one score: accuracy (best threshold, balanced: :func:`best_balanced_accuracy`),
    AUC, TPR at 1 % and 0.1 % FPR.

    TPR at FPR f is None, with the reason under ``tpr_at_<f>_fpr_note``, when there are fewer than
    ``10 / f`` negatives (:data:`MIN_NEGATIVES_FACTOR`).

    Example:
        >>> m = summarize([3.0, 2.0, 1.0, 0.0], [1, 1, 0, 0])
        >>> m["accuracy"], m["auc"], m["tpr_at_1pct_fpr"], m["tpr_at_1pct_fpr_note"]
        (1.0, 1.0, None, 'needs >= 1,000 non-members, have 2')
    """
    acc, thr = best_balanced_accuracy(scores, labels)
    y = np.asarray(labels).astype(bool)
    negatives = int((~y).sum())
    out: dict[str, Any] = {"accuracy": acc, "threshold": thr, "auc": roc_auc(scores, labels)}
    for name, f in (("tpr_at_1pct_fpr", 0.01), ("tpr_at_0.1pct_fpr", 0.001)):
        note = low_fpr_note(negatives, f)
        out[name] = None if note else tpr_at_fpr(scores, labels, f)
        out[f"{name}_note"] = note
    out.update({"num_members": int(y.sum()), "num_non_members": negatives})
    return out


def plot_roc(curves: dict[str, RocCurve], path: str, *, title: str = "Membership inference ROC") -> str:
    """Write ROC curves to a PNG: linear axes and log-log axes (low-FPR regime) side by side."""
    fig, axes = pyplot().subplots(1, 2, figsize=(10, 4.5))
    for name, c in curves.items():
        axes[0].plot(c.fpr, c.tpr, label=name, drawstyle="steps-post")
        axes[1].plot(np.maximum(c.fpr, 1e-4), np.maximum(c.tpr, 1e-4), label=name, drawstyle="steps-post")
    for ax in axes:
        ax.plot([1e-4, 1], [1e-4, 1], "k:", lw=0.8)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    return path
