"""Paper 004's experiment (§5) on synthetic clinical notes: eight K±A±R± scenarios, one attack.

Steps: synthesise D_private / D_public / I_T (:mod:`lmleak.data.synth.clinical`); pre-train one
small BERT on D_private (A+: a = id) and one on D_public with placeholders removed (A-: a = f_HIPAA,
appendix B.2); generate documents by Gibbs sampling with the name span given (K+) or masked (K-);
extract name–disease pairs, keep valid names (Faker's name list), and for R+ drop diseases absent
from D_public (B.3 step 2; R+ predictions refine the R- ones, as the paper does); then the privacy
leakage ratio per scenario and the risk margins between one-factor neighbours (§5.3.3).

§5.1's displayed definition reads "A+: a = f_HIPAA, A-: a = id", but every scenario paragraph,
Figure 2 and §5.2 use the reverse (A+ trains on D_private, a = id), as does "X+ is the more severe
choice"; we follow the latter.

Î_T is a *set* of (name, concept) pairs, as |I_T ∩ Î_T| / |Î_T| is written; the number of pairs
with repeats across documents is reported alongside (``pairs_with_repeats``).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lmleak.attacks.mlm_generation import GibbsConfig, extract_pairs, generate_documents
from lmleak.data.synth.clinical import extract_concepts, name_lists, synthesize
from lmleak.jsonl import read_jsonl
from lmleak.models.hf_masked import MaskedLMConfig, train_masked_lm
from lmleak.pii.hipaa import patient_anonymizer, strip_placeholders
from lmleak.runs import atomic_write_text, secure_dir, write_summary, writes_run
from lmleak.scenarios import Scenario, scenario_record
from lmleak.scenarios.margins import margins_table

SCENARIOS = [f"K{k}A{a}R{r}" for k in "+-" for a in "+-" for r in "+-"]


@dataclass(frozen=True, slots=True)
class KartExperimentConfig:
    """Sizes of the run (defaults: about 15 minutes on 2 CPU cores; :meth:`quick`: a few minutes)."""

    patients: int = 100
    notes_per_patient: int = 3
    seed: int = 0
    docs_k_plus: int = 320
    docs_k_minus: int = 320
    mlm: MaskedLMConfig = field(default_factory=lambda: MaskedLMConfig(epochs=100, lr=2e-3))
    gibbs: GibbsConfig = field(
        default_factory=lambda: GibbsConfig(iterations=100, burn_in=25, top_k=100, disease_span=16)
    )

    @classmethod
    def quick(cls, seed: int = 0) -> KartExperimentConfig:
        return cls(
            patients=60,
            seed=seed,
            docs_k_plus=128,
            docs_k_minus=128,
            mlm=MaskedLMConfig(epochs=60, lr=2e-3, seed=seed),
            gibbs=GibbsConfig(iterations=50, burn_in=12, top_k=100, disease_span=12, seed=seed),
        )


def scenario_for(name: str) -> dict[str, Any]:
    """The KART record of one of the eight scenarios (§5.1; A+ is a = id, A- is a = f_HIPAA)."""

    k, a, r = name[1] == "+", name[3] == "+", name[5] == "+"
    return scenario_record(
        attack="mlm_generation",
        knowledge=("full_name",) if k else (),
        anonymization="identity" if a else "hipaa",
        resources=("public_corpus:hipaa",) if r else (),
        access="fill_mask",
        target="diseases" if k else "full_name,diseases",
        notes=f"paper 004 §5 scenario {name}",
    )


def _read_notes(
    out: Path, config: KartExperimentConfig
) -> tuple[list[str], list[str], set[tuple[str, str]], list[str]]:
    """Synthesise the clinical notes into ``out/data``; returns D_private, D_public, I_T and the patients' names."""
    paths = synthesize(
        out / "data",
        anonymizer=patient_anonymizer,
        patients=config.patients,
        notes_per_patient=config.notes_per_patient,
        seed=config.seed,
    )
    private = [d["text"] for d in read_jsonl(paths["private"])]
    public = [d["text"] for d in read_jsonl(paths["public"])]
    gold = {(g["name"].lower(), g["concept_id"]) for g in read_jsonl(paths["gold"])}
    names = sorted({g["name"] for g in read_jsonl(paths["gold"])})
    return private, public, gold, names


