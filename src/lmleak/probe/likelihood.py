"""Reconstruction likelihood of a target PII given a prompt (paper 003 §3.4, Eq. 2; appendix B.1.1, Eq. 4).

Computed teacher-forced through :meth:`Scorer.score_ids` in batches (never by sampling).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lmleak.models.base import Capability, require


def split_prompt(prompt: str, target: str) -> tuple[str, str]:
    """The exact text ``prompt + target`` (a space added if the prompt has none) split so that the
    target carries its leading space: BPE and word tokenizers attach the space to the next token.

    Example:
        >>> split_prompt("The email address of Ann is ", "a@x.org")
        ('The email address of Ann is', ' a@x.org')
        >>> split_prompt("Ann goes to university called", "MIT")
        ('Ann goes to university called', ' MIT')
    """
    return prompt.rstrip(), " " + target.strip()


def eq2_eq4(total_logprob: np.ndarray, num_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 2 (product of token probabilities = exp of the summed log-probs) and Eq. 4 (its geometric
    mean per target token).

    Example:
        >>> l, n = eq2_eq4(np.log([0.5 * 0.2]), np.array([2]))
        >>> round(float(l[0]), 6), round(float(n[0]), 6)
        (0.1, 0.316228)
    """
    lp = np.asarray(total_logprob, dtype=np.float64)
    n = np.maximum(np.asarray(num_tokens, dtype=np.float64), 1.0)
    return np.exp(lp), np.exp(lp / n)


def target_likelihoods(
    model: Any, prompts: Sequence[str], targets: Sequence[str], *, batch: int = 64
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(likelihood Eq. 2, normalised likelihood Eq. 4, summed log-prob) for each (prompt, target).

    Raises:
        CapabilityError: the model gives no scores (e.g. a text-only API).
    """
    require(model, Capability.SCORE, attack="probe likelihood (paper 003 Eq. 2)")
    enc = model.tokenizer.encode
    lps: list[float] = []
    ntok: list[int] = []
    for i in range(0, len(prompts), batch):
        ctx, cont = [], []
        for p, t in zip(prompts[i : i + batch], targets[i : i + batch], strict=True):
            a, b = split_prompt(p, t)
            ctx.append(enc(a))
            cont.append(enc(b))
        lps.extend(float(v) for v in model.score_ids(ctx, cont))
        ntok.extend(len(c) for c in cont)
    lp = np.array(lps, dtype=np.float64)
    lik, norm = eq2_eq4(lp, np.array(ntok))
    return lik, norm, lp


def null_permutation(n: int, seed: int = 0) -> np.ndarray:
    """A seeded derangement of ``range(n)``: subject i is paired with another subject's PII as the null
    a_{m,Null} (§4.2 "randomly selected PII instances"). For n < 2 the identity (no null possible).

    Example:
        >>> perm = null_permutation(5, seed=1)
        >>> sorted(perm.tolist()), bool((perm != np.arange(5)).all())
        ([0, 1, 2, 3, 4], True)
    """
    if n < 2:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    while True:
        p = rng.permutation(n)
        if (p != np.arange(n)).all():
            return p
