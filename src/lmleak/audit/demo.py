"""``lmleak demo``: the embedded default job, end to end on a laptop CPU.

1. Synthesise the CustomerSim corpus with canaries (10 canaries, repeated), plus a second corpus
   of other users of the same format: half of them train the public model, the other half are
   never trained on and give the membership-inference non-members.
2. Train three small GPTs on the same users: plain, DP-SGD, and CRT (paper 002 Algorithm 1).
3. Audit all three with one config: the leakage report against a public model, canary exposure,
   membership inference (PII lines of training users vs the same lines of unseen users), PII
   probing of the training users, and the KART scenario of every analysis.
4. Write ``report.html`` and print a summary table.

The public model of the leakage report (also the reference of the calibrated membership attack) is
a model of the same architecture trained on half of the unseen users only. It has never seen any data of the audited users, which is what paper 001 (§5, §6.2)
asks of a leave-out model; training it once serves all three audited models. ``--leave-out``
retrains one per audited model without the owners of its unique sequences instead (slower).

``--base NAME_OR_DIR`` runs the same job on a pretrained model: the three audited models are LoRA
fine-tunes of the base (plain, DP-SGD, CRT; :mod:`lmleak.train.finetune`) and the public model is
the base itself (``public_model: base``), paper 001's setting. On the CPU it is smoke-sized (8 users,
at most ``max_steps`` optimiser steps per model); on a GPU it uses the full size.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lmleak.audit.config import parse_config
from lmleak.audit.runner import run_audit
from lmleak.data.corpus import Corpus
from lmleak.data.loaders import load_corpus
from lmleak.data.synth.customersim import synthesize
from lmleak.jsonl import read_jsonl
from lmleak.models.device import resolve_device
from lmleak.render.headline import collect_headlines
from lmleak.runs import atomic_write_text, secure_dir
from lmleak.train.config import TrainConfig
from lmleak.train.finetune import FinetuneConfig, finetune
from lmleak.train.trainer import train_model


@dataclass(frozen=True, slots=True)
class DemoSize:
    users: int
    dialogs_per_user: int
    canary_repeats: int
    epochs: int
    dp_epochs: int
    probe_subjects: int


SIZES = {
    "quick": DemoSize(
        users=16,
        dialogs_per_user=3,
        canary_repeats=10,
        epochs=12,
        dp_epochs=3,
        probe_subjects=6,
    ),
    "full": DemoSize(
        users=40,
        dialogs_per_user=3,
        canary_repeats=20,
        epochs=20,
        dp_epochs=3,
        probe_subjects=30,
    ),
    # --base: LoRA fine-tunes of a pretrained model (CPU: smoke-sized and step-capped; GPU: full data)
    "base-cpu": DemoSize(
        users=10,
        dialogs_per_user=2,
        canary_repeats=10,
        epochs=2,
        dp_epochs=1,
        probe_subjects=3,
    ),
    "base-gpu": DemoSize(
        users=40,
        dialogs_per_user=3,
        canary_repeats=20,
        epochs=5,
        dp_epochs=3,
        probe_subjects=30,
    ),
}


def _lines_with(paths: Path, users: set[str] | None, marker: str) -> list[str]:
    out: list[str] = []
    for doc in read_jsonl(paths):
        if users is not None and doc["user_id"] not in users:
            continue
        out.extend(s for s in doc["text"].split("\n") if marker in s)
    return out


def training_lines(models_dir: Path, names: list[str]) -> list[str]:
    """What each trained model is worth and how private it is, from its ``train.json`` and
    ``privacy.json``: validation perplexity, ε, measured γ, D_pub's share and the tokenizer's source,
    then whether the perplexities order No-DP <= CRT <= DP-SGD as paper 002 (Fig. 3) reports."""
    lines, ppl = [], {}
    for name in names:
        d = models_dir / name
        if not (d / "train.json").exists():
            continue
        final = json.loads((d / "train.json").read_text())["final"]
        priv = json.loads((d / "privacy.json").read_text()) if (d / "privacy.json").exists() else {}
        ppl[name] = final.get("val_perplexity")
        parts = [f"{name}: validation PPL {ppl[name]:.1f}" if ppl[name] is not None else f"{name}:"]
        if priv.get("epsilon") is not None:
            unit = {"user": " per person", "sequence": " per sequence"}.get(str(priv.get("privacy_unit")), "")
            parts.append(f"ε {priv['epsilon']:.2f}{unit}")
        if priv.get("gamma") is not None:
            up = priv.get("gamma_upper95")
            parts.append(
                f"γ {priv['gamma']:.3f} ({priv.get('gamma_source')}"
                + (f", 95% upper {up:.3f})" if up is not None else ")")
            )
        split = priv.get("split") or {}
        if split.get("public_sentence_share") is not None:
            parts.append(
                f"D_pub {split['public_sentence_share']:.1%} of sentences / {split.get('public_word_share', float('nan')):.1%} of words"
            )
        parts.append(f"tokenizer {priv.get('tokenizer_source', 'unknown')}")
        lines.append(", ".join(parts))
    nodp, crt, dp = (ppl.get(n) for n in ("plain", "crt", "dp-sgd"))
    if nodp is not None and crt is not None and dp is not None:
        holds = nodp <= crt <= dp
        lines.append(
            "validation PPL No-DP ≤ CRT ≤ DP-SGD "
            + (
                "holds"
                if holds
                else "does not hold: CRT trains on redacted text and its D_pub share is small (docs/crt-utility.md)"
            )
        )
    return lines


@dataclass(frozen=True)
class _DemoData:
    """The demo's synthetic data: the trained users, the unseen ones, and who of those is public."""

    data: dict[str, Path]  # synthesize()'s paths of the trained users' corpus
    unseen: dict[str, Path]  # synthesize()'s paths of the unseen users
    corpus: Corpus  # the trained users' corpus
    unseen_all: Corpus  # every unseen user's documents
    public_users: set[str]  # the unseen users that train the public model (the first half)
    unseen_corpus: Corpus  # their documents: the public model's corpus and every model's validation
    public_path: Path  # the same documents as JSONL: every model's tokenizer is learnt from them


