"""RMIA: the robust membership inference attack (Zarifzadeh, Liu, Beaudet, Shokri, ICML 2024,
"Low-cost high-power membership inference attacks"), for a language model and its reference models.

For a text ``x`` the attack compares the likelihood ratio ``p(x | θ) / p(x)`` of the target ``θ``
with the same ratio for population texts ``z`` known not to be members:

``score(x) = share of z with (p(x | θ) / p(x)) / (p(z | θ) / p(z)) > γ``

where ``p(x)`` is the probability of ``x`` averaged over reference models. The conventions are those
of the authors' code, ml_privacy_meter's ``modules/mia/attacks/rmia.py`` (``run_rmia``; implemented here
from its description, not copied):

- the reference models are all OUT (none trained on the texts: a fine-tune's public base, or models
  the user trained without them), the paper's *offline* setting; ``p(x)`` is then approximated from
  the OUT models' mean ``p_OUT(x)`` as ``p(x) = (1 + a) / 2 · p_OUT(x) + (1 - a) / 2``, with
  ``a = offline_a`` (their default 0.3; ``a = 1`` uses ``p_OUT`` as it is);
- the same approximation is applied to every ``z``;
- the comparison is strict: ``ratio > γ``, ``γ = 1`` by default (their ``ratios > 1.0``), and the
  score is the mean of the comparisons over ``z``, in ``[0, 1]``.

The signal ``p(x | θ)`` of a text: the per-token geometric mean probability ``exp(mean_t log p(x_t))``
(lmleak's choice for texts of any length: a probability in ``[0, 1]``, as the offline approximation
needs; the product over tokens of a long text underflows and would make every ``p(x)`` the constant
``(1 - a) / 2``).

Higher = more likely a member.
"""

from __future__ import annotations

import numpy as np

#: ml_privacy_meter's default offline ``a``.
DEFAULT_OFFLINE_A = 0.3


def offline_prob(ref_probs: np.ndarray, offline_a: float = DEFAULT_OFFLINE_A) -> np.ndarray:
    """``p(x) = (1 + a) / 2 · mean_k p_k(x) + (1 - a) / 2`` from OUT reference models' signals
    ``ref_probs`` (``(n,)`` for one model, or ``(n, k)``).

    Example:
        >>> offline_prob(np.array([[0.2, 0.6]]), 0.5).tolist()   # 0.75 * 0.4 + 0.25
        [0.55]
    """
    if not 0 <= offline_a <= 1:
        raise ValueError(f"offline_a must be in [0, 1], got {offline_a}")
    p = np.asarray(ref_probs, dtype=np.float64)
    mean = p.mean(axis=1) if p.ndim == 2 else p
    return (1 + offline_a) / 2 * mean + (1 - offline_a) / 2


def rmia_scores(
    target_x: np.ndarray,
    ref_x: np.ndarray,
    target_z: np.ndarray,
    ref_z: np.ndarray,
    *,
    offline_a: float = DEFAULT_OFFLINE_A,
    gamma: float = 1.0,
) -> np.ndarray:
    """RMIA's score of each ``x``: the share of the population ``z`` that ``x`` dominates.

    ``target_x`` (``(n,)``) and ``target_z`` (``(m,)``) are the target's signals ``p(· | θ)``;
    ``ref_x`` / ``ref_z`` the OUT reference models' (``(n,)`` / ``(m,)`` for one model, ``(n, k)`` /
    ``(m, k)`` for ``k``).

    Example:
        >>> rmia_scores(np.array([0.5, 0.1]), np.array([0.25, 0.2]), np.array([0.2, 0.4]),
        ...             np.array([0.2, 0.2]), offline_a=1.0).tolist()   # ratios x: 2, 0.5; z: 1, 2
        [0.5, 0.0]
    """
    if gamma <= 0:
        raise ValueError(f"gamma must be > 0, got {gamma}")
    tz = np.asarray(target_z, dtype=np.float64)
    if tz.size == 0:
        raise ValueError("RMIA needs at least one population text z")
    rx = np.asarray(target_x, dtype=np.float64) / offline_prob(ref_x, offline_a)
    rz = tz / offline_prob(ref_z, offline_a)
    return np.mean(rx[:, None] / rz[None, :] > gamma, axis=1)


def text_signal(mean_logprob: np.ndarray) -> np.ndarray:
    """A text's signal: ``exp(mean token log-probability)``, its per-token geometric mean probability.

    Example:
        >>> text_signal(np.log(np.array([0.25]))).tolist()
        [0.25]
    """
    return np.exp(np.asarray(mean_logprob, dtype=np.float64))
