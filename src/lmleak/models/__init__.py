"""Language-model backends behind one capability-gated protocol (see :mod:`lmleak.models.base`)."""

from lmleak.models.base import (
    Capability,
    Generator,
    LanguageModel,
    Scorer,
    SpanScore,
    TokenStats,
    TopKPredictor,
    WhiteBox,
    require,
)

__all__ = [
    "Capability",
    "Generator",
    "LanguageModel",
    "Scorer",
    "SpanScore",
    "TokenStats",
    "TopKPredictor",
    "WhiteBox",
    "require",
]
