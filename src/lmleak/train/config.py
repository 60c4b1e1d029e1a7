"""Training settings, one frozen record per run (its ``repr`` is stored with the model):
:class:`TrainConfig` for a small model trained from scratch, :class:`FinetuneConfig` for a
fine-tune of a pretrained one (:mod:`lmleak.train.finetune`).

Defaults live in one place: :class:`FinetuneConfig` takes :class:`TrainConfig`'s for the fields
they share (not the schedule: a fine-tune's ``epochs``, ``batch_size`` and ``lr`` are smaller), and
:class:`TrainSettings`' are the records'; :func:`check_run` holds the rules both records share.

DP parameters use opacus's names verbatim: ``max_grad_norm``, ``noise_multiplier``,
``target_epsilon``, ``target_delta``; ``accountant`` is ``"prv"`` (default, tight) or ``"rdp"``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from types import SimpleNamespace
from typing import Any, Literal

from lmleak.errors import ConfigError, check_number
from lmleak.settings import Settings, setting

Mode = Literal["nodp", "dp", "crt", "sdp"]
MODES = ("nodp", "dp", "crt", "sdp")
PRIVACY_UNITS = ("user", "sequence")  # lmleak.train.units: what a DP guarantee protects
SAMPLERS = ("poisson", "shuffle")


def check_dp_settings(
    privacy_unit: str | None,
    max_sequences_per_user: int,
    sampler: str,
    health_check_steps: int,
    max_noise_to_signal: float,
) -> None:
    """The privacy-unit, sampler and health-check settings both configs share; ConfigError when wrong."""
    if privacy_unit is not None and privacy_unit not in PRIVACY_UNITS:
        raise ConfigError(
            f"unknown privacy unit {privacy_unit!r}", field="privacy_unit", hint="use user or sequence"
        )
    if max_sequences_per_user < 1:
        raise ConfigError(
            f"max_sequences_per_user {max_sequences_per_user} must be >= 1",
            field="max_sequences_per_user",
            hint="e.g. --max-sequences-per-user 4",
        )
    if sampler not in SAMPLERS:
        raise ConfigError(f"unknown sampler {sampler!r}", field="sampler", hint="use poisson or shuffle")
    if health_check_steps < 1 or not max_noise_to_signal > 0:
        raise ConfigError(
            "health_check_steps must be >= 1 and max_noise_to_signal > 0",
            field="health_check_steps",
            hint="e.g. --health-check-steps 10 --max-noise-to-signal 10000",
        )


def check_run(cfg: Any) -> None:
    """The rules :class:`TrainConfig` and :class:`FinetuneConfig` share (numbers, DP settings, the
    schedule, the held-out share, one of σ and ε for a DP mode); ConfigError when one is broken."""
    check_training_numbers(cfg)
    check_dp_settings(
        cfg.privacy_unit,
        cfg.max_sequences_per_user,
        cfg.sampler,
        cfg.health_check_steps,
        cfg.max_noise_to_signal,
    )
    if cfg.accountant not in ("prv", "rdp"):
        raise ConfigError(f"unknown accountant {cfg.accountant!r}", field="accountant", hint="use prv or rdp")
    if cfg.epochs < 1 or cfg.batch_size < 1 or cfg.seq_len < 2:
        raise ConfigError("epochs and batch_size must be >= 1 and seq_len >= 2", field="epochs")
    if not 0.0 <= cfg.holdout_users < 1.0:
        raise ConfigError(
            "holdout_users must be in [0, 1)",
            field="holdout_users",
            hint="e.g. --holdout-users 0.1, or 0 for none",
        )
    if cfg.mode in ("dp", "crt", "sdp") and (cfg.noise_multiplier is None) == (cfg.target_epsilon is None):
        raise ConfigError(
            f"mode {cfg.mode!r} needs exactly one of noise_multiplier and target_epsilon",
            field="noise_multiplier",
            hint="pass --noise-multiplier 1.0 or --target-epsilon 8",
        )


def check_training_numbers(cfg: Any) -> None:
    """The numbers :class:`TrainConfig` and the fine-tuner's config share, finite and in range before
    any work (a NaN noise multiplier once kept the accountant looping for minutes). A learning rate
    or noise multiplier of 0 is allowed here (tests compare gradients without updates or noise); the
    CLI asks for more than 0."""
    check_number(cfg.lr, "lr", ge=0, hint="e.g. --lr 2e-3")
    check_number(cfg.weight_decay, "weight_decay", ge=0)
    check_number(cfg.max_grad_norm, "max_grad_norm", gt=0, hint="e.g. --max-grad-norm 1.0")
    if cfg.noise_multiplier is not None:
        check_number(cfg.noise_multiplier, "noise_multiplier", ge=0, hint="e.g. --noise-multiplier 1.0")
    if cfg.target_epsilon is not None:
        check_number(cfg.target_epsilon, "target_epsilon", gt=0, hint="e.g. --target-epsilon 8")
    check_number(cfg.target_delta, "target_delta", gt=0, lt=1, hint="e.g. --delta 1e-5")
    check_number(cfg.seed, "seed", ge=0, integer=True)


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """How to train a small model.

    The privacy unit of DP modes (``privacy_unit``) is the user whenever the data has user ids
    (unless ``"sequence"`` is asked for): each step samples users, each contributes the mean gradient
    of up to ``max_sequences_per_user`` of their sequences, clipped as one (:mod:`lmleak.train.units`).
    At sequence level the unit is one training sequence (a chunk of at most ``seq_len`` tokens of one
    document); chunks never span documents, so no sequence mixes two users' data. ``batch_size``
    counts units (users or sequences) per step.
    """

    arch: Literal["gpt", "lstm"] = "gpt"
    mode: Mode = "nodp"
    epochs: int = 5
    batch_size: int = 16
    lr: float = 2e-3
    weight_decay: float = 0.0
    seq_len: int = 128
    tokenizer: Literal["word", "bpe"] | None = None  # None: bpe for gpt, word for lstm (paper 001 §6.1)
    vocab_size: int = 4000
    seed: int = 0
    holdout_users: float = 0.1  # share of USERS held out: validation, and the controls of MIA and probing
    snapshots: bool = False
    # small GPT shape
    n_embd: int = 128
    n_layer: int = 2
    n_head: int = 4
    # DP-SGD (dp, crt, sdp)
    max_grad_norm: float = 1.0
    noise_multiplier: float | None = None
    target_epsilon: float | None = None
    target_delta: float = 1e-5
    accountant: Literal["prv", "rdp"] = "prv"
    # per-sample clipping of the GPT: one backward pass (lmleak.train.bk) or Opacus' ghost clipping
    dp_clipping: Literal["bookkeeping", "ghost"] = "bookkeeping"
    # CRT / SDP: the redaction policy that decides what is private (see lmleak.pii.policies)
    policy: str | None = None
    # where the tokenizer is learnt (privacy.json's tokenizer_source): a public corpus file, or an
    # lmleak model folder whose tokenizer is reused; None: D_pub for CRT, the training text otherwise
    # (refused for dp/sdp unless tokenizer_from_private, since DP does not cover the vocabulary)
    tokenizer_from: str | None = None
    tokenizer_from_private: bool = False
    # CRT / SDP: a secrets.jsonl ground truth to measure the policy's miss rate gamma on the training text
    secrets: str | None = None
    # DP modes: what the guarantee protects (None: user whenever the data has user ids) and how steps sample
    privacy_unit: str | None = None
    max_sequences_per_user: int = 4
    sampler: str = "poisson"
    # DP modes: stop a run whose weights do not move or whose noise drowns the signal (lmleak.train.health)
    health_checks: bool = True
    health_check_steps: int = 10
    max_noise_to_signal: float = 1e4

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(
                f"unknown mode {self.mode!r}", field="mode", hint=f"use one of {', '.join(MODES)}"
            )
        check_run(self)
        check_number(self.vocab_size, "vocab_size", ge=1, integer=True)
        if self.arch not in ("gpt", "lstm"):
            raise ConfigError(f"unknown arch {self.arch!r}", field="arch", hint="use gpt or lstm")
        if self.n_layer < 1 or self.n_head < 1 or self.n_embd < 1 or self.n_embd % self.n_head:
            raise ConfigError(
                f"GPT width {self.n_embd} must be a positive multiple of the heads ({self.n_head}), "
                f"layers >= 1",
                field="width",
                hint="e.g. --width 256 --heads 8 --layers 4",
            )
        if self.dp_clipping not in ("bookkeeping", "ghost"):
            raise ConfigError(
                f"unknown dp_clipping {self.dp_clipping!r}",
                field="dp_clipping",
                hint="use bookkeeping (default) or ghost (Opacus)",
            )
        if self.mode == "sdp" and self.arch != "lstm":
            raise ConfigError(
                "selective DP (sdp) is the LSTM baseline of Shi et al. 2021",
                field="arch",
                hint="use --arch lstm",
            )

    @property
    def tokenizer_kind(self) -> Literal["word", "bpe"]:
        if self.tokenizer is not None:
            return self.tokenizer
        return "bpe" if self.arch == "gpt" else "word"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# the defaults the fine-tuner shares with the small models (its schedule, epochs/batch/lr, is its own)
_TRAIN_DEFAULT = SimpleNamespace(**{f.name: f.default for f in fields(TrainConfig)})

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
CLIPPING = ("auto", "bookkeeping", "hooks")


@dataclass(frozen=True)
class FinetuneConfig:
    """How to fine-tune a pretrained model (see the module docstring).

    ``lora`` is the adapter rank (ignored with ``full``); ``lora_alpha`` defaults to ``2 * lora``;
    ``lora_targets`` None picks :data:`DEFAULT_TARGETS` by architecture, else every ``nn.Linear``
    inside an attention block. ``max_steps`` caps the optimiser steps of each kind over the whole run
    (plain/public steps and private DP steps separately, so a CRT smoke run takes both; demos and
    smoke tests); the accountant counts the steps actually taken.
    """

    base: str
    mode: str = "nodp"
    lora: int = 8
    lora_alpha: float | None = None
    lora_dropout: float = 0.0
    lora_targets: tuple[str, ...] | None = None
    full: bool = False
    merge: bool = False
    epochs: int = 1
    batch_size: int = 8
    lr: float = 1e-3
    weight_decay: float = _TRAIN_DEFAULT.weight_decay
    seq_len: int = _TRAIN_DEFAULT.seq_len
    seed: int = _TRAIN_DEFAULT.seed
    holdout_users: float = _TRAIN_DEFAULT.holdout_users
    max_steps: int | None = None
    max_grad_norm: float = _TRAIN_DEFAULT.max_grad_norm
    noise_multiplier: float | None = None
    target_epsilon: float | None = None
    target_delta: float = _TRAIN_DEFAULT.target_delta
    accountant: str = _TRAIN_DEFAULT.accountant
    dp_clipping: str = "auto"
    policy: str | None = None
    secrets: str | None = None
    device: str | None = None
    precision: str = "auto"
    privacy_unit: str | None = None
    max_sequences_per_user: int = _TRAIN_DEFAULT.max_sequences_per_user
    sampler: str = _TRAIN_DEFAULT.sampler
    health_checks: bool = _TRAIN_DEFAULT.health_checks
    health_check_steps: int = _TRAIN_DEFAULT.health_check_steps
    max_noise_to_signal: float = _TRAIN_DEFAULT.max_noise_to_signal

    def __post_init__(self) -> None:
        if self.mode == "plain":
            object.__setattr__(self, "mode", "nodp")
        if self.mode not in MODES:
            raise ConfigError(
                f"unknown mode {self.mode!r}", field="mode", hint="use plain (nodp), dp, crt or sdp"
            )
        check_run(self)
        if self.lora_alpha is not None:
            check_number(self.lora_alpha, "lora_alpha", gt=0, hint="e.g. --lora-alpha 16")
        check_number(self.lora_dropout, "lora_dropout", ge=0, lt=1)
        if not self.full and self.lora < 1:
            raise ConfigError(
                f"LoRA rank {self.lora} must be >= 1", field="lora", hint="e.g. --lora 8, or --full"
            )
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"unknown precision {self.precision!r}",
                field="precision",
                hint="use auto, fp32, bf16 or fp16",
            )
        if self.dp_clipping not in CLIPPING:
            raise ConfigError(
                f"unknown dp_clipping {self.dp_clipping!r} for fine-tuning",
                field="dp_clipping",
                hint="use auto, bookkeeping or hooks (Opacus)",
            )
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError("max_steps must be >= 1", field="max_steps")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["lora_targets"] = list(self.lora_targets) if self.lora_targets else None
        return d


_MODEL, _DATA, _PRIVACY, _SCHEDULE = "Model", "Data", "Privacy", "Schedule"
# TrainSettings' defaults are the records': TrainConfig's, and FinetuneConfig's for the fine-tune-only fields
_DEFAULT = SimpleNamespace(**({f.name: f.default for f in fields(FinetuneConfig)} | vars(_TRAIN_DEFAULT)))


@dataclass(frozen=True)
class TrainSettings(Settings):
    """What ``lmleak train`` takes, declared once: its options are generated from these fields (in
    their panels; the long tail hidden behind ``--help-all``), ``--config train.yaml`` reads the same
    names, and :func:`lmleak.train.run.train_and_summarise` takes the object. :meth:`config` is the
    run's record: a :class:`TrainConfig` for a small model, a :class:`FinetuneConfig` with ``base``
    (whose rules are checked when the settings are built). Field names are the records' (opacus's for
    DP); the options keep their spellings (``n_layer`` is ``--layers``, ``target_delta`` ``--delta``).

    Example:
        >>> TrainSettings(epochs=2, n_layer=1).config().n_layer
        1
        >>> type(TrainSettings(base="smollm2-135m").config()).__name__
        'FinetuneConfig'
    """

    arch: str = setting(
        _DEFAULT.arch,
        help="gpt (small GPT-2) or lstm (paper 001's 2x128 LSTM).",
        choices=("gpt", "lstm"),
        panel=_MODEL,
    )
    n_layer: int = setting(
        _DEFAULT.n_layer, help="GPT: transformer layers.", option="--layers", ge=1, panel=_MODEL
    )
    n_embd: int = setting(
        _DEFAULT.n_embd,
        help="GPT: embedding width (a multiple of --heads).",
        option="--width",
        ge=1,
        panel=_MODEL,
    )
    n_head: int = setting(_DEFAULT.n_head, help="GPT: attention heads.", option="--heads", ge=1, panel=_MODEL)
    base: str | None = setting(
        None,
        help="Fine-tune this pretrained causal LM (a Hugging Face folder, a .gguf file, or smollm2-135m) "
        "instead of training a small model from scratch (docs/finetune.md).",
        panel=_MODEL,
    )
    tokenizer: str | None = setting(
        _DEFAULT.tokenizer,
        help="word or bpe (default: bpe for gpt, word for lstm).",
        choices=("word", "bpe"),
        panel=_MODEL,
        hidden=True,
    )
    vocab_size: int = setting(
        _DEFAULT.vocab_size,
        help="Tokenizer vocabulary size (most frequent words for word-level).",
        ge=1,
        panel=_MODEL,
        hidden=True,
    )
    tokenizer_from: str | None = setting(
        _DEFAULT.tokenizer_from,
        help="Learn the tokenizer on this public corpus, or reuse an lmleak model folder's (default: D_pub "
        "for crt, the training text for nodp, a public vocabulary from SmolLM2's merges for dp/sdp).",
        panel=_MODEL,
        hidden=True,
    )
    tokenizer_from_private: bool = setting(
        _DEFAULT.tokenizer_from_private,
        help="dp/sdp: accept a tokenizer learnt from the private text (outside the DP guarantee; recorded "
        "in privacy.json).",
        panel=_MODEL,
        hidden=True,
    )
    lora: int = setting(
        _DEFAULT.lora, help="--base: LoRA adapter rank (peft).", ge=1, panel=_MODEL, hidden=True
    )
    lora_targets: str | None = setting(
        None,
        help="--base: comma-separated module names to adapt (default per architecture: q_proj,v_proj for "
        "llama/mistral/qwen, c_attn for gpt2; else every Linear in attention).",
        panel=_MODEL,
        hidden=True,
    )
    lora_alpha: float | None = setting(
        _DEFAULT.lora_alpha,
        help="--base: LoRA scaling alpha (default 2 x rank).",
        gt=0,
        panel=_MODEL,
        hidden=True,
    )
    full: bool = setting(
        _DEFAULT.full,
        help="--base: fine-tune all weights instead of LoRA adapters.",
        panel=_MODEL,
        hidden=True,
    )
    merge: bool = setting(
        _DEFAULT.merge,
        help="--base: also write OUT/merged, a plain Hugging Face folder of base + adapters.",
        panel=_MODEL,
        hidden=True,
    )
    precision: str = setting(
        _DEFAULT.precision,
        help="--base: auto (bf16 autocast on a GPU that has it, fp32 on the CPU), fp32, bf16 or fp16 "
        "(falls back to fp32).",
        choices=PRECISIONS,
        panel=_MODEL,
        hidden=True,
    )
    holdout_users: float = setting(
        _DEFAULT.holdout_users,
        help="Share of users held out of training (0 allowed): validation, and the non-members / controls "
        "of `mia` and `probe run`; recorded in holdout.json.",
        short="--val-fraction",  # the old spelling, still shown
        ge=0,
        lt=1,
        panel=_DATA,
    )
    seq_len: int = setting(
        _DEFAULT.seq_len,
        help="Tokens per training sequence (the GPT's context).",
        short="--context",  # the GPT's name for it
        ge=2,
        panel=_DATA,
    )
    secrets: str | None = setting(
        _DEFAULT.secrets,
        help="crt/sdp: secrets.jsonl ground truth; the policy's miss rate gamma is measured on the training "
        "text and written to privacy.json.",
        panel=_DATA,
        hidden=True,
    )
    policy: str | None = setting(
        _DEFAULT.policy, help="Redaction policy for crt/sdp (default balanced).", panel=_DATA, hidden=True
    )
    mode: str = setting(
        _DEFAULT.mode,
        help="nodp | dp (DP-SGD) | crt (paper 002) | sdp (selective DP, LSTM).",
        panel=_PRIVACY,
    )
    target_epsilon: float | None = setting(
        _DEFAULT.target_epsilon,
        help="DP target epsilon instead of a noise multiplier.",
        gt=0,
        panel=_PRIVACY,
    )
    noise_multiplier: float | None = setting(
        _DEFAULT.noise_multiplier, help="DP noise multiplier (dp/crt/sdp).", gt=0, panel=_PRIVACY
    )
    target_delta: float = setting(
        _DEFAULT.target_delta, help="DP delta.", option="--delta", gt=0, lt=1, panel=_PRIVACY
    )
    privacy_unit: str | None = setting(
        _DEFAULT.privacy_unit,
        help="dp/crt/sdp: what epsilon protects: user (default whenever the corpus has user ids: each step "
        "samples people, each person's gradient clipped as one) or sequence (one training sequence; a "
        "person with k sequences gets only group privacy).",
        choices=PRIVACY_UNITS,
        panel=_PRIVACY,
    )
    max_sequences_per_user: int = setting(
        _DEFAULT.max_sequences_per_user,
        help="--privacy-unit user: a sampled person contributes the mean gradient of up to K of their "
        "sequences, picked at random each step.",
        ge=1,
        panel=_PRIVACY,
        hidden=True,
    )
    sampler: str = setting(
        _DEFAULT.sampler,
        help="dp/crt/sdp: poisson (default; what the accountant assumes) or shuffle (fixed batches; epsilon "
        "is then the bound without amplification by sampling, the Poisson number printed beside it with "
        "a warning).",
        choices=SAMPLERS,
        panel=_PRIVACY,
        hidden=True,
    )
    max_grad_norm: float = setting(
        _DEFAULT.max_grad_norm, help="Per-sequence clipping norm.", gt=0, panel=_PRIVACY, hidden=True
    )
    accountant: str = setting(
        _DEFAULT.accountant,
        help="prv (default) or rdp.",
        choices=("prv", "rdp"),
        panel=_PRIVACY,
        hidden=True,
    )
    dp_clipping: str | None = setting(
        None,
        help="Per-sequence clipping: bookkeeping (one backward pass; default for the small GPT) or ghost "
        "(Opacus); with --base: auto (default: bookkeeping where it applies, else Opacus hooks), "
        "bookkeeping or hooks.",
        panel=_PRIVACY,
        hidden=True,
    )
    health_checks: bool = setting(
        _DEFAULT.health_checks,
        help="dp/crt/sdp: stop a run whose trainable weights have not moved, or whose noise drowns the "
        "signal, after the first --health-check-steps steps and at the end (--no-health-checks: warn "
        "and go on).",
        panel=_PRIVACY,
        hidden=True,
    )
    health_check_steps: int = setting(
        _DEFAULT.health_check_steps,
        help="Private steps before the first health check.",
        ge=1,
        panel=_PRIVACY,
        hidden=True,
    )
    max_noise_to_signal: float = setting(
        _DEFAULT.max_noise_to_signal,
        help="Health check: the largest median ratio of the noise's norm to the clipped gradient sum's norm.",
        gt=0,
        panel=_PRIVACY,
        hidden=True,
    )
    epochs: int = setting(_DEFAULT.epochs, help="Passes over the training data.", ge=1, panel=_SCHEDULE)
    batch_size: int = setting(
        _DEFAULT.batch_size,
        help="Sequences per mini-batch (expected size under Poisson sampling).",
        ge=1,
        panel=_SCHEDULE,
    )
    lr: float = setting(_DEFAULT.lr, help="AdamW learning rate.", gt=0, panel=_SCHEDULE)
    seed: int = setting(
        _DEFAULT.seed, help="Random seed (same seed, same result).", ge=0, le=2**32 - 1, panel=_SCHEDULE
    )
    max_steps: int | None = setting(
        _DEFAULT.max_steps,
        help="--base: at most this many optimiser steps of each kind (plain/public and private DP) in all; "
        "for smoke runs (the accountant counts the steps taken).",
        ge=1,
        panel=_SCHEDULE,
        hidden=True,
    )
    device: str | None = setting(
        _DEFAULT.device,
        help="--base: auto (a GPU when present), cpu, cuda, cuda:N (default: the global --device).",
        panel=_SCHEDULE,
        hidden=True,
    )
    snapshots: bool = setting(
        _DEFAULT.snapshots,
        help="Save a checkpoint after every epoch (for `lmleak study snapshots`).",
        panel="Output",
        hidden=True,
    )

    def check(self) -> None:
        self.config()  # the record's own rules (mode and noise, width and heads, sdp and lstm ...)

    def config(self) -> TrainConfig | FinetuneConfig:
        """The run's record: the fields the trainer (or, with ``base``, the fine-tuner) has, the
        others left out (a small model's shape is no fine-tune's concern); ``dp_clipping`` None is
        the trainer's default, ``lora_targets`` split at the commas."""
        target: Any = TrainConfig if self.base is None else FinetuneConfig
        names = {f.name for f in fields(target)}
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name in names}
        if self.dp_clipping is None:
            del values["dp_clipping"]
        if self.lora_targets is not None:
            values["lora_targets"] = (
                tuple(t.strip() for t in self.lora_targets.split(",") if t.strip()) or None
            )
        return target(**values)  # type: ignore[no-any-return]
