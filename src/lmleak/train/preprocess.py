"""CRT pre-processing written to a run folder (paper 002, Algorithm 1 lines 1-4).

``lmleak dedup``, ``lmleak redact`` and ``lmleak split`` call :func:`dedup_to_dir`,
:func:`redact_to_dir` and :func:`split_to_dir` with the corpus file's path (or give a loaded
:class:`~lmleak.data.corpus.Corpus`); each loads the file before it creates the output folder, writes its corpora and its summary JSON
(``dedup.json``, ``redaction.json``, ``split.json``) and returns a :class:`PreprocessSummary`,
which the CLI only prints. The work itself is :mod:`lmleak.train.dedup`,
:mod:`lmleak.train.redact` and :mod:`lmleak.train.split`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Corpus
from lmleak.data.loaders import load_corpus
from lmleak.pii.spans import Detector
from lmleak.progress import log
from lmleak.runs import secure_dir, write_summary
from lmleak.train.dedup import dedup_corpus
from lmleak.train.redact import redact_corpus
from lmleak.train.sentences import sentence_corpus
from lmleak.train.split import crt_split
from lmleak.words import plural


@dataclass(frozen=True)
class PreprocessSummary:
    """What one pre-processing stage did: its statistics, what it removed per entity, its files.

    Example:
        >>> s = PreprocessSummary("dedup", "c.jsonl", {"masked": 2}, {"DUPLICATE": 2}, {"corpus": Path("d/x")})
        >>> s.to_dict()
        {'stage': 'dedup', 'corpus': 'c.jsonl', 'masked': 2, 'removed': {'DUPLICATE': 2}, 'files': {'corpus': 'd/x'}}
    """

    stage: str
    corpus: str
    stats: dict[str, Any]
    removed: dict[str, int]
    files: dict[str, Path]

    def to_dict(self) -> dict[str, Any]:
        """The summary JSON: ``stage``, ``corpus``, the statistics, ``removed`` and ``files``."""
        d: dict[str, Any] = {"stage": self.stage, "corpus": self.corpus, **self.stats}
        d["removed"] = dict(self.removed)  # a ``removed`` in the statistics keeps its place
        d["files"] = {k: str(v) for k, v in self.files.items()}
        return d

    @property
    def out_dir(self) -> Path:
        """The folder the stage wrote to."""
        return Path(next(iter(self.files.values()))).parent


def _loaded(corpus: Corpus | str | Path, source: str | None) -> tuple[Corpus, str]:
    """The corpus (read from its file when given a path) and the name the summary gives it."""
    if isinstance(corpus, Corpus):
        return corpus, source if source is not None else "(in memory)"
    return load_corpus(corpus), source if source is not None else str(corpus)


def dedup_to_dir(
    corpus: Corpus | str | Path,
    out_dir: str | Path,
    *,
    source: str | None = None,
    mode: str = "exact",
    fp_rate: float = 1e-6,
) -> PreprocessSummary:
    """Sentence-split, mask repeated sentences; write ``deduped.jsonl`` and ``dedup.json``.

    ``source`` names the corpus in the summary (default: its path as given).
    """
    corpus, source = _loaded(corpus, source)
    log(f"splitting {plural(len(corpus), 'document')} into sentences")
    d = secure_dir(out_dir)
    deduped, st = dedup_corpus(sentence_corpus(corpus), mode=mode, fp_rate=fp_rate)
    deduped.write_jsonl(d / "deduped.jsonl")
    result = PreprocessSummary(
        "dedup", source, st.to_dict(), {"DUPLICATE": st.masked}, {"corpus": d / "deduped.jsonl"}
    )
    write_summary(d, result.to_dict(), name="dedup.json")
    return result


def redact_to_dir(
    corpus: Corpus | str | Path, out_dir: str | Path, policy: Detector, *, source: str | None = None
) -> PreprocessSummary:
    """Sentence-split, replace every span ``policy`` finds; write ``redacted.jsonl`` and ``redaction.json``."""
    corpus, source = _loaded(corpus, source)
    d = secure_dir(out_dir)
    redacted, st = redact_corpus(sentence_corpus(corpus), policy)
    redacted.write_jsonl(d / "redacted.jsonl")
    stats = st.to_dict()
    result = PreprocessSummary("redact", source, stats, stats["removed"], {"corpus": d / "redacted.jsonl"})
    write_summary(d, result.to_dict(), name="redaction.json")
    return result


def split_to_dir(
    corpus: Corpus | str | Path,
    out_dir: str | Path,
    policy: Detector,
    *,
    source: str | None = None,
    conservative: str | None = None,
    dedup: str = "exact",
    fp_rate: float = 1e-6,
) -> PreprocessSummary:
    """Algorithm 1 lines 1-4; write ``redacted.jsonl`` (D''), ``public.jsonl``, ``private.jsonl``, ``split.json``.

    ``dedup`` is ``exact``, ``bloom`` or ``none``.
    """
    corpus, source = _loaded(corpus, source)
    d = secure_dir(out_dir)
    res = crt_split(corpus, policy, conservative=conservative,
                    dedup=None if dedup == "none" else dedup, bloom_fp_rate=fp_rate)  # fmt: skip
    files = {"redacted": d / "redacted.jsonl", "public": d / "public.jsonl", "private": d / "private.jsonl"}
    assert res.redacted is not None  # crt_split always returns D''
    res.redacted.write_jsonl(files["redacted"])
    res.public.write_jsonl(files["public"])
    res.private.write_jsonl(files["private"])
    removed = dict(res.stats["redaction"]["removed"])
    if res.stats.get("dedup"):
        removed["DUPLICATE"] = res.stats["dedup"]["masked"]
    result = PreprocessSummary("split", source, dict(res.stats), removed, files)
    write_summary(d, result.to_dict(), name="split.json")
    return result
