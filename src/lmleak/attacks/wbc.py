"""Window-based comparison (WBC): a fine-tune against its base, window by window.

A fine-tune that memorised a text is more confident than its base on most stretches of it, not
only on average. WBC slides windows over the two models' per-token losses and scores the share of
windows where the target's summed loss is below the reference's, averaged over several window sizes.

The conventions are those of the published implementation, fast-mia's ``src/methods/wbc.py``
(Nikkei, Apache-2.0; implemented here from its description, not copied):

- losses are the negative per-token log-probabilities of the text under each model; the two
  sequences are cut to the shorter one's length ``L`` (the models are meant to share a tokenizer);
- the window sizes default to ``(1, 5, 10, 20)``; a size longer than ``L`` is cut to ``L``;
- the windows are every contiguous run of ``w`` tokens (``L - w + 1`` of them, stride 1), each
  summed;
- a window counts when the reference's summed loss is **strictly** greater than the target's
  (a tie counts against membership);
- the score is the mean over window sizes of each size's share of counted windows, in ``[0, 1]``;
  an empty text scores 0.

Higher = more likely a member.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: fast-mia's default window sizes.
DEFAULT_WINDOWS: tuple[int, ...] = (1, 5, 10, 20)


def window_share(target_logprobs: np.ndarray, ref_logprobs: np.ndarray, window: int) -> float:
    """Share of the stride-1 windows of ``window`` tokens (cut to the common length) whose summed
    loss is strictly lower under the target than under the reference; 0 for an empty text.

    Example:
        >>> window_share(np.log([0.5, 0.5, 0.9]), np.log([0.4, 0.6, 0.5]), 1)   # 2 of 3 tokens
        0.6666666666666666
        >>> window_share(np.log([0.5, 0.5, 0.9]), np.log([0.4, 0.6, 0.5]), 2)   # windows [0:2], [1:3]
        1.0
    """
    if window < 1:
        raise ValueError(f"window sizes must be >= 1, got {window}")
    n = min(len(target_logprobs), len(ref_logprobs))
    if n == 0:
        return 0.0
    w = min(int(window), n)
    t = -np.asarray(target_logprobs[:n], dtype=np.float64)
    r = -np.asarray(ref_logprobs[:n], dtype=np.float64)
    # each window's sum, summed in order from its first token (no running-total rounding)
    idx = np.arange(n - w + 1)[:, None] + np.arange(w)[None, :]
    return float(np.mean(r[idx].sum(axis=1) > t[idx].sum(axis=1)))


def wbc_score(
    target_logprobs: np.ndarray, ref_logprobs: np.ndarray, windows: Sequence[int] = DEFAULT_WINDOWS
) -> float:
    """WBC: the mean over ``windows`` of :func:`window_share` (fast-mia's conventions, module docstring).

    Example:
        >>> wbc_score(np.log([0.5, 0.5, 0.9]), np.log([0.4, 0.6, 0.5]), (1, 2))   # (2/3 + 1) / 2
        0.8333333333333333
    """
    if not windows:
        return 0.0
    return float(np.mean([window_share(target_logprobs, ref_logprobs, w) for w in windows]))
