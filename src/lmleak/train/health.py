"""Health checks of a DP training run: did the weights move, how much was clipped, does noise drown the signal?

A DP-SGD run can train for hours with a plausible loss and ε while learning nothing: adapters that
never receive an update (Opacus issue #820: LoRA adapters frozen by a wrapping mistake), or noise so
large against the clipped gradient that the update is noise. :class:`HealthMonitor` measures, after
the first ``after_steps`` private steps and at the end of training:

- ``weight_change``: ‖θ − θ₀‖ of the watched weights (the LoRA adapters of a LoRA fine-tune, else
  every trainable weight) and ``moved`` — how many of their tensors changed at all;
- ``clipped_share``: the share of units (users or sequences) whose gradient norm exceeded C;
- ``noise_to_signal``: the median over steps of ‖noise‖ / ‖Σ clipped gradients‖, with
  ‖noise‖ ≈ σC√d for d trainable coordinates (the expected norm of N(0, σ²C² I_d)).

The ratio grows with √d however good the gradients are (at best ‖Σ clipped‖ = B·C), and a LoRA
run starts with B = 0, where the adapters' gradients are near 0; the default limit, 10⁴, is a loose
guard against hopeless settings (σ far too large for the batch), not a tuning target.

A run whose watched weights have not moved, or whose noise-to-signal ratio exceeds
``max_noise_to_signal``, stops with one line saying so (:class:`lmleak.errors.RunError`), or, with
``enforce=False`` (``--no-health-checks``), goes on with the finding recorded as a warning. Both
checks and their numbers go into ``train.json`` under ``health``.
"""

from __future__ import annotations

import logging
import math
import statistics
from dataclasses import dataclass
from typing import Any

import torch

from lmleak.errors import RunError

log = logging.getLogger("lmleak.train")


@dataclass(frozen=True)
class HealthSettings:
    """When to check and what fails: ``after_steps`` private steps, then at the end."""

    enforce: bool = True
    after_steps: int = 10
    max_noise_to_signal: float = 1e4
    check_noise: bool = True  # selective DP: the public gradient carries the learning, noise is recorded only


def watched_weights(model: torch.nn.Module, *, lora: bool) -> tuple[list[tuple[str, torch.Tensor]], str]:
    """(name, tensor) of the weights a run must move, and what they are called: a LoRA fine-tune's
    adapter matrices (whether or not something froze them), else every trainable weight."""
    named = list(model.named_parameters())
    if lora:
        return [(n, p) for n, p in named if "lora_" in n], "LoRA adapters"
    return [(n, p) for n, p in named if p.requires_grad], "trainable weights"


class HealthMonitor:
    """Snapshots the watched weights at the start; :meth:`check` compares and reads the step log."""

    def __init__(
        self,
        watched: list[tuple[str, torch.Tensor]],
        settings: HealthSettings,
        *,
        what: str = "trainable weights",
    ) -> None:
        self.settings, self.what = settings, what
        self.tensors = [p for _, p in watched]
        self.initial = [
            p.detach().to("cpu", copy=True) for p in self.tensors
        ]  # off the GPU: a full model's copy
        self.records: dict[str, dict[str, Any]] = {}
        self.warnings: list[str] = []

    def change(self) -> dict[str, Any]:
        """‖θ − θ₀‖, ‖θ₀‖ and how many watched tensors changed at all."""
        sq, base, moved = 0.0, 0.0, 0
        for p, p0 in zip(self.tensors, self.initial, strict=True):
            d = p.detach().cpu() - p0
            sq += float(d.float().pow(2).sum())
            base += float(p0.float().pow(2).sum())
            moved += int(bool((d != 0).any()))
        return {
            "weight_change": math.sqrt(sq),
            "weight_norm_start": math.sqrt(base),
            "moved_tensors": moved,
            "watched_tensors": len(self.tensors),
            "watched": self.what,
        }

    def check(self, when: str, steps: int, step_log: list[dict[str, float]]) -> dict[str, Any]:
        """Measure and judge after ``steps`` private steps (``when``: ``early`` or ``final``); stops the
        run (``enforce``) or records a warning when a check fails. Returns the record."""
        s = self.settings
        rec: dict[str, Any] = {"steps": steps, **self.change()}
        units = sum(e["units"] for e in step_log)
        rec["units_seen"] = int(units)
        clipped = [e["clipped"] for e in step_log]
        known = units and not any(math.isnan(c) for c in clipped)  # Opacus' own clipping reports no counts
        rec["clipped_share"] = sum(clipped) / units if known else None
        ratios = [
            e["noise_norm"] / e["signal_norm"] if e["signal_norm"] > 0 else math.inf
            for e in step_log
            if e["units"] > 0
        ]
        rec["noise_to_signal"] = statistics.median(ratios) if ratios else None
        problems = []
        if self.tensors and rec["moved_tensors"] == 0:
            problems.append(
                f"the {self.what} have not moved after {steps} steps (change 0 in all "
                f"{len(self.tensors)} tensors): they are frozen or not in the optimiser"
            )
        elif not self.tensors:
            problems.append(f"there are no {self.what} to train")
        nsr = rec["noise_to_signal"]
        if s.check_noise and nsr is not None and nsr > s.max_noise_to_signal:
            problems.append(
                f"the noise drowns the signal: noise/signal {nsr:.3g} > {s.max_noise_to_signal:g} "
                "(less noise, larger batches, or a larger clipping norm)"
            )
        rec["problems"] = problems
        rec["passed"] = not problems
        self.records[when] = rec
        if problems:
            line = f"DP health check after {steps} steps: " + "; ".join(problems)
            if s.enforce:
                raise RunError(line + " — training stopped (--no-health-checks to go on regardless)")
            self.warnings.append(line)
            log.warning(line)
        return rec

    def record(self) -> dict[str, Any]:
        """``train.json``'s ``health``: the settings and every check made."""
        return {
            "enforced": self.settings.enforce,
            "after_steps": self.settings.after_steps,
            "max_noise_to_signal": self.settings.max_noise_to_signal,
            **self.records,
            "passed": all(r["passed"] for r in self.records.values()),
            "warnings": list(self.warnings),
        }


def health_monitor(model: torch.nn.Module, config: Any, *, lora: bool) -> HealthMonitor:
    """The monitor of a DP run from its config (``health_checks``, ``health_check_steps``,
    ``max_noise_to_signal``; selective DP's noise is recorded, not checked), watching
    :func:`watched_weights`."""
    watched, what = watched_weights(model, lora=lora)
    settings = HealthSettings(
        enforce=config.health_checks,
        after_steps=config.health_check_steps,
        max_noise_to_signal=config.max_noise_to_signal,
        check_noise=config.mode != "sdp",
    )
    return HealthMonitor(watched, settings, what=what)
