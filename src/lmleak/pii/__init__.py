"""PII detection and redaction policies (paper 002 section 3.2, paper 003 appendix A.2).

Detectors return :class:`~lmleak.pii.spans.PiiSpan` lists; policies (:func:`get_policy`) are
detectors composed and named for the CRT pre-processing in :mod:`lmleak.train.split`.
"""

from lmleak.pii.spans import MASK, Detector, PiiSpan, merge_spans

__all__ = ["MASK", "Detector", "PiiSpan", "merge_spans"]
