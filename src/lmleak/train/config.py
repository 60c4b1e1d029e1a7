"""Training settings, one frozen record per run (its ``repr`` is stored with the model).

DP parameters use opacus's names verbatim: ``max_grad_norm``, ``noise_multiplier``,
``target_epsilon``, ``target_delta``; ``accountant`` is ``"prv"`` (default, tight) or ``"rdp"``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from lmleak.errors import ConfigError, check_number

Mode = Literal["nodp", "dp", "crt", "sdp"]
MODES = ("nodp", "dp", "crt", "sdp")


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

    The privacy unit of DP modes is one training sequence (a chunk of at most ``seq_len`` tokens of
    one document); chunks never span documents, so no sequence mixes two users' data.
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

    def __post_init__(self) -> None:
        check_training_numbers(self)
        check_number(self.vocab_size, "vocab_size", ge=1, integer=True)
        if self.mode not in MODES:
            raise ConfigError(
                f"unknown mode {self.mode!r}", field="mode", hint=f"use one of {', '.join(MODES)}"
            )
        if self.arch not in ("gpt", "lstm"):
            raise ConfigError(f"unknown arch {self.arch!r}", field="arch", hint="use gpt or lstm")
        if self.epochs < 1 or self.batch_size < 1 or self.seq_len < 2:
            raise ConfigError("epochs and batch_size must be >= 1 and seq_len >= 2", field="epochs")
        if not 0.0 <= self.holdout_users < 1.0:
            raise ConfigError(
                "holdout_users must be in [0, 1)",
                field="holdout_users",
                hint="e.g. --holdout-users 0.1, or 0 for none",
            )
        if self.mode in ("dp", "crt", "sdp"):
            if (self.noise_multiplier is None) == (self.target_epsilon is None):
                raise ConfigError(
                    f"mode {self.mode!r} needs exactly one of noise_multiplier and target_epsilon",
                    field="noise_multiplier",
                    hint="pass --noise-multiplier 1.0 or --target-epsilon 8",
                )
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