def _pretrain(
    private: list[str], public: list[str], config: KartExperimentConfig, out: Path
) -> dict[str, Any]:
    """The A+ model (D_private, a = id) and the A- model (D_public, placeholders removed), saved to ``out``."""
    models = {
        "A+": train_masked_lm(
            private, config.mlm, name="mlm-private", progress_label="pre-training on D_private"
        ),
        "A-": train_masked_lm(
            [strip_placeholders(t) for t in public],
            config.mlm,
            name="mlm-public",
            progress_label="pre-training on D_public",
        ),
    }
    for a, (m, _) in models.items():
        m.save(out / f"model{a.replace('+', '_plus').replace('-', '_minus')}")
    return models


def _name_validator() -> Callable[[str], bool]:
    """Whether a generated name is a valid one: a first and a last name of Faker's lists."""
    firsts, lasts = name_lists()

    def valid(name: str) -> bool:
        parts = name.split()
        return len(parts) == 2 and parts[0] in firsts and parts[1] in lasts

    return valid


def _run_scenarios(
    models: dict[str, Any],
    names: list[str],
    gold: set[tuple[str, str]],
    f_public: set[str],
    config: KartExperimentConfig,
) -> tuple[dict[str, dict[str, int]], dict[str, Any], list[str]]:
    """Generate per K and A, extract per R; returns counts and detail per scenario, and the generated JSONL lines."""
    valid = _name_validator()
    rng = random.Random(config.seed)
    counts: dict[str, dict[str, int]] = {}
    detail: dict[str, Any] = {}
    gen_lines: list[str] = []
    for k in "+-":
        given = (
            [rng.choice(names) for _ in range(config.docs_k_plus)]
            if k == "+"
            else [None] * config.docs_k_minus
        )
        for a in "+-":
            model = models[f"A{a}"][0]
            docs = generate_documents(model, given, config.gibbs)
            gen_lines += [
                json.dumps({"scenario_k": f"K{k}", "scenario_a": f"A{a}", **d}) + "\n" for d in docs
            ]
            for r in "+-":
                name = f"K{k}A{a}R{r}"
                pred, total = extract_pairs(
                    docs,
                    valid_name=valid,
                    concepts_of=extract_concepts,
                    allowed_concepts=f_public if r == "+" else None,
                )
                counts[name] = {"generated": len(docs), "valid": len(pred), "correct": len(pred & gold)}
                detail[name] = {
                    "pairs_with_repeats": total,
                    "valid_names": sum(valid(" ".join(d["name"].lower().split())) for d in docs),
                }
    return counts, detail, gen_lines


@writes_run("out_dir")
def run_experiment(
    out_dir: str | Path, config: KartExperimentConfig = KartExperimentConfig()
) -> dict[str, Any]:
    """Run all eight scenarios; write ``counts.csv``, ``generated.jsonl`` and ``summary.json``."""
    import torch

    t0 = time.perf_counter()
    out = secure_dir(out_dir)
    records = {s: scenario_for(s) for s in SCENARIOS}
    for s, rec in records.items():  # refuse before any work if the attack's access is not granted
        Scenario.from_dict({**rec, "name": s}).check_access("fill_mask", attack="mlm_generation")
    torch.manual_seed(config.seed)
    private, public, gold, names = _read_notes(out, config)
    f_public = {c for t in public for c in extract_concepts(t)}
    models = _pretrain(private, public, config, out)
    counts, detail, gen_lines = _run_scenarios(models, names, gold, f_public, config)
    atomic_write_text(out / "generated.jsonl", "".join(gen_lines))
    atomic_write_text(
        out / "counts.csv",
        "scenario,generated,valid,correct\n"
        + "".join(f"{s},{c['generated']},{c['valid']},{c['correct']}\n" for s, c in counts.items()),
    )
    table = margins_table(counts)
    summary = {
        "experiment": "kart",
        "config": asdict(config),
        "counts": counts,
        "detail": detail,
        "gold_pairs": len(gold),
        "patients": len(names),
        "f_public_concepts": len(f_public),
        "training": {a: s for a, (_, s) in models.items()},
        **table,
        "scenarios": records,
        "scenario": {**records["K+A+R+"], "notes": "the anchor of the eight scenarios (see 'scenarios')"},
        "seconds": time.perf_counter() - t0,
    }
    write_summary(out, summary)
    return summary
