"""The blind baseline of membership inference: a text-only classifier that never queries the model.

Das et al. (2024, "Blind baselines beat membership inference attacks for foundation models") and
the 2024 SoK on LLM membership inference showed that many MIA evaluation sets separate members
from non-members by their *text alone* (a date range, a topic, a marker word), so an attack's AUC
can measure that shift instead of the model's memory. The check is cheap: train a bag-of-n-grams
classifier on the same member / non-member split, cross-validated, and report its AUC beside every
attack. When it may explain the best attack, the attack's number says little about the model
(:func:`blind_warning`: by the two intervals; without intervals, within :data:`WARN_MARGIN`).

The classifier: hashed character 1-4-grams (word-bounded, so digits of a date count) and word
unigrams and bigrams, log(1 + count) weights, rows L2-normalised; an L2-regularised logistic
regression fitted by Newton-CG (scipy); the AUC of the out-of-fold decision values over ``folds``
stratified folds. Features hash with CRC-32, so runs are identical across processes.

**Always grouped** (issue 26). Cross-validation over single texts leaks labels between folds
whenever texts come in groups: a person's name in a training fold teaches the classifier that
person's label in the test fold, an AUC no attacker without those labels could reach (on the
quick demo's sets, 0.968 over single texts before issue 26, 0.483 [0.365, 0.591] grouped). The folds therefore keep whole
groups together: the users when they are known, else :func:`lmleak.attacks.mia_sets.text_clusters`
(texts sharing an identifying PII value or near-duplicates). Each text its own group happens only
when the caller says so (``groups=range(n)``) or no two texts are linked — and
:class:`BlindResult` records which (``grouping``, ``num_groups``).

Its AUC has a 95 % interval: the cluster bootstrap over the same groups (resampled within each
class) of the out-of-fold scores (the classifier is not refitted per replicate, so the interval is
narrower than the refitting spread); an AUC of 1 (or 0), where that bootstrap is the point (1, 1),
gets the exact interval over min(member, non-member groups) pairs instead
(:func:`lmleak.intervals.boundary_auc_interval`, ``auc_ci_rule``). :func:`blind_warning` fires when the baseline's interval lies
above chance and the best attack's interval does not clear it (lies wholly above it). With few
groups, grouped cross-validation reads *below* 0.5 when nothing separates the sides (holding a
person out leaves their phrasing under-represented in their class): on the demo's sets, random
person-level labels gave 0.43-0.47 on average; below 0.5 means "no difference found".
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lmleak.attacks.mia_sets import text_clusters
from lmleak.attacks.roc import roc_auc
from lmleak.intervals import boundary_auc_interval, grouped_bootstrap_auc

#: The blind baseline within this much AUC of the best attack triggers the warning.
WARN_MARGIN = 0.05


@dataclass(frozen=True, slots=True)
class BlindResult:
    """Cross-validated AUC of the text-only classifier, its 95 % interval over groups, its
    out-of-fold scores (higher = member), and how the texts were grouped: ``grouping`` is
    ``"given"`` (the caller's groups, e.g. users) or ``"clusters"`` (shared PII / near-duplicates);
    ``groups`` holds each text's group."""

    auc: float
    scores: np.ndarray
    folds: int
    num_features: int
    auc_ci: tuple[float, float] | None = None
    grouping: str = "given"
    num_groups: int = 0
    groups: tuple[str, ...] = ()
    auc_ci_rule: str | None = None  # the boundary rule that made auc_ci (an AUC of 0 or 1), else None


def ngram_features(texts: Sequence[str], *, dim: int = 1 << 14, char_n: tuple[int, int] = (1, 4)):  # noqa: ANN201
    """Hashed n-gram counts as a scipy CSR matrix (rows: texts), weighted ``log(1 + count)`` and L2-normalised.

    Example:
        >>> X = ngram_features(["a b", "a b", "c"], dim=64)
        >>> X.shape, bool(abs(X[0].multiply(X[1]).sum() - 1.0) < 1e-9)
        ((3, 64), True)
    """
    from collections import Counter

    from scipy import sparse

    def h(gram: str) -> int:
        return zlib.crc32(gram.encode("utf-8")) % dim

    # a word's unigram and character n-grams are hashed once per distinct word (words repeat a lot)
    per_word: dict[str, list[int]] = {}

    def word_ids(w: str) -> list[int]:
        ids = per_word.get(w)
        if ids is None:
            padded = f" {w} "
            ids = [h(f"w:{w}")] + [
                h(f"c:{padded[j : j + n]}")
                for n in range(char_n[0], char_n[1] + 1)
                for j in range(len(padded) - n + 1)
            ]
            per_word[w] = ids
        return ids

    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for i, text in enumerate(texts):
        words = text.lower().split()
        counts: Counter[int] = Counter(h(f"b:{a} {b}") for a, b in zip(words, words[1:], strict=False))
        for w in words:
            counts.update(word_ids(w))
        if not counts:
            continue
        v = np.log1p(np.fromiter(counts.values(), dtype=np.float64))
        v /= np.linalg.norm(v)
        rows.extend([i] * len(counts))
        cols.extend(counts.keys())
        vals.extend(v.tolist())
    return sparse.csr_matrix((vals, (rows, cols)), shape=(len(texts), dim))


def fit_logistic(X, y: np.ndarray, *, l2: float = 1.0) -> tuple[np.ndarray, float]:  # noqa: ANN001
    """L2-regularised logistic regression (intercept not penalised); returns (weights, bias).

    Minimises ``sum_i log(1 + exp(-s_i (x_i.w + b))) + l2/2 |w|^2`` with ``s_i = 2 y_i - 1`` by
    Newton-CG with exact Hessian-vector products (two sparse products each): ~10 iterations, where
    L-BFGS-B's per-iteration overhead at 16k features cost ~0.1 s a step.
    """
    from scipy.optimize import minimize

    s = 2.0 * np.asarray(y, dtype=np.float64) - 1.0
    d = X.shape[1]

    def f(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:d], theta[d]
        m = s * (X @ w + b)
        loss = np.logaddexp(0.0, -m).sum() + 0.5 * l2 * w @ w
        g = -s * _sigmoid(-m)
        return float(loss), np.r_[X.T @ g + l2 * w, g.sum()]

    def hessp(theta: np.ndarray, v: np.ndarray) -> np.ndarray:
        q = _sigmoid(X @ theta[:d] + theta[d])
        xv = (X @ v[:d] + v[d]) * q * (1.0 - q)
        return np.r_[X.T @ xv + l2 * v[:d], xv.sum()]

    res = minimize(f, np.zeros(d + 1), jac=True, hessp=hessp, method="Newton-CG", options={"maxiter": 200})
    return res.x[:d], float(res.x[d])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


# long: 20 of its lines are the docstring; the fold dealing is 15
def blind_baseline(
    texts: Sequence[str],
    labels: Sequence[int],
    *,
    groups: Sequence[Any] | None = None,
    folds: int = 5,
    seed: int = 0,
    l2: float = 1.0,
    n_boot: int = 1000,
) -> BlindResult:
    """Cross-validated AUC of a text-only member / non-member classifier (see the module docstring).

    Folds are stratified (each class's groups dealt round-robin after a seeded shuffle); each
    text's score comes from the model fitted on the other folds, and the AUC is over all of them.
    With fewer than 2 groups per class per fold, the folds shrink (at least 2; fewer: AUC 0.5).

    ``groups`` (e.g. each text's user) keeps a group's texts in one fold; None groups the texts by
    :func:`lmleak.attacks.mia_sets.text_clusters`. ``groups=range(len(texts))`` is the old
    ungrouped baseline (each text its own fold unit), for comparison only.

    Example:
        >>> texts = [f"note {i} from 2019" for i in range(10)] + [f"note {i} from 2023" for i in range(10)]
        >>> r = blind_baseline(texts, [1] * 10 + [0] * 10, folds=5, n_boot=200)
        >>> r.auc, r.grouping, r.num_groups, round(r.auc_ci[0], 4), r.auc_ci_rule  # not the bootstrap's (1, 1)
        (1.0, 'clusters', 20, 0.6915, 'clopper-pearson: 10 of 10 group pairs')
    """
    y = np.asarray(labels, dtype=np.int64)
    grouping = "given"
    if groups is None:
        grouping = "clusters"
        groups = text_clusters(texts, labels=y.tolist()).ids.tolist()
    # a group is one class: a cluster or user on both sides is split by side
    keys = [f"{int(c)}:{g}" for c, g in zip(y, groups, strict=True)]
    num_groups = len(set(keys))
    none = BlindResult(0.5, np.zeros(len(y)), 0, 0, None, grouping, num_groups, tuple(keys))
    k = min(folds, int(y.sum()), int((1 - y).sum()))
    if k < 2:
        return none
    rng = np.random.default_rng(seed)
    fold = np.empty(len(y), dtype=np.int64)
    for cls in (0, 1):
        names = sorted({g for c, g in zip(y, keys, strict=True) if c == cls})
        k = min(k, len(names))
        order = {g: j for j, g in enumerate(rng.permutation(names).tolist())}
        for i, (c, g) in enumerate(zip(y, keys, strict=True)):
            if c == cls:
                fold[i] = order[g]
    if k < 2:
        return none
    fold %= k
    X = ngram_features(texts)
    scores = np.zeros(len(y))
    for f in range(k):
        test = fold == f
        w, b = fit_logistic(X[~test], y[~test], l2=l2)
        scores[test] = X[test] @ w + b
    auc = float(roc_auc(scores, y))
    pos, neg = ({g for c, g in zip(y, keys, strict=True) if c == cls} for cls in (1, 0))
    boot = grouped_bootstrap_auc(scores, y, keys, n_boot=n_boot, seed=seed)
    ci, rule = boundary_auc_interval(auc, len(pos), len(neg), boot, unit="group")
    return BlindResult(auc, scores, k, X.shape[1], ci, grouping, num_groups, tuple(keys), rule)


def blind_warning(
    blind_auc: float,
    attack_aucs: dict[str, float],
    *,
    margin: float = WARN_MARGIN,
    blind_ci: Sequence[float] | None = None,
    attack_cis: dict[str, Sequence[float] | None] | None = None,
) -> str | None:
    """The warning text when the blind baseline may explain the best attack, else None.

    With intervals (``blind_ci`` and the best attack's in ``attack_cis``): the warning fires when
    the blind baseline's interval lies above chance (its lower end above 0.5: the texts alone tell
    the sides apart) and the best attack's interval does not clear it (the attack's lower end is not
    above the baseline's upper end). Without them: when the baseline comes within ``margin`` AUC
    of the best attack.

    Example:
        >>> blind_warning(0.97, {"perplexity": 0.99, "zlib": 0.9}) is not None
        True
        >>> blind_warning(0.55, {"perplexity": 0.99}) is None
        True
        >>> blind_warning(0.52, {"min_k": 0.55}, blind_ci=(0.4, 0.64), attack_cis={"min_k": (0.45, 0.65)}) is None
        True
        >>> blind_warning(0.9, {"min_k": 0.95}, blind_ci=(0.85, 0.95), attack_cis={"min_k": (0.9, 0.99)}) is None
        False
    """
    finite = {k: v for k, v in attack_aucs.items() if v is not None and np.isfinite(v)}
    if not finite:
        return None
    best = max(finite, key=lambda k: finite[k])
    best_ci = (attack_cis or {}).get(best)
    if blind_ci is not None and best_ci is not None:
        if blind_ci[0] <= 0.5 or best_ci[0] > blind_ci[1]:
            return None
        return (
            f"the blind baseline (a text-only classifier that never queries the model) reaches AUC "
            f"{blind_auc:.3f} [{blind_ci[0]:.3f}, {blind_ci[1]:.3f}], above chance, and the best attack "
            f"({best}, AUC {finite[best]:.3f} [{best_ci[0]:.3f}, {best_ci[1]:.3f}]) does not clear it: members "
            "and non-members differ in their text, so these AUCs may measure that shift, not the model's "
            "memory; draw both sides from the same distribution (e.g. held-out users of the same corpus)"
        )
    if blind_auc < finite[best] - margin:
        return None
    return (
        f"the blind baseline (a text-only classifier that never queries the model) reaches AUC "
        f"{blind_auc:.3f}, within {margin} of the best attack ({best}, AUC {finite[best]:.3f}): members and "
        "non-members differ in their text, so these AUCs may measure that shift, not the model's memory; "
        "draw both sides from the same distribution (e.g. held-out users of the same corpus)"
    )
