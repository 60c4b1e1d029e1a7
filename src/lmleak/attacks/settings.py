"""The settings of the canary and extraction attacks: ``lmleak exposure``, ``lmleak extract`` and
``lmleak dp-audit run``'s options, and the audit YAML's ``analyses.exposure``, ``analyses.extract``
and ``analyses.dp_audit`` (frozen dataclasses whose fields generate the options, issue 34).

Light, as :mod:`lmleak.attacks.mia_settings`: the CLI imports this module to build its options, so
it imports no numpy, model or torch; the attacks themselves (:mod:`~lmleak.attacks.exposure`,
:mod:`~lmleak.attacks.extraction`, :mod:`~lmleak.attacks.dp_audit`) import their settings from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lmleak.data.canaries import CANARY_DESIGNS, CRAFTED_PREFIX
from lmleak.errors import ConfigError, DataFileError, check_number
from lmleak.settings import Settings, setting


@dataclass(frozen=True)
class ExposureSettings(Settings):
    """Settings of canary exposure: ``lmleak exposure``'s options, the audit's ``analyses.exposure``
    and the API's :class:`~lmleak.api.ExposureOptions` (checked once, when built).

    Attributes:
        alphabet: the secrets' alphabet (None: digits, or the alphabet each canary records).
        extrapolate: add the skew-normal estimate beside the exact ranks (Carlini et al. 2019 §4.3).
        sample_size: candidates sampled for that estimate.
        max_candidates: the largest candidate space ranked exactly; larger ones are estimated (0:
            every format; the exact trie walk of 10^6 candidates costs a pretrained model on a CPU
            far too long).
        seed: seeds the estimate's sample and the placebos.
        placebos: never-inserted secrets per format ranked beside the canaries, the headline's null
            (None: as many as the format's canaries; 0: none); a placebo is not memorised, so its
            exact rank costs a near-complete walk of the candidates (issue 26).
        canary_design: ``random`` or ``crafted`` (:mod:`lmleak.data.canaries`), checked against what
            ``canaries.jsonl`` records (None: as recorded).
    """

    alphabet: str | None = setting(None, help="Alphabet of the secrets (default: digits).")
    extrapolate: bool = setting(False, help="Add the skew-normal estimate (Carlini et al. §4.3).")
    sample_size: int = setting(
        5000,
        help="Candidates sampled for the skew-normal fit.",
        ge=2,
        note="...fitted on this many random candidates",
    )
    max_candidates: int = setting(
        10_000_000,
        help="Largest |R| ranked exactly; larger formats are extrapolated (0: every one).",
        ge=0,
        note="formats with more candidates: extrapolated rank (skew-normal fit), not exact",
    )
    seed: int = setting(0, help="Random seed (same seed, same result).", ge=0, le=2**32 - 1)
    placebos: int | None = setting(
        None,
        help="Never-inserted secrets ranked beside the canaries, per format (default: as many as its "
        "canaries; 0: none).",
        ge=0,
        note="never-inserted secrets ranked beside them, per format (null: as many as canaries; 0: none)",
    )
    canary_design: str | None = setting(
        None,
        help="random or crafted: the design the canaries were drawn with, checked against the file "
        "(default: as canaries.jsonl records it); recorded in the summary.",
        choices=CANARY_DESIGNS,
    )


@dataclass(frozen=True)
class ExtractSettings(Settings):
    """Settings of one extraction run: ``lmleak extract``'s options and the audit's
    ``analyses.extract`` (checked once, when built; stored in the run's summary).

    ``prefixes`` names the prompts' file; the prompts themselves are read by :func:`~lmleak.attacks.extraction.run_extraction`
    (or given to it) and recorded in the summary's ``config.prefixes``. ``dedup_threshold`` and
    ``temperature`` are the library's alone.
    """

    num_samples: int = setting(1000, help="Samples to generate.", ge=1)
    max_new_tokens: int = setting(64, help="Tokens generated per sample.", ge=1)
    top_k: int = setting(40, help="Top-k sampling.", ge=1)
    temperature_start: float = setting(10.0, help="Initial softmax temperature (1: no decay).", gt=0)
    temperature_decay: int = setting(
        20, help="Generated tokens over which the temperature decays linearly to 1.", ge=0
    )
    prefixes: str | None = setting(
        None, help="A public text file (one prompt per line), or 'empty' (BOS only; the default)."
    )
    window: int = setting(50, help="Sliding-window size (tokens) of the window metric.", ge=1)
    top_n: int = setting(100, help="Deduplicated candidates verified per metric.", ge=1)
    min_match_tokens: int = setting(32, help="Longest corpus match (tokens) that counts as memorised.", ge=1)
    # (n, p)-discoverable extraction over training prefixes
    discoverable_docs: int = setting(
        100, help="Training documents for (n,p)-discoverable extraction (0: skip).", ge=0
    )
    prefix_tokens: int = setting(32, help="Discoverable: prefix length.", ge=1)
    suffix_tokens: int = setting(32, help="Discoverable: suffix length.", ge=1)
    n: int = setting(100, help="Discoverable: samples an attacker draws.", ge=1)
    p: float = setting(0.5, help="Discoverable: probability threshold.", gt=0, le=1)
    seed: int = setting(0, help="Sampling seed.", ge=0, le=2**32 - 1)
    dedup_threshold: float = setting(
        0.5, help="Shared word 3-grams that make a near duplicate.", ge=0, le=1, cli=False, yaml=False
    )
    temperature: float = setting(1.0, help="Discoverable: sampling temperature.", gt=0, cli=False, yaml=False)

    def prompts(self) -> list[str]:
        """The prompts of the ``prefixes`` file (:func:`read_prefixes`); none for ``empty`` or None."""
        return [] if self.prefixes in (None, "empty") else read_prefixes(str(self.prefixes))


def read_prefixes(path: str | Path) -> list[str]:
    """Non-empty lines of a public text file, the prompts of §5.1.1's internet-text strategy."""
    p = Path(path)
    if not p.is_file():
        raise DataFileError(
            "file does not exist", path=p, field="prefixes", hint="give a text file, or 'empty'"
        )
    lines = [line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        raise DataFileError(
            "no non-empty lines", path=p, field="prefixes", hint="one prompt per line, or 'empty'"
        )
    return lines


#: The prefix of the random design's canaries.
DEFAULT_PREFIX = "My ID is: "
#: The privacy units a one-run audit can bound: one training sequence, or one person.
PRIVACY_UNITS = ("sequence", "user")
#: Documents per canary user of a user-level audit when none is given.
CANARY_DOCUMENTS = 4


@dataclass(frozen=True)
class DPAuditSettings(Settings):
    """One audit run: ``m`` canaries ``prefix + <digits random digits>``, ``r`` guesses (``None``:
    ``m // 2``), the bound's ``delta`` (``None``: the accountant's δ, else 1e-5) and ``confidence``;
    the options of ``lmleak dp-audit run`` and the audit YAML's ``analyses.dp_audit``.

    ``placebo``: draw, score and guess the canaries exactly the same way but train on none of them;
    the model then carries no information about the coin flips, so the bound must come out 0
    (with probability at least ``confidence``): a check of the whole pipeline (the CLI's, not a
    YAML key: an audit's stage bounds the model's recipe, never a null run).

    ``privacy_unit``: what one canary is, and so what the bound is about. ``sequence``: a canary is
    one document (one training sequence) of its own user. ``user``: a canary is a *user* with
    ``canary_documents`` documents carrying the same secret, included or left out as a whole
    (issue 27 item 5); the bound is then over people.

    ``canary_design``: ``random`` (digits) or ``crafted`` (Panda et al. 2025: the same draws as
    rune secrets behind a designed prefix, new tokens of the vocabulary; :mod:`lmleak.data.canaries`)."""

    m: int = setting(256, help="Canaries, each included with probability 1/2 (recorded).", ge=1)
    r: int | None = setting(
        None, help="Guesses: r/2 most likely 'in', r/2 least likely 'out' (default m/2).", ge=0
    )
    delta: float | None = setting(
        None, help="The bound's delta (default: the accountant's, else 1e-5).", ge=0, le=1
    )
    confidence: float = setting(0.95, help="Confidence of the lower bound.", gt=0, lt=1)
    prefix: str = setting(DEFAULT_PREFIX, help="The canaries' prefix.", cli=False, yaml=False)
    digits: int = setting(6, help="Digits of a secret.", ge=1, le=18, cli=False, yaml=False)
    seed: int = setting(0, help="Seed of the canaries, their inclusion and training.", ge=0, le=2**32 - 1)
    placebo: bool = setting(
        False, help="Train on no canary (a null run: the bound must be 0); all else the same.", yaml=False
    )
    privacy_unit: str = setting(
        "sequence",
        help="What one canary is, and the unit of the bound: sequence (one document) or user "
        "(a person with --canary-documents documents carrying the same secret).",
        choices=PRIVACY_UNITS,
    )
    canary_documents: int = setting(
        CANARY_DOCUMENTS, help="--privacy-unit user: documents per canary user.", ge=1
    )
    canary_design: str = setting(
        "random",
        help="random ('My ID is: <6 digits>') or crafted (Panda et al. 2025: the same draws as "
        "new-token rune secrets behind a designed prefix).",
        choices=CANARY_DESIGNS,
    )

    @property
    def canary_prefix(self) -> str:
        """The prefix the canaries get: :data:`~lmleak.data.canaries.CRAFTED_PREFIX` for crafted
        canaries unless another ``prefix`` than the default was asked for."""
        if self.canary_design == "crafted" and self.prefix == DEFAULT_PREFIX:
            return CRAFTED_PREFIX
        return self.prefix

    @property
    def documents_per_canary(self) -> int:
        """Training documents of one canary: ``canary_documents`` for a user, 1 for a sequence."""
        return self.canary_documents if self.privacy_unit == "user" else 1

    def check(self) -> None:
        """The rules across fields, checked before any canary is drawn or model trained."""
        if 10**self.digits < self.m:
            raise ConfigError(f"cannot draw {self.m} distinct {self.digits}-digit secrets", field="m")
        if self.r is not None:
            check_number(self.r, "r", ge=0, le=self.m, integer=True, hint="guesses r <= canaries m")
