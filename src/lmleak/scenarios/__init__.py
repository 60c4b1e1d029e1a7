"""KART: every leakage scenario as Knowledge, Anonymization, Resources and Target (paper 004).

- :mod:`.types` — the factors as frozen types and :class:`Scenario`;
- :func:`scenario_record` — the JSON record every attack writes under ``"scenario"`` in its summary;
- :mod:`.spec` — YAML scenario files; :mod:`.catalogue` — the paper's Table 1 and Table 2 as data;
- :mod:`.margins` — privacy leakage ratio and risk margins (§5.3.3);
- :mod:`.runner` — ratios and margins for any attack yielding (subject, attribute) predictions;
- :mod:`.describe` — any run's scenario in the paper's notation ``(I_K, a, R, I_T)``.
"""

from __future__ import annotations

from typing import Any

from lmleak.scenarios.types import (
    ACCESS_KINDS,
    AnyInformation,
    Categories,
    DPTraining,
    Hipaa,
    Identity,
    Knowledge,
    Membership,
    PublicCorpus,
    Redaction,
    Resources,
    Scenario,
    SelectiveDP,
    parse_anonymization,
    parse_resource,
    parse_target,
)

__all__ = [
    "ACCESS_KINDS",
    "AnyInformation",
    "Categories",
    "DPTraining",
    "Hipaa",
    "Identity",
    "Knowledge",
    "Membership",
    "PublicCorpus",
    "Redaction",
    "Resources",
    "Scenario",
    "SelectiveDP",
    "parse_anonymization",
    "parse_resource",
    "parse_target",
    "scenario_record",
]


def scenario_record(
    *,
    attack: str,
    knowledge: Any = (),
    anonymization: Any = "identity",
    resources: Any = (),
    access: str,
    target: Any,
    notes: str | None = None,
) -> dict[str, Any]:
    """The JSON-able KART record of a run, validated through :class:`Scenario`.

    Args:
        attack: the attack method, e.g. ``"canary_exposure"``.
        knowledge: I_K, categories known about the targets (``()`` for ∅).
        anonymization: ``identity``, ``hipaa``, ``redaction:<policy>``, ``dp:<epsilon>``, ``dp[user]:<epsilon>``, ``sdp[user]:<epsilon>`` or ``a+b``.
        resources: R items, e.g. ``("reference_model", "public_corpus:hipaa")``.
        access: one of ``top_k``, ``scores``, ``generation``, ``weights``, ``fill_mask``.
        target: I_T: ``membership``, ``any`` or categories (``"full_name,diseases"`` or a list).
        notes: free text kept verbatim.

    Raises:
        ConfigError: an unknown access, anonymization or resource (with a "did you mean").

    Example:
        >>> r = scenario_record(attack="membership_inference", access="scores", target="membership",
        ...                     resources=("reference_model",))
        >>> r["access"], r["resources"], r["notation"]
        ('scores', ['reference_model'], '(∅, id, {M_reference}, {1[d ∈ D_train]}_{d∈D})')
        >>> scenario_record(attack="x", access="scroes", target="any")
        Traceback (most recent call last):
        ...
        lmleak.errors.ConfigError: field 'access': unknown access kind 'scroes'. Did you mean 'scores'? Fix: use one of top_k, scores, generation, weights, fill_mask
    """
    if isinstance(resources, str):
        resources = (resources,)
    if isinstance(knowledge, str):
        knowledge = (knowledge,) if knowledge else ()
    sc = Scenario(
        attack=attack,
        knowledge=Knowledge(tuple(knowledge)),
        anonymization=parse_anonymization(anonymization),
        resources=Resources(tuple(parse_resource(r) for r in resources), access=access),
        target=parse_target(target),
        notes=notes,
    )
    return sc.to_record()
