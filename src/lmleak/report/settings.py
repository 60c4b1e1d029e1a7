"""The settings of ``lmleak report``: :class:`ReportSettings` (the report's, also the audit YAML's
``analyses.report``) and :class:`LedgerEngine` (where its ledger pass runs), issue 34.

Light: the CLI imports this module to build ``report``'s options, so it imports neither the ledger
nor a model (torch); :mod:`~lmleak.report.leakage` and :mod:`~lmleak.report.engine`, which run the
report, import their settings from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lmleak.errors import ConfigError, check_number
from lmleak.pii.policies import POLICY_NAMES
from lmleak.report.metrics import DEFAULT_KS
from lmleak.report.null import HEADLINE_PII_TYPES
from lmleak.settings import Settings, setting
from lmleak.shards import ShardEngine

if TYPE_CHECKING:
    from lmleak.ledger.ledger import ModelSpec


#: Occurrences per sequence the public model scores: the ones where the audited model is most confident
#: (lowest perplexity), where the ratio PP_public / PP_lm tends to peak.
PUBLIC_OCCURRENCES = 8

#: Unique PII sequences shorter than this many tokens are counted but not headlined: a 2-4 token
#: fragment ("555-01", "@example.") is what any model completes, a whole address or e-mail is not.
MIN_TOKENS = 5


@dataclass(frozen=True)
class ReportSettings(Settings):
    """Settings of one leakage report, the options of ``lmleak report`` and the audit YAML's
    ``analyses.report`` (issue 34); its ``repr`` is stored in ``summary.json``.

    ``k``: the first one gives the headline metrics. ``p``: None, no filter. ``public_context_tokens``
    bounds the report's cost after the ledger; None: the least context every ledger token had (the
    model's window overlap), at most :data:`~lmleak.report.features.PUBLIC_CONTEXT_TOKENS` (see
    :func:`~lmleak.report.leakage.public_context`). ``pii_policy`` (:func:`lmleak.pii.policies.get_policy`): ``none``
    (None) writes no PII columns. ``headline_pii_types``: the kinds the leaked-PII headline counts
    (the others, dates and bare numbers, are counted by type and shown, not headlined); each given
    item may hold several, comma-separated, and they are upper-cased. ``redact``,
    ``redact_key_file`` (:mod:`lmleak.report.redaction`) and ``public_model`` are the audit's
    top-level keys, not the section's.
    """

    k: tuple[int, ...] = setting(
        DEFAULT_KS,
        help="Top-k of the tab attack; several allowed: --k 1 3 (default: 1 3, or what --api-top-k allows).",
        note="top-k of the tab attack",
    )
    t: float = setting(
        1.0,
        help="Curation threshold on PP_public/PP_lm.",
        ge=0,
        note="curated = unique sequences with PP_public / PP_model >= t (paper 001 §5)",
    )
    p: int | None = setting(
        5,
        help="p filter: keep sequences with user count in S < p.",
        ge=0,
        note="k-anonymity filter: user count in S < p",
    )
    redact: bool = setting(
        False, help="No text, token ids or plain ids in the run; the ledger is not kept.", yaml=False
    )
    redact_key_file: str | None = setting(
        None,
        help="HMAC key for redacted ids, kept outside the run "
        "(default: $LMLEAK_REDACT_KEY, else a random key that is discarded).",
        yaml=False,
    )
    public_scope: str = setting(
        "unique", help="Occurrences the public model scores: unique | all.", choices=("unique", "all")
    )
    max_contexts: int = setting(5, help="Context texts kept per sequence.", ge=0)
    shard_size: int = setting(256, help="Documents per ledger shard.", ge=1, cli=False, yaml=False)
    index_cache: str | None = setting(
        None, help="Folder to keep the memory-mapped corpus index in.", yaml=False
    )
    public_context_tokens: int | None = setting(
        None,
        help="Tokens before a sequence that the public model sees with it (default: the "
        "ledger's window overlap, at most 128).",
        ge=0,
        note="context the public model sees per sequence (null: the ledger's overlap, <= 128)",
    )
    public_occurrences: int = setting(
        PUBLIC_OCCURRENCES,
        help="Occurrences per sequence the public model scores: the audited model's most "
        "confident ones (0: all).",
        ge=0,
        note="occurrences per sequence the public model scores (the most confident ones)",
    )
    pii_policy: str | None = setting(
        "regex",
        help="PII policy that marks leaked PII (regex, balanced, ...; 'none': off).",
        choices=(*POLICY_NAMES, "none"),
        note="leaked PII = user-unique sequences overlapping this policy's detections",
    )
    min_tokens: int = setting(
        MIN_TOKENS,
        help="Unique PII sequences shorter than this are counted, not headlined.",
        ge=1,
        note="...headlined when at least this many tokens long (shorter ones counted apart)",
    )
    headline_pii_types: tuple[str, ...] | None = setting(
        HEADLINE_PII_TYPES,
        help="PII kinds the leaked-PII headline counts, comma-separated (default: the person-identifying "
        "ones: EMAIL, PHONE, PERSON, ADDRESS, ids; dates and bare numbers are counted, not headlined).",
    )
    leave_out_folds: int | None = setting(
        None, help="Leave-out models to train (default: 1, or 2 if most users leak).", ge=1
    )

    def check(self) -> None:
        """Each k a whole number >= 1 (repeats dropped), PII kinds named, ``none`` as None."""
        if not self.k:
            raise ConfigError("empty list: give at least one k", field="k", hint="e.g. --k 1 3")
        for k in self.k:
            check_number(k, "k", ge=1, integer=True, hint="each k >= 1 (top-k of the tab attack)")
        object.__setattr__(self, "k", tuple(dict.fromkeys(self.k)))
        if self.pii_policy == "none":
            object.__setattr__(self, "pii_policy", None)
        kinds = HEADLINE_PII_TYPES if self.headline_pii_types is None else self.headline_pii_types
        if isinstance(kinds, str):
            kinds = (kinds,)
        kinds = tuple(t.strip().upper() for item in kinds for t in str(item).split(",") if t.strip())
        if not kinds:
            raise ConfigError(
                "name at least one PII kind", field="headline_pii_types", hint="e.g. EMAIL,PHONE,PERSON"
            )
        object.__setattr__(self, "headline_pii_types", kinds)
        if self.redact_key_file is not None and not self.redact:
            raise ConfigError("--redact-key-file needs --redact", field="redact_key_file")

    @property
    def headline_kinds(self) -> tuple[str, ...]:
        """``headline_pii_types``, never None (:meth:`check` gave a YAML ``null`` the default)."""
        return self.headline_pii_types or HEADLINE_PII_TYPES

    @property
    def ks(self) -> tuple[int, ...]:
        """``k`` (its name before issue 34)."""
        return self.k


ENGINES = ("local", "ray", "vllm")


@dataclass(frozen=True)
class LedgerEngine(ShardEngine):
    """Where the ledger pass runs (the Ray settings when it runs on Ray, as every sharded pass's
    :class:`~lmleak.shards.ShardEngine`, or vLLM), and how the model spec is loaded there: the Ray
    actors and vLLM load their own copies (options of ``lmleak report``).

    Example:
        >>> LedgerEngine("ray", num_workers=4).num_workers
        4
    """

    engine: str = setting(
        "local", help="Where the ledger pass runs: local | ray | vllm (see docs/vllm.md).", choices=ENGINES
    )
    allow_pickle: bool = setting(False, help="Allow pickled checkpoints (they can run code when loaded).")
    api_top_k: int | None = setting(None, help="Audit the model as a top-k-only black box.", ge=1)

    def check(self) -> None:
        if self.engine == "vllm" and self.api_top_k is not None:
            raise ConfigError(
                "--engine vllm scores the model itself", field="api_top_k", hint="use --engine local"
            )

    def spec(self, model: str) -> ModelSpec:
        """The recipe each copy of ``model`` is loaded from."""
        # lazy: the ledger imports the model backends (torch); the CLI imports these settings at start
        from lmleak.ledger.ledger import ModelSpec

        return ModelSpec(model, allow_pickle=self.allow_pickle, api_top_k=self.api_top_k)
