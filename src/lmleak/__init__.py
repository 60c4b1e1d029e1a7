"""lmleak: privacy auditing of language models.

The public API is small and pinned by ``tests/test_public_api.py``; heavy dependencies are imported
only by the functions that need them.
"""

from lmleak.data.corpus import Corpus, Document
from lmleak.errors import CapabilityError, InputError, LmleakError, ModelError
from lmleak.models.base import Capability, LanguageModel, require

__version__ = "0.1.0"

__all__ = [
    "Capability",
    "CapabilityError",
    "Corpus",
    "Document",
    "InputError",
    "LanguageModel",
    "LmleakError",
    "ModelError",
    "require",
    "__version__",
]