def _demo_size(base: str | None, quick: bool, max_steps: int | None) -> tuple[DemoSize, bool, int | None]:
    """The demo's sizes, whether a GPU runs it (only asked with ``base``), and the fine-tunes' step cap."""
    if base is None:
        return SIZES["quick" if quick else "full"], False, max_steps
    gpu = resolve_device() != "cpu"
    if max_steps is None and not gpu:
        max_steps = 12
    return SIZES["base-gpu" if gpu else "base-cpu"], gpu, max_steps


def _synthesise(root: Path, size: DemoSize, seed: int, echo: Callable[[str], None]) -> _DemoData:
    """Step 1: the CustomerSim corpus with canaries, and a second corpus of unseen users."""
    echo(
        f"[bold]1/4[/] synthesising CustomerSim: {size.users} users x {size.dialogs_per_user} dialogues, 10 canaries x {size.canary_repeats}"
    )
    data = synthesize(
        root / "data",
        users=size.users,
        dialogs_per_user=size.dialogs_per_user,
        seed=seed,
        canaries=10,
        canary_repeats=size.canary_repeats,
    )
    # unseen users: the first half trains the public model, the second half gives the membership
    # non-members — a reference model that had seen the non-members would separate them from members
    # whatever the audited model learnt (its reference-calibrated MIA would read AUC 1 for any model)
    unseen = synthesize(
        root / "unseen", users=max(size.users, 24), dialogs_per_user=size.dialogs_per_user, seed=seed + 1000
    )
    corpus = load_corpus(data["corpus"])
    unseen_all = load_corpus(unseen["corpus"])
    public_users = set(unseen_all.users[: len(unseen_all.users) // 2])
    unseen_corpus = Corpus([d for d in unseen_all if d.user_id in public_users])
    # every model learns its tokenizer from the public users' text: a vocabulary learnt from the private
    # text is outside the DP guarantee, and one shared vocabulary keeps the models' perplexities comparable
    public_path = root / "data" / "public.jsonl"
    atomic_write_text(public_path, "".join(json.dumps(d.to_dict()) + "\n" for d in unseen_corpus))
    return _DemoData(data, unseen, corpus, unseen_all, public_users, unseen_corpus, public_path)


# The DP-SGD and CRT models protect each person (user-level DP, issue 27): 4 users per step on
# average, each contributing the mean gradient of up to 4 of their sequences; both clip and noise alike.
USER_LEVEL: dict[str, Any] = dict(
    privacy_unit="user", batch_size=4, max_sequences_per_user=4, noise_multiplier=0.8, max_grad_norm=1.0
)


def _train_configs(size: DemoSize, seed: int, public_path: Path, secrets: Path) -> dict[str, Any]:
    """The three audited small GPTs trained from scratch: plain, DP-SGD, CRT."""
    common: dict[str, Any] = dict(
        arch="gpt",
        batch_size=16,
        seq_len=128,
        tokenizer="bpe",
        vocab_size=2000,
        seed=seed,
        holdout_users=0.0,
        n_embd=128,
        n_layer=2,
        n_head=4,
        lr=3e-3,
        tokenizer_from=str(public_path),
    )
    private = {**common, **USER_LEVEL}
    return {
        "plain": TrainConfig(mode="nodp", epochs=size.epochs, **common),
        "dp-sgd": TrainConfig(mode="dp", epochs=size.dp_epochs, **private),  # type: ignore[arg-type]
        "crt": TrainConfig(
            mode="crt", epochs=size.dp_epochs, policy="balanced", secrets=str(secrets), **private
        ),  # type: ignore[arg-type]
    }


def _train_models(
    models: dict[str, Any], root: Path, d: _DemoData, base: str | None, echo: Callable[[str], None]
) -> None:
    """Step 2: train (or fine-tune ``base`` into) every audited model not already trained."""
    for i, (name, cfg) in enumerate(models.items(), start=1):
        if (root / "models" / name / "train.json").exists():
            echo(f"[bold]2/4[/] model {name}: already trained, reused")
            continue
        echo(
            f"[bold]2/4[/] training {name} ({i}/3, {cfg.mode}, {cfg.epochs} epochs"
            + (f", LoRA fine-tune of {base})" if base is not None else ")")
        )
        if base is not None:
            finetune(d.corpus, root / "models" / name, cfg, val_corpus=d.unseen_corpus, progress=False)
        else:
            train_model(d.corpus, root / "models" / name, cfg, val_corpus=d.unseen_corpus)
    for line in training_lines(root / "models", list(models)):
        echo(f"[bold]2/4[/] {line}")


def _write_attack_inputs(root: Path, d: _DemoData, size: DemoSize) -> None:
    """The membership sets (e-mail lines of trained vs unseen non-public users) and the probed subjects."""
    members = _lines_with(d.data["corpus"], None, "@")
    non_members = _lines_with(d.unseen["corpus"], set(d.unseen_all.users) - d.public_users, "@")
    for name, texts in (("members", members), ("non_members", non_members)):
        atomic_write_text(
            root / "data" / f"{name}.jsonl", "".join(json.dumps({"text": t}) + "\n" for t in texts)
        )
    subjects = d.data["subjects"].read_text().splitlines()[: size.probe_subjects]
    atomic_write_text(root / "data" / "probe_subjects.jsonl", "".join(s + "\n" for s in subjects))


def _audit_config(models: list[str], public_model: str, base: str | None, gpu: bool) -> dict[str, Any]:
    """Step 3's audit config (written as ``audit.yaml``): every analysis of the three models."""
    cpu_base = base is not None and not gpu
    config: dict[str, Any] = {
        "out": "audit",
        "corpus": {"path": "data/corpus.jsonl"},
        "models": [{"name": n, "path": f"models/{n}"} for n in models],
        "public_model": public_model,
        "analyses": {
            "report": {"k": [1, 3], "t": 1.0, "p": 5},
            "exposure": {"canaries": "data/canaries.jsonl"},
            "mia": {
                "members": "data/members.jsonl",
                "non_members": "data/non_members.jsonl",
                "group_size": 20,
            },
            "probe": {
                "subjects": "data/probe_subjects.jsonl",
                "level": "triplet",
                "templates": 1 if base and not gpu else 2,
                "beams": 1 if base and not gpu else 2,
            },
            "kart": True,
        },
        "gate": {"profile": "release"},  # the verdict the report opens with (docs/verdict.md)
    }
    if cpu_base:
        config["analyses"]["report"]["k"] = [1]
        # the exact rank of a 6-digit canary walks most of the 10^6-candidate trie when the canary is
        # barely learnt (12 LoRA steps): tens of minutes per model for SmolLM2 on a CPU; estimate it
        config["analyses"]["exposure"].update(max_candidates=0, sample_size=200)
    return config


def run_demo(
    out_dir: str | Path,
    *,
    quick: bool = False,
    seed: int = 0,
    leave_out: bool = False,
    echo: Callable[[str], None] = print,
    base: str | None = None,
    max_steps: int | None = None,
) -> Path:
    """Run the demo into ``out_dir`` and return the audit run directory (``base``: see the module docstring;
    ``max_steps`` caps each fine-tune, default 12 on the CPU)."""
    size, gpu, max_steps = _demo_size(base, quick, max_steps)
    root = secure_dir(out_dir)
    t0 = time.perf_counter()
    d = _synthesise(root, size, seed, echo)
    models = _train_configs(size, seed, d.public_path, d.data["secrets"])
    if base is not None:
        models = _finetune_configs(base, size, seed, max_steps)
    _train_models(models, root, d, base, echo)
    public = "leave-out"
    if base is not None:
        public, leave_out = "base", True  # the fine-tunes' own base is the public model (paper 001)
    elif not leave_out:
        public = str(root / "models" / "public")
        if not (root / "models" / "public" / "train.json").exists():
            echo("[bold]2/4[/] training the public model on unseen users only")
            train_model(d.unseen_corpus, root / "models" / "public", models["plain"])
    _write_attack_inputs(root, d, size)
    config = _audit_config(list(models), public if leave_out else "models/public", base, gpu)
    atomic_write_text(
        root / "audit.yaml",
        "# written by `lmleak demo`; rerun with `lmleak audit` + this file\n"
        + yaml.safe_dump(config, sort_keys=False),
    )
    echo("[bold]3/4[/] auditing the three models (leakage report, exposure, membership, PII probing, KART)")
    audit_cfg = parse_config(config, path=str(root / "audit.yaml"), base_dir=str(root.resolve()))
    run = run_audit(audit_cfg, echo=echo)
    echo(f"[bold]4/4[/] done in {time.perf_counter() - t0:.0f} s")
    return run


def _finetune_configs(base: str, size: DemoSize, seed: int, max_steps: int | None) -> dict[str, Any]:
    """The three audited models of ``--base``: LoRA fine-tunes, plain / DP-SGD / CRT."""
    common: dict[str, Any] = dict(
        base=base,
        lora=8,
        batch_size=8,
        seq_len=128,
        seed=seed,
        holdout_users=0.0,
        lr=2e-3,
        max_steps=max_steps,
    )
    private = {**common, **USER_LEVEL}
    return {
        "plain": FinetuneConfig(mode="nodp", epochs=size.epochs, **common),
        "dp-sgd": FinetuneConfig(mode="dp", epochs=size.dp_epochs, **private),
        "crt": FinetuneConfig(mode="crt", epochs=size.dp_epochs, policy="balanced", **private),
    }


@dataclass(frozen=True, slots=True)
class DemoRun:
    """A finished ``lmleak demo``: the audit run directory, its wall time and headline metrics per model."""

    run: Path
    seconds: float
    headlines: dict[str, dict[str, Any]]

    @property
    def report(self) -> Path:
        return self.run / "report.html"

    def to_dict(self) -> dict[str, Any]:
        """``lmleak demo --json``: ``run``, ``report``, ``seconds``, ``headlines``."""
        return {"run": str(self.run), "report": str(self.report), "seconds": self.seconds,
                "headlines": self.headlines}  # fmt: skip


def demo(out_dir: str | Path, **options: Any) -> DemoRun:
    """:func:`run_demo` (``options``: its keywords), timed, with the run's headline metrics."""
    t0 = time.perf_counter()
    run = run_demo(out_dir, **options)
    seconds = time.perf_counter() - t0
    return DemoRun(run, seconds, collect_headlines(run))
