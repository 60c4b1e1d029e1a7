"""The options of ``lmleak experiment crt``, ``propile`` and ``kart`` as settings (issue 34):
the CLI generates its options from the fields and calls ``config()`` for the experiment's config.

Light: the CLI imports this module at start, so the experiments (torch) are imported inside
``config()`` only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from lmleak.settings import Settings, setting

if TYPE_CHECKING:
    from lmleak.experiments.crt import CRTExperimentConfig
    from lmleak.experiments.kart import KartExperimentConfig
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


@dataclass(frozen=True)
class KartExperimentOptions(Settings):
    """The options of ``lmleak experiment kart`` (:meth:`config`: the run they ask for)."""

    quick: bool = setting(False, help="A few minutes instead of ~15.")
    patients: int | None = setting(None, help="Patients in the synthetic notes.", ge=1)
    docs: int | None = setting(None, help="Generated documents per K±A± cell.", ge=1)
    epochs: int | None = setting(None, help="MLM pre-training epochs.", ge=1)
    iterations: int | None = setting(None, help="Gibbs updates per document.", ge=1)
    seed: int = setting(0, help="Random seed (same seed, same result).", ge=0, le=2**32 - 1)

    def config(self) -> KartExperimentConfig:
        """The default (or :meth:`~lmleak.experiments.kart.KartExperimentConfig.quick`) sizes, ``seed`` in the MLM and the
        Gibbs sampler too, and the options that are not None replaced.

        ``docs`` sets both K+ and K- document counts; ``iterations`` also caps the burn-in at a quarter
        of the iterations.

        Example:
            >>> cfg = KartExperimentOptions(quick=True, seed=3, docs=4, iterations=8).config()
            >>> (cfg.docs_k_plus, cfg.docs_k_minus, cfg.gibbs.iterations, cfg.gibbs.burn_in, cfg.mlm.seed)
            (4, 4, 8, 2, 3)
        """
        # lazy: the experiment imports torch (its masked LM); the CLI imports these options at start
        from lmleak.experiments.kart import KartExperimentConfig

        seed, iterations = self.seed, self.iterations
        cfg = KartExperimentConfig.quick(seed) if self.quick else KartExperimentConfig(seed=seed)
        mlm = replace(cfg.mlm, seed=seed, epochs=cfg.mlm.epochs if self.epochs is None else self.epochs)
        gibbs = replace(cfg.gibbs, seed=seed)
        if iterations is not None:
            gibbs = replace(gibbs, iterations=iterations, burn_in=min(gibbs.burn_in, iterations // 4))
        cfg = replace(cfg, mlm=mlm, gibbs=gibbs)
        if self.patients is not None:
            cfg = replace(cfg, patients=self.patients)
        if self.docs is not None:
            cfg = replace(cfg, docs_k_plus=self.docs, docs_k_minus=self.docs)
        return cfg
