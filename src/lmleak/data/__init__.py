"""Corpora: documents owned by users, their loaders, synthetic corpora and canaries."""

from lmleak.data.corpus import Corpus, Document

__all__ = ["Corpus", "Document"]
