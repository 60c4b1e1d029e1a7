"""The options of ``lmleak experiment crt`` and ``lmleak experiment propile`` as settings (issue 34):
the CLI generates its options from the fields and calls ``config()`` for the experiment's config.

Light: the CLI imports this module at start, so the experiments (torch) are imported inside
``config()`` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lmleak.settings import Settings, setting

if TYPE_CHECKING:
    from lmleak.experiments.crt import CRTExperimentConfig
    from lmleak.experiments.propile import ProPILEExperimentConfig

SEED_MAX = 2**32 - 1  # numpy's and torch's seed range: 0 to this


@dataclass(frozen=True)
class CRTOptions(Settings):
    """The options of ``lmleak experiment crt`` (paper 002 §5); :meth:`config` is the experiment's
    :class:`~lmleak.experiments.crt.CRTExperimentConfig`. ``gammas`` and ``archs`` take several
    values after one flag, which the command parses itself (``cli=False``).

    Example:
        >>> CRTOptions(quick=True, users=30).users
        30
    """

    corpus: Path | None = setting(None, help="Corpus JSONL (default: synthesise CustomerSim).")
    quick: bool = setting(False, help="Tiny sizes: finishes in a few minutes.")
    seed: int = setting(0, help="Random seed (same seed, same result).", ge=0, le=SEED_MAX)
    epochs: int | None = setting(None, help="Training epochs of every model (default 2; --quick 1).", ge=1)
    users: int | None = setting(None, help="Synthetic users (default 60; --quick 24).", ge=1)
    lr: float | None = setting(
        None, help="Learning rate (default: the trainer's per-architecture one).", gt=0
    )
    base: str | None = setting(
        None,
        help="LoRA fine-tunes of this pretrained model (a Hugging Face folder or smollm2-135m) instead of "
        "small models; smoke-sized on the CPU, full size on a GPU.",
    )
    max_steps: int | None = setting(
        None, help="--base: optimiser steps per model (default 6 on the CPU, unlimited on a GPU).", ge=1
    )
    gammas: tuple[float, ...] | None = setting(None, help="Policy false-negative rates.", cli=False)
    archs: tuple[str, ...] | None = setting(None, help="Architectures: lstm, gpt.", cli=False)

    def config(self) -> CRTExperimentConfig:
        """The experiment's config: with ``base`` :meth:`~CRTExperimentConfig.for_base` sized for the
        device torch sees, else the quick or default sizes; then the options that are given."""
        # lazy: the experiment imports torch
        from lmleak.experiments.crt import CRTExperimentConfig

        if self.base is not None:
            # lazy: torch, to see the device
            from lmleak.models.device import resolve_device

            cfg = CRTExperimentConfig.for_base(self.base, gpu=resolve_device() != "cpu")
        else:
            cfg = CRTExperimentConfig.quick() if self.quick else CRTExperimentConfig()
        return cfg.with_options(gammas=self.gammas, archs=self.archs, seed=self.seed, epochs=self.epochs,
                                users=self.users, lr=self.lr, max_steps=self.max_steps)  # fmt: skip


@dataclass(frozen=True)
class ProPILEOptions(Settings):
    """The options of ``lmleak experiment propile`` (paper 003); :meth:`config` is the experiment's
    :class:`~lmleak.experiments.propile.ProPILEExperimentConfig`.

    Example:
        >>> ProPILEOptions(quick=True).smollm2 is None
        True
    """

    quick: bool = setting(False, help="About two minutes instead of ~13 (no SmolLM2 unless --smollm2).")
    seed: int = setting(0, help="Random seed (same seed, same result).", ge=0, le=SEED_MAX)
    smollm2: bool | None = setting(
        None,
        help="Probe SmolLM2-135M as a negative control (default: on, off with --quick).",
        option="--smollm2/--no-smollm2",
    )
    users: int | None = setting(None, help="Synthetic users (default 100; --quick 40).", ge=1)
    epochs: int | None = setting(None, help="Training epochs of the GPT (default 15; --quick 20).", ge=1)
    softprompt_epochs: int | None = setting(
        None, help="Soft prompt epochs (default 20; the paper 700).", ge=1
    )
    base: str | None = setting(
        None,
        help="The target is a LoRA fine-tune of this pretrained model (a Hugging Face folder or "
        "smollm2-135m); smoke-sized on the CPU, full size on a GPU.",
    )
    max_steps: int | None = setting(
        None, help="--base: the fine-tune's optimiser steps (default 20 on the CPU).", ge=1
    )

    def config(self) -> ProPILEExperimentConfig:
        """The experiment's config (:meth:`~ProPILEExperimentConfig.from_options`)."""
        # lazy: the experiment imports torch
        from lmleak.experiments.propile import ProPILEExperimentConfig

        return ProPILEExperimentConfig.from_options(**self.to_dict())
