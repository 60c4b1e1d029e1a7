"""The settings of PII probing (ProPILE, paper 003), one frozen class per analysis (issue 34):
:class:`ProbeSettings` (black-box probing: ``lmleak probe run``'s options, the audit YAML's
``analyses.probe``, :class:`lmleak.ProbeOptions`, what :func:`lmleak.probe.probing.run_probe` reads)
and :class:`SoftPromptSettings` (``lmleak probe softprompt``,
:func:`lmleak.probe.softprompt.run_softprompt`).

Kept apart from :mod:`lmleak.probe.probing` so that the CLI can build its options without importing
the probing machinery (numpy, the shards, torch for soft prompts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lmleak.errors import ConfigError
from lmleak.settings import Settings, setting

DEFAULT_TARGETS = ("phone", "email", "address")

#: the target types a probe can name (``--targets`` / ``--target``)
TARGET_TYPES = frozenset({"phone", "email", "address", "relationship", "university"})

#: the association levels (what the prompt tells about the person besides the name)
LEVEL_NAMES = ("twin", "triplet", "quadruplet")

SEED_MAX = 2**32 - 1  # numpy's and torch's seed range


def target_list(value: Any, name: str = "targets") -> tuple[str, ...]:
    """The target types of a tuple whose items may be comma lists (``--targets phone,email``),
    each checked.

    Raises:
        ConfigError: one string where a collection belongs, an unknown type, or none at all.

    Example:
        >>> target_list(("phone, email,", "address"))
        ('phone', 'email', 'address')
    """
    if isinstance(value, str):  # read letter by letter otherwise
        raise ConfigError(
            f"{name} takes a collection of strings, got the string {value!r}",
            field=name,
            hint=f"write {name}=({value!r},)",
        )
    ts = tuple(t.strip() for item in value for t in str(item).split(",") if t.strip())
    bad = [t for t in ts if t not in TARGET_TYPES]
    if bad or not ts:
        raise ConfigError(
            f"unknown target type(s) {bad}; use a comma list of {sorted(TARGET_TYPES)}", field=name
        )
    return ts


@dataclass(frozen=True)
class ProbeSettings(Settings):
    """Black-box probing (paper 003 §4.2): which items are asked for, how the prompts are built,
    how the model answers. The library's loaded things (the model, the subjects, the held-out
    users, the shard engine) are arguments of :func:`~lmleak.probe.probing.run_probe`, not fields.
    The fields, each with its help: targets, level, templates, template_file, beams, samples,
    generate, likelihood, made_up, max_new_tokens, limit, seed, figures, subjects (the audit's file).

    ``targets`` items may be comma lists (``("phone,email",)`` is ``("phone", "email")``);
    ``templates`` None (from Python) uses every template; ``template_file`` may be ``mined`` in the
    audit YAML (templates mined from its corpus, :func:`lmleak.probe.mining.mine_templates`).
    The audit YAML also takes the older spelling of a template source, ``templates: mined`` (or a
    file) with ``shots: k``: it is ``template_file: mined`` with ``templates: k``.
    """

    targets: tuple[str, ...] = setting(
        DEFAULT_TARGETS,
        help="The PII types probed, a comma list (repeatable): phone, email, address, relationship, "
        "university (default: phone,email,address).",
    )
    level: str | None = setting(
        None,
        help="twin, triplet or quadruplet (default: triplet when subjects have it, else the level that has them).",
        choices=LEVEL_NAMES,
        note="twin | triplet | quadruplet; null: triplet when subjects have one, else the level that has eligible subjects (a level with none warns)",
    )
    templates: int | None = setting(
        5,
        help="k-shot: the first k templates.",
        ge=1,
        note="k-shot: the first k templates (the paper's, or template_file's)",
    )
    template_file: str | None = setting(
        None,
        help="User templates (YAML).",
        note="mined: mine them from the corpus (`From: {name} <`...); or a templates YAML file (the older `templates: mined` + `shots: 5` still reads)",
    )
    beams: int = setting(
        3,
        help="Beams of the beam search (A.3; the best beam is kept).",
        ge=1,
        note="beams of the beam search (the best beam is kept)",
    )
    samples: int = setting(0, help="Sample N times instead of beam search.", ge=0)
    generate: bool = setting(
        True, help="Likelihoods only (no generation, no exact match).", option=" /--no-generate"
    )
    likelihood: bool | None = setting(
        None, help="Default: when the model gives scores.", option="--likelihood/--no-likelihood"
    )
    made_up: bool | None = setting(
        None,
        help="Probe one made-up person per subject the same way, as the null (default: when no "
        "held-out control is probed, e.g. a pretrained model).",
        option="--made-up/--no-made-up",
    )
    max_new_tokens: str = setting(
        "", help="Override A.3's generation budgets (OPT tokens), e.g. phone=16,email=24."
    )
    limit: int | None = setting(None, help="Probe only the first N subjects.", ge=1)
    seed: int = setting(0, help="Random seed (same seed, same result).", ge=0, le=SEED_MAX)
    figures: bool = setting(True, help="Write the figures beside the tables.", cli=False)
    subjects: str | None = setting(
        None,
        help="The audit's subjects file (`lmleak probe build` writes one).",
        cli=False,
        note="`lmleak probe build CORPUS --out subjects.jsonl` writes one",
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", target_list(self.targets))
        super().__post_init__()

    @classmethod
    def from_mapping(cls, data: Any, *, where: str = "", path: str | None = None) -> ProbeSettings:
        """:meth:`Settings.from_mapping`, with the YAML's ``templates: mined`` / a file and ``shots``
        read as ``template_file`` and ``templates``."""
        if isinstance(data, Mapping):
            data = dict(data)
            shots = data.pop("shots", None)
            if isinstance(data.get("templates"), str):
                data["template_file"] = data.pop("templates")
                data["templates"] = 5 if shots is None else shots
        return super().from_mapping(data, where=where, path=path)


@dataclass(frozen=True)
class SoftPromptSettings(Settings):
    """White-box probing by soft prompt tuning (paper 003 §3.3.2, A.4): train ``length`` soft tokens
    on ``train_subjects`` subjects, evaluate on the disjoint rest."""

    target: str = setting("phone", help="The PII type the soft prompt asks for.")
    level: str = setting("quadruplet", help="twin, triplet or quadruplet.", choices=LEVEL_NAMES)
    train_subjects: int = setting(64, help="16-512 in the paper.", ge=1)
    length: int = setting(20, help="L_s soft tokens.", ge=1)
    init: str = setting("word", help="word, uniform or mean.", choices=("word", "uniform", "mean"))
    epochs: int = setting(50, help="Training epochs.", ge=1)
    lr: float = setting(0.005, help="AdamW's learning rate.", gt=0)
    seed: int = setting(0, help="Random seed (same seed, same result).", ge=0, le=SEED_MAX)
    max_eval: int | None = setting(None, help="Evaluate on at most this many subjects.", ge=1, cli=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", target_list((self.target,), "target")[0])
        super().__post_init__()
