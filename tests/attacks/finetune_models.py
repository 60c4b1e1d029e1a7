"""The texts and the two fake models the fine-tune-vs-base tests (``test_wbc``, ``test_rmia``) share:
a "fine-tune" that saw three of the texts twice, and its "base" that saw each text once."""

from __future__ import annotations

from functools import cache

from lmleak.models.fake import FakeLM

TEXTS = [
    "hello my name is ada and my phone is 555 0100",
    "thank you very much for the call today",
    "my order number is 4412 and it is late again",
    "please ship it to 12 example road before friday",
    "ok",
]
POPULATION = ["thank you for the order", "my phone is late", "please call me friday"]


@cache
def target_and_base() -> tuple[FakeLM, FakeLM]:
    """The fine-tune (``TEXTS[:3]`` twice, the population once) and its base (every text once)."""
    target = FakeLM.from_texts(TEXTS[:3] * 2 + POPULATION, order=2, name="target")
    base = FakeLM.from_texts(TEXTS + POPULATION, order=2, name="base")
    return target, base
