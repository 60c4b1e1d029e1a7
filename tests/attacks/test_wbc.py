"""WBC (fast-mia's window-based comparison) against the window loop and hand-worked examples."""

from __future__ import annotations

import numpy as np
import pytest

from lmleak.attacks.mia_methods import MethodOptions, score_methods
from lmleak.attacks.wbc import wbc_score, window_share
from tests.attacks.finetune_models import TEXTS, target_and_base
from tests.attacks.test_mia_methods import _slow_token_logprobs


@pytest.fixture(scope="module")
def target():
    return target_and_base()[0]


@pytest.fixture(scope="module")
def base():
    return target_and_base()[1]


def _slow_wbc(target_lp, ref_lp, windows):
    """fast-mia's rule written out: cut to the common length, every window of w (cut to the length)
    tokens, count the windows whose reference loss sum is strictly larger, average the shares."""
    n = min(len(target_lp), len(ref_lp))
    if n == 0:
        return 0.0
    shares = []
    for w in windows:
        w = min(w, n)
        hits = 0
        for i in range(n - w + 1):
            t = sum(-x for x in target_lp[i : i + w])
            r = sum(-x for x in ref_lp[i : i + w])
            hits += r > t
        shares.append(hits / (n - w + 1))
    return sum(shares) / len(shares)


# ----------------------------------------------------------------------------------- WBC
def test_wbc_on_a_hand_worked_example():
    t, r = np.log([0.5, 0.5, 0.9]), np.log([0.4, 0.6, 0.5])
    # losses t = .693 .693 .105, r = .916 .511 .693
    # w=1: tokens 0 and 2 (2/3); w=2: 1.427 > 1.386 and 1.204 > .798 (1); w=5 cut to 3: 2.12 > 1.49 (1)
    assert wbc_score(t, r, (1, 2, 5)) == pytest.approx((2 / 3 + 1 + 1) / 3)
    assert window_share(t, t, 1) == 0.0  # a tie counts against membership
    assert window_share(t, r[:2], 2) == 1.0  # cut to the common length: one window
    assert wbc_score(np.array([]), r) == 0.0
    with pytest.raises(ValueError, match="window"):
        window_share(t, r, 0)


def test_wbc_vectorised_equals_the_window_loop_on_random_losses():
    rng = np.random.default_rng(0)
    for n, m in [(1, 1), (7, 7), (30, 25), (3, 40)]:
        t, r = -rng.exponential(size=n), -rng.exponential(size=m)
        assert wbc_score(t, r) == pytest.approx(_slow_wbc(t, r, (1, 5, 10, 20)), abs=1e-12)


def test_wbc_in_score_methods_equals_the_loop_over_per_prefix_log_probs(target, base):
    sc = score_methods(target, TEXTS, MethodOptions(methods=("wbc",), reference=base, wbc_windows=(1, 3, 20)))
    for i, t in enumerate(TEXTS):
        want = _slow_wbc(_slow_token_logprobs(target, t), _slow_token_logprobs(base, t), (1, 3, 20))
        assert sc["wbc"][i] == pytest.approx(want, abs=1e-12)


def test_wbc_equals_the_published_formulation_by_convolution():
    """fast-mia sums each window by ``np.convolve(losses, ones(w), "valid")``; the same shares follow."""
    rng = np.random.default_rng(1)
    for n in (4, 19, 60):
        t, r = -rng.exponential(size=n), -rng.exponential(size=n)
        shares = []
        for w in (1, 5, 10, 20):
            k = np.ones(min(w, n))
            shares.append(np.mean(np.convolve(-r, k, mode="valid") > np.convolve(-t, k, mode="valid")))
        assert wbc_score(t, r) == pytest.approx(float(np.mean(shares)), abs=1e-12)
