"""The leakage report's one expensive pass (the token ledger) and the corpus index (paper 001 §4)."""

from lmleak.ledger.index import CorpusIndex
from lmleak.ledger.ledger import Ledger, build_ledger, read_ledger

__all__ = ["CorpusIndex", "Ledger", "build_ledger", "read_ledger"]
