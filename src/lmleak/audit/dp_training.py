"""The training recipe ``lmleak dp-audit run`` audits, as settings (:class:`DPAuditTraining`, issue 34).

Light: the CLI imports this module to build the command's options, so it imports neither the
trainer nor a model (torch); :mod:`~lmleak.audit.dp_audit`, which trains and audits, imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lmleak.settings import Settings, setting
from lmleak.train.config import MODES, TrainConfig

if TYPE_CHECKING:
    from lmleak.attacks.settings import DPAuditSettings


@dataclass(frozen=True)
class DPAuditTraining(Settings):
    """The training recipe ``lmleak dp-audit run`` audits (names as :class:`~lmleak.train.config.TrainConfig`, its own
    defaults: DP-SGD, a 64-token small GPT); the audit stage of ``lmleak audit`` reads the audited
    model's ``train.json`` instead."""

    mode: str = setting("dp", help="Training mode: nodp | dp | crt | sdp.", choices=MODES)
    epochs: int = setting(5, help="Passes over the training data.", ge=1)
    batch_size: int = setting(16, help="Sequences per mini-batch.", ge=1)
    lr: float = setting(2e-3, help="Learning rate.", gt=0)
    seq_len: int = setting(64, help="Tokens per training sequence.", ge=2)
    n_embd: int = setting(128, help="GPT width.", option="--width", ge=1)
    n_layer: int = setting(2, help="GPT layers.", option="--layers", ge=1)
    n_head: int = setting(4, help="GPT attention heads.", option="--heads", ge=1)
    tokenizer: str | None = setting(
        None, help="word or bpe (default bpe), learnt on the corpus without canaries."
    )
    vocab_size: int = setting(4000, help="Tokenizer vocabulary size.", ge=1)
    tokenizer_from: str | None = setting(
        None,
        help="A public corpus or lmleak model folder for the tokenizer (default: the corpus without canaries).",
    )
    max_grad_norm: float = setting(1.0, help="DP per-sequence clipping norm.", gt=0)
    noise_multiplier: float | None = setting(None, help="DP noise multiplier.", gt=0)
    target_epsilon: float | None = setting(None, help="DP target epsilon (the claim audited).", gt=0)
    holdout_users: float = setting(0.1, help="Share of corpus users held out (validation).", ge=0, lt=1)

    def train_config(self, audit: DPAuditSettings) -> TrainConfig:
        """The :class:`TrainConfig` of the run: the audit's seed, and DP protecting what one canary
        is (``audit.privacy_unit``; ignored without DP)."""
        return TrainConfig(**self.to_dict(), seed=audit.seed, privacy_unit=audit.privacy_unit)
