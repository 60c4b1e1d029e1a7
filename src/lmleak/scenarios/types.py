"""KART factors as immutable types (paper 004, §3 "KART Parameterization").

A privacy leakage scenario is the tuple ``(I_K, a, R, I_T)`` plus the attack method:

- **K** :class:`Knowledge` — I_K, the categories of personal information the attacker already
  knows about the *target* people (possibly empty, ∅).
- **A** :class:`Anonymization` — the operation ``a`` applied to D_private to build D_train:
  :class:`Identity` (``id``), :class:`Hipaa` (``f_HIPAA``), :class:`Redaction` (an automated
  policy), :class:`DPTraining` (ε-DP training), or a :class:`Composite` of several.
- **R** :class:`Resources` — everything else the attacker holds: other models, a corpus of similar
  distribution, the anonymised public corpus, part of the training data about non-target people,
  personal information of non-target people, and the kind of access to the model.
- **T** :class:`Target` — I_T: categories of personal information sought (model inversion),
  membership of documents (membership inference), or anything in the training data (I_U).

Rules these types keep (checked in constructors, so an invalid scenario cannot exist):
    - every value is frozen and hashable; ``to_str``/``parse`` and ``to_dict``/``from_dict``
      round-trip exactly;
    - I_K ∩ I_T = ∅ (paper §3: knowledge and target are disjoint);
    - the access kind is one of :data:`ACCESS_KINDS`; an attack's required access is checked
      against it with :meth:`Scenario.check_access` before any work.
"""

# long: the KART vocabulary (paper 004 §3): about thirty small frozen types, each beside its parser, so that Scenario checks them against each other in one place
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lmleak.errors import CapabilityError, ConfigError, did_you_mean

ACCESS_KINDS: tuple[str, ...] = ("top_k", "scores", "generation", "weights", "fill_mask")

# Why an access implies others: exact scores give the whole next-token distribution, from which
# the top-k list and sampled text follow; weights (white-box) give everything a forward pass gives.
# A top-k-only or text-only API grants nothing beyond itself.
ACCESS_IMPLIES: dict[str, frozenset[str]] = {
    "top_k": frozenset({"top_k"}),
    "generation": frozenset({"generation"}),
    "fill_mask": frozenset({"fill_mask"}),
    "scores": frozenset({"scores", "top_k", "generation"}),
    "weights": frozenset(ACCESS_KINDS),
}

# lmleak.models.base.Capability values -> the access kind that grants them
CAPABILITY_ACCESS: dict[str, str] = {
    "score": "scores",
    "top_k": "top_k",
    "generate": "generation",
    "fill_mask": "fill_mask",
    "embeddings": "weights",
}


def _norm(word: str) -> str:
    """Category names compare case- and spacing-insensitively: "Full name" == "full_name"."""
    return re.sub(r"[\s\-]+", "_", str(word).strip().lower())


def _categories(values: Any, *, field_name: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = [v for v in re.split(r"[,+]", values) if v.strip()]
    try:
        cats = tuple(dict.fromkeys(_norm(v) for v in values))
    except TypeError:
        raise ConfigError(f"expected a list of categories, got {values!r}", field=field_name) from None
    for c in cats:
        if not c or c in ("∅", "none", "empty"):
            raise ConfigError("empty category name", field=field_name, hint="use an empty list for ∅")
    return cats


def _num(x: float) -> str:
    """Shortest exact text of a float (so ``dp:<epsilon>`` round-trips): 3.0 -> "3", 0.1 -> "0.1"."""
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r


def check_access(access: str, *, field_name: str = "access") -> str:
    """Validate an access kind; raise :class:`ConfigError` with a suggestion otherwise.

    Example:
        >>> check_access("scores")
        'scores'
    """
    a = _norm(access)
    aliases = {
        "score": "scores",
        "topk": "top_k",
        "generate": "generation",
        "text": "generation",
        "white_box": "weights",
        "whitebox": "weights",
        "embeddings": "weights",
        "mask": "fill_mask",
    }
    a = aliases.get(a, a)
    if a not in ACCESS_KINDS:
        raise ConfigError(
            f"unknown access kind {access!r}.{did_you_mean(a, ACCESS_KINDS)}",
            field=field_name,
            hint=f"use one of {', '.join(ACCESS_KINDS)}",
        )
    return a


# ----------------------------------------------------------------------------------------- K


@dataclass(frozen=True, slots=True)
class Knowledge:
    """I_K: categories of personal information known about every target person p ∈ P.

    Example:
        >>> Knowledge(("full name", "sex")).notation()
        '{(full_name, sex)_p}_{p∈P}'
        >>> Knowledge().notation()
        '∅'
    """

    categories: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", _categories(self.categories, field_name="knowledge"))

    def notation(self) -> str:
        return _person_set(self.categories, "p", "P")

    def to_list(self) -> list[str]:
        return list(self.categories)


@dataclass(frozen=True, slots=True)
class _Factor:
    """A value of the A, R or T factor: ``to_str`` is its parseable text, ``notation`` the paper's.

    A value without fields is its ``kind`` in text and its class's ``symbol`` in notation; values
    with fields override both.
    """

    kind: ClassVar[str] = ""
    symbol: ClassVar[str] = ""

    def to_str(self) -> str:
        return self.kind

    def notation(self) -> str:
        return self.symbol


def _person_set(categories: tuple[str, ...], p: str, people: str) -> str:
    if not categories:
        return "∅"
    inner = categories[0] if len(categories) == 1 else "(" + ", ".join(categories) + ")"
    return "{" + f"{inner}_{p}" + "}_{" + f"{p}∈{people}" + "}"


# ----------------------------------------------------------------------------------------- A


@dataclass(frozen=True, slots=True)
class Anonymization(_Factor):
    """Base of the operations ``a`` with D_train = a(D_private) (paper 004 §3, "A factor")."""

    @property
    def steps(self) -> tuple[Anonymization, ...]:
        return (self,)


@dataclass(frozen=True, slots=True)
class Identity(Anonymization):
    """``a = id``: the training data is not anonymised at all."""

    kind: ClassVar[str] = "identity"
    symbol: ClassVar[str] = "id"

    @property
    def steps(self) -> tuple[Anonymization, ...]:
        return ()


@dataclass(frozen=True, slots=True)
class Hipaa(Anonymization):
    """``a = f_HIPAA``: the 18 HIPAA identifiers (paper 004 appendix A) masked with placeholders."""

    kind: ClassVar[str] = "hipaa"
    symbol: ClassVar[str] = "f_HIPAA"


@dataclass(frozen=True, slots=True)
class Redaction(Anonymization):
    """Automated redaction with a named detector policy (e.g. paper 002's "regex", "presidio")."""

    policy: str = "regex"
    kind: ClassVar[str] = "redaction"

    def __post_init__(self) -> None:
        if not str(self.policy).strip():
            raise ConfigError(
                "redaction needs a policy name", field="anonymization", hint="e.g. redaction:regex"
            )
        object.__setattr__(self, "policy", str(self.policy).strip())

    def to_str(self) -> str:
        return f"redaction:{self.policy}"

    def notation(self) -> str:
        return f"f_redact[{self.policy}]"


DP_UNITS = ("user", "sequence")


@dataclass(frozen=True, slots=True)
class _EpsilonTraining(Anonymization):
    """The shared part of :class:`DPTraining` and :class:`SelectiveDP`: ``KIND[UNIT]:ε``."""

    epsilon: float = 8.0
    unit: str | None = None

    def __post_init__(self) -> None:
        """ε > 0 (inf allowed) and the privacy unit one of :data:`DP_UNITS` or None (unstated)."""
        try:
            eps = float(self.epsilon)
        except (TypeError, ValueError):
            raise ConfigError(
                f"epsilon must be a number, got {self.epsilon!r}", field="anonymization"
            ) from None
        if not eps > 0 or math.isnan(eps):
            raise ConfigError(f"epsilon must be > 0 (inf allowed), got {eps}", field="anonymization")
        object.__setattr__(self, "epsilon", eps)
        if self.unit is not None and self.unit not in DP_UNITS:
            raise ConfigError(
                f"unknown privacy unit {self.unit!r}",
                field="anonymization",
                hint="use dp[user]:EPS or dp[sequence]:EPS",
            )

    def to_str(self) -> str:
        return f"{self.kind}{f'[{self.unit}]' if self.unit else ''}:{_num(self.epsilon)}"


@dataclass(frozen=True, slots=True)
class DPTraining(_EpsilonTraining):
    """ε-differentially-private training (the model, not the data, is perturbed; paper 004 §2.3).

    ``unit`` is what ε protects: ``user`` (a person, ``dp[user]:ε``), ``sequence`` (one training
    sequence, ``dp[sequence]:ε``: a person with k sequences gets only group privacy), or None when
    the record does not say (``dp:ε``). ε values of different units are not comparable.
    """

    kind: ClassVar[str] = "dp"

    def notation(self) -> str:
        return f"DP(ε={_num(self.epsilon)}{f' per {self.unit}' if self.unit else ''})"


@dataclass(frozen=True, slots=True)
class SelectiveDP(_EpsilonTraining):
    """Selective DP training (Shi et al. 2021): ε protects only the tokens a detector flagged; a secret
    the detector missed has no guarantee. Its own label, ``sdp[UNIT]:ε``, so it is never read as DP."""

    kind: ClassVar[str] = "sdp"

    def notation(self) -> str:
        unit = f" per {self.unit}" if self.unit else ""
        return f"SDP(ε={_num(self.epsilon)}{unit}, detected secrets only)"


@dataclass(frozen=True, slots=True)
class Composite(Anonymization):
    """Several operations applied in order, e.g. redaction then DP training (paper 002's CRT)."""

    parts: tuple[Anonymization, ...] = ()
    kind: ClassVar[str] = "composite"

    def to_str(self) -> str:
        return "+".join(p.to_str() for p in self.parts)

    def notation(self) -> str:
        return " ∘ ".join(p.notation() for p in reversed(self.parts))

    @property
    def steps(self) -> tuple[Anonymization, ...]:
        return self.parts


ANONYMIZATION_KINDS = ("identity", "hipaa", "redaction", "dp", "sdp")


def parse_anonymization(value: Any) -> Anonymization:
    """An :class:`Anonymization` from its string (``identity``, ``hipaa``, ``redaction:regex``,
    ``dp:3``, ``dp[user]:3``, ``sdp[user]:3``, ``redaction:regex+dp[user]:8``) or mapping
    (``{"kind": "dp", "epsilon": 3, "unit": "user"}``) form.

    Example:
        >>> parse_anonymization("redaction:presidio+dp:3").notation()
        'DP(ε=3) ∘ f_redact[presidio]'
        >>> parse_anonymization("dp[user]:2.5").notation(), parse_anonymization("sdp[sequence]:8").to_str()
        ('DP(ε=2.5 per user)', 'sdp[sequence]:8')
        >>> parse_anonymization("id")
        Identity()
    """
    if isinstance(value, Anonymization):
        return value
    if value is None:
        return Identity()
    if isinstance(value, dict):
        d = dict(value)
        kind = _norm(d.pop("kind", ""))
        if kind == "composite":
            return _compose([parse_anonymization(p) for p in d.pop("parts", [])])
        allowed = {"redaction": {"policy"}, "dp": {"epsilon", "unit"}, "sdp": {"epsilon", "unit"}}.get(
            kind, set()
        )
        for k in d:
            if k not in allowed:
                raise ConfigError(
                    f"unknown key {k!r} for anonymization {kind!r}.{did_you_mean(k, allowed)}",
                    field="anonymization",
                )
        unit = d.pop("unit", None)
        arg = next(iter(d.values()), None)
        return _one(kind, None if arg is None else str(arg), None if unit is None else str(unit))
    if not isinstance(value, str):
        raise ConfigError(f"anonymization must be a string or mapping, got {value!r}", field="anonymization")
    parts = [p.strip() for p in value.split("+") if p.strip()]
    if not parts:
        return Identity()
    items = []
    for p in parts:
        m = re.fullmatch(
            r"([A-Za-z_\- ]+?)\s*(?:\[\s*([A-Za-z_]+)\s*\])?(?:\s*[:(]\s*(?:[a-z]+\s*=\s*)?([^)]*?)\s*\)?)?",
            p,
        )
        if not m:
            raise ConfigError(
                f"cannot parse anonymization {p!r}",
                field="anonymization",
                hint="use identity, hipaa, redaction:<policy>, dp:<epsilon> or dp[user]:<epsilon>",
            )
        items.append(_one(_norm(m.group(1)), m.group(3), m.group(2) and m.group(2).lower()))
    return _compose(items)


def _compose(items: list[Anonymization]) -> Anonymization:
    steps = [s for it in items for s in it.steps]
    if not steps:
        return Identity()
    return steps[0] if len(steps) == 1 else Composite(tuple(steps))


def _one(kind: str, arg: str | None, unit: str | None = None) -> Anonymization:
    aliases = {
        "id": "identity",
        "none": "identity",
        "f_hipaa": "hipaa",
        "redact": "redaction",
        "dp_sgd": "dp",
        "dp_training": "dp",
        "dptraining": "dp",
    }
    kind = aliases.get(kind, kind)
    if unit is not None and kind not in ("dp", "sdp"):
        raise ConfigError(
            f"anonymization {kind!r} takes no privacy unit [{unit}]",
            field="anonymization",
            hint="e.g. dp[user]:3",
        )
    if kind == "identity":
        return Identity()
    if kind == "hipaa":
        return Hipaa()
    if kind == "redaction":
        return Redaction(arg or "regex")
    if kind in ("dp", "sdp"):
        if arg is None:
            raise ConfigError(
                f"{kind} anonymization needs epsilon", field="anonymization", hint=f"e.g. {kind}[user]:3"
            )
        return (DPTraining if kind == "dp" else SelectiveDP)(arg, unit)  # type: ignore[arg-type]
    raise ConfigError(
        f"unknown anonymization {kind!r}.{did_you_mean(kind, ANONYMIZATION_KINDS)}",
        field="anonymization",
        hint="use identity, hipaa, redaction:<policy> or dp:<epsilon>",
    )


# ----------------------------------------------------------------------------------------- R


@dataclass(frozen=True, slots=True)
class Resource(_Factor):
    """Base of the auxiliary resources in R (paper 004 §3, "R factor")."""


@dataclass(frozen=True, slots=True)
class OtherModel(Resource):
    """A language model other than M (a public or reference model, a shadow model)."""

    name: str = "other_model"
    kind: ClassVar[str] = "other_model"

    def to_str(self) -> str:
        return self.name

    def notation(self) -> str:
        return f"M_{self.name.removesuffix('_model') or 'other'}"


@dataclass(frozen=True, slots=True)
class SimilarCorpus(Resource):
    """D̃_train: a corpus unrelated to D_train but with a very similar distribution."""

    kind: ClassVar[str] = "similar_corpus"
    symbol: ClassVar[str] = "D̃_train"


@dataclass(frozen=True, slots=True)
class PublicCorpus(Resource):
    """D_public = a'(D_private): the same documents, anonymised (a' = f_HIPAA in the paper)."""

    anonymization: Anonymization = field(default_factory=Hipaa)
    kind: ClassVar[str] = "public_corpus"

    def to_str(self) -> str:
        return f"public_corpus:{self.anonymization.to_str()}"

    def notation(self) -> str:
        return f"{self.anonymization.notation()}(D_private)"


@dataclass(frozen=True, slots=True)
class TrainSubset(Resource):
    """D_train^{P̄}: the part of the training data that mentions only non-target people."""

    kind: ClassVar[str] = "train_subset"
    symbol: ClassVar[str] = "D_train^{P̄}"


@dataclass(frozen=True, slots=True)
class NonTargetPII(Resource):
    """Personal information of non-target people P̄ (e.g. name and diseases; Lehman et al. 2021)."""

    categories: tuple[str, ...] = ("full_name",)
    kind: ClassVar[str] = "non_target_pii"

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", _categories(self.categories, field_name="resources"))
        if not self.categories:
            raise ConfigError(
                "non_target_pii needs at least one category",
                field="resources",
                hint="e.g. non_target_pii:full_name,diseases",
            )

    def to_str(self) -> str:
        return "non_target_pii:" + ",".join(self.categories)

    def notation(self) -> str:
        return _person_set(self.categories, "p̄", "P̄")


RESOURCE_KINDS = ("other_model", "similar_corpus", "public_corpus", "train_subset", "non_target_pii")
# names that other attacks use for "another model" (kept verbatim so records stay readable)
MODEL_NAMES = ("other_model", "reference_model", "public_model", "shadow_model", "pretrained_model")


def parse_resource(value: Any) -> Resource:
    """A :class:`Resource` from ``kind[:detail]`` or ``{"kind": ..., ...}``.

    Example:
        >>> parse_resource("public_corpus:hipaa").notation()
        'f_HIPAA(D_private)'
        >>> parse_resource("non_target_pii:full_name,diseases").notation()
        '{(full_name, diseases)_p̄}_{p̄∈P̄}'
    """
    if isinstance(value, Resource):
        return value
    if isinstance(value, dict):
        d = dict(value)
        kind = _norm(d.pop("kind", ""))
        allowed = {
            "other_model": {"name"},
            "public_corpus": {"anonymization"},
            "non_target_pii": {"categories"},
        }
        for k in d:
            if k not in allowed.get(kind, set()):
                raise ConfigError(
                    f"unknown key {k!r} for resource {kind!r}.{did_you_mean(k, allowed.get(kind, set()))}",
                    field="resources",
                )
        detail = next(iter(d.values()), None)
        if kind == "non_target_pii" and isinstance(detail, list | tuple):
            return NonTargetPII(tuple(detail))
        if kind == "public_corpus" and detail is not None:
            return PublicCorpus(parse_anonymization(detail))
        return parse_resource(kind if detail is None else f"{kind}:{detail}")
    if not isinstance(value, str):
        raise ConfigError(f"a resource must be a string or mapping, got {value!r}", field="resources")
    head, _, detail = value.partition(":")
    kind = _norm(head)
    if kind in MODEL_NAMES:
        return OtherModel(kind)
    if kind == "other_model":
        return OtherModel(_norm(detail) if detail else "other_model")
    if kind == "similar_corpus":
        return SimilarCorpus()
    if kind in ("public_corpus", "d_public"):
        return PublicCorpus(parse_anonymization(detail) if detail else Hipaa())
    if kind == "train_subset":
        return TrainSubset()
    if kind == "non_target_pii":
        return NonTargetPII(_categories(detail, field_name="resources") if detail else ("full_name",))
    raise ConfigError(
        f"unknown resource {head!r}.{did_you_mean(kind, RESOURCE_KINDS + MODEL_NAMES)}",
        field="resources",
        hint=f"use one of {', '.join(RESOURCE_KINDS)} (optionally kind:detail)",
    )


@dataclass(frozen=True, slots=True)
class Resources:
    """R: the auxiliary resources plus the kind of access the attacker has to M.

    Example:
        >>> r = Resources((PublicCorpus(),), access="generation")
        >>> r.grants("generation"), r.grants("scores")
        (True, False)
    """

    items: tuple[Resource, ...] = ()
    access: str = "generation"

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(dict.fromkeys(parse_resource(i) for i in self.items)))
        object.__setattr__(self, "access", check_access(self.access))

    def grants(self, access: str) -> bool:
        """Whether this access kind (or a stronger one, see :data:`ACCESS_IMPLIES`) is held."""
        return check_access(access) in ACCESS_IMPLIES[self.access]

    def notation(self) -> str:
        if not self.items:
            return "∅"
        return "{" + ", ".join(i.notation() for i in self.items) + "}"

    def to_list(self) -> list[str]:
        return [i.to_str() for i in self.items]


# ----------------------------------------------------------------------------------------- T


@dataclass(frozen=True, slots=True)
class Target(_Factor):
    """Base of I_T (paper 004 §3, "K and T factors")."""

    @property
    def categories(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True, slots=True)
class Categories(Target):
    """Model inversion: the listed categories of every target person, predicted together."""

    values: tuple[str, ...] = ()
    kind: ClassVar[str] = "categories"

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", _categories(self.values, field_name="target"))
        if not self.values:
            raise ConfigError(
                "a model-inversion target needs at least one category",
                field="target",
                hint="e.g. target: [full_name, diseases], or target: membership",
            )

    def to_str(self) -> str:
        return ",".join(self.values)

    def notation(self) -> str:
        return _person_set(self.values, "p", "P")

    @property
    def categories(self) -> tuple[str, ...]:
        return self.values


@dataclass(frozen=True, slots=True)
class Membership(Target):
    """Membership inference: I_T = {1[d ∈ D_train]}_{d∈D}."""

    kind: ClassVar[str] = "membership"
    symbol: ClassVar[str] = "{1[d ∈ D_train]}_{d∈D}"


@dataclass(frozen=True, slots=True)
class AnyInformation(Target):
    """I_T = I_U: any substring of the training data counts (Carlini et al. 2021; Inan et al. 2021)."""

    kind: ClassVar[str] = "any"
    symbol: ClassVar[str] = "I_U"


def parse_target(value: Any) -> Target:
    """A :class:`Target` from ``membership``, ``any`` (I_U) or categories (list or comma-joined).

    Example:
        >>> parse_target("full name, diseases").notation()
        '{(full_name, diseases)_p}_{p∈P}'
        >>> parse_target("any training substring")
        AnyInformation()
    """
    if isinstance(value, Target):
        return value
    if isinstance(value, dict):
        d = dict(value)
        kind = _norm(d.pop("kind", "categories"))
        if kind in ("membership", "any"):
            return parse_target(kind)
        return Categories(tuple(d.get("categories", d.get("values", ()))))
    if isinstance(value, str):
        n = _norm(value)
        if n in ("membership", "membership_inference", "member"):
            return Membership()
        if n in ("any", "i_u", "all", "any_training_substring", "any_substring"):
            return AnyInformation()
        return Categories(_categories(value, field_name="target"))
    if isinstance(value, list | tuple):
        return Categories(tuple(value))
    raise ConfigError(
        f"cannot read target {value!r}", field="target", hint="use membership, any, or a list of categories"
    )


# ----------------------------------------------------------------------------------- Scenario


@dataclass(frozen=True, slots=True)
class Scenario:
    """A full KART scenario ``(I_K, a, R, I_T)`` with the attack method that runs under it.

    Example:
        >>> s = Scenario("mlm_generation", Knowledge(("full_name",)), Identity(),
        ...              Resources((PublicCorpus(),), access="fill_mask"), Categories(("diseases",)))
        >>> s.notation()
        '({full_name_p}_{p∈P}, id, {f_HIPAA(D_private)}, {diseases_p}_{p∈P})'
        >>> Scenario.from_dict(s.to_dict()) == s
        True
    """

    attack: str
    knowledge: Knowledge = field(default_factory=Knowledge)
    anonymization: Anonymization = field(default_factory=Identity)
    resources: Resources = field(default_factory=Resources)
    target: Target = field(default_factory=AnyInformation)
    notes: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.attack, str) or not self.attack.strip():
            raise ConfigError("a scenario needs the attack method", field="attack")
        if not isinstance(self.knowledge, Knowledge):
            object.__setattr__(
                self, "knowledge", Knowledge(tuple(_categories(self.knowledge, field_name="knowledge")))
            )
        object.__setattr__(self, "anonymization", parse_anonymization(self.anonymization))
        object.__setattr__(self, "target", parse_target(self.target))
        if not isinstance(self.resources, Resources):
            raise ConfigError("resources must be a Resources value", field="resources")
        both = set(self.knowledge.categories) & set(self.target.categories)
        if both:
            raise ConfigError(
                f"knowledge and target share {sorted(both)}; paper 004 §3 requires I_K ∩ I_T = ∅",
                field="target",
                hint="drop the known categories from the target",
            )

    def notation(self) -> str:
        """``(I_K, a, R, I_T)`` in the paper's notation (§3, "Summary")."""
        return (
            f"({self.knowledge.notation()}, {self.anonymization.notation()}, "
            f"{self.resources.notation()}, {self.target.notation()})"
        )

    def check_access(self, *required: str, attack: str | None = None) -> None:
        """Raise :class:`CapabilityError` unless every required access is granted (before any work).

        ``required`` are access kinds or :class:`~lmleak.models.base.Capability` values.
        """
        for need in required:
            value = getattr(need, "value", need)
            kind = CAPABILITY_ACCESS.get(str(value), str(value))
            if not self.resources.grants(kind):
                raise CapabilityError(
                    f"{attack or self.attack} needs '{check_access(kind)}' access, but scenario "
                    f"{self.name or self.notation()} grants only '{self.resources.access}' "
                    f"(which implies {', '.join(sorted(ACCESS_IMPLIES[self.resources.access]))}). "
                    f"Raise the scenario's access or choose an attack that needs only '{self.resources.access}'."
                )

    def to_record(self) -> dict[str, Any]:
        """The flat JSON record attacks store under ``"scenario"`` in ``summary.json``."""
        rec: dict[str, Any] = {
            "attack": self.attack,
            "knowledge": self.knowledge.to_list(),
            "anonymization": self.anonymization.to_str(),
            "resources": self.resources.to_list(),
            "access": self.resources.access,
            "target": self.target.to_str(),
            "notes": self.notes,
            "notation": self.notation(),
        }
        if self.name is not None:
            rec["name"] = self.name
        return rec

    def to_dict(self) -> dict[str, Any]:
        """Same as :meth:`to_record` (the one serialised form; :meth:`from_dict` reads it back)."""
        return self.to_record()

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, where: str | None = None) -> Scenario:
        """Read a record or a YAML mapping; unknown keys are rejected with a suggestion."""
        if not isinstance(d, dict):
            raise ConfigError(f"a scenario must be a mapping, got {type(d).__name__}", path=where)
        allowed = _SCENARIO_KEYS
        for k in d:
            if k not in allowed:
                raise ConfigError(
                    f"unknown scenario key {k!r}.{did_you_mean(str(k), allowed)}",
                    path=where,
                    field=str(k),
                    hint=f"allowed keys: {', '.join(allowed[:-1])}",
                )
        res, access = _resources_and_access(d, where)
        try:
            return cls(
                attack=str(d.get("attack") or ""),
                knowledge=Knowledge(_categories(d.get("knowledge"), field_name="knowledge")),
                anonymization=parse_anonymization(d.get("anonymization", "identity")),
                resources=Resources(tuple(parse_resource(r) for r in res), access=str(access)),
                target=parse_target(d.get("target", "any")),
                notes=d.get("notes"),
                name=d.get("name"),
            )
        except ConfigError as e:
            if where is not None and e.path is None:
                raise ConfigError(e.reason, path=where, field=e.field, hint=e.hint) from None
            raise


#: The keys of a scenario mapping (``notation`` last: records carry it, the hint leaves it out).
_SCENARIO_KEYS = (
    "attack",
    "knowledge",
    "anonymization",
    "resources",
    "access",
    "target",
    "notes",
    "name",
    "notation",
)


def _resources_and_access(d: dict[str, Any], where: str | None) -> tuple[list[Any] | tuple[Any, ...], Any]:
    """A scenario mapping's resource names and access kind, from ``resources: [...]`` plus
    ``access:`` or from ``resources: {access: ..., items: [...]}`` (a top-level ``access`` wins)."""
    res = d.get("resources") or ()
    access = d.get("access")
    if isinstance(res, dict):  # {access: ..., items: [...]}
        res = dict(res)
        if "access" in res:
            access = res.pop("access") if access is None else access
        items = res.pop("items", ())
        for k in res:
            raise ConfigError(
                f"unknown resources key {k!r}.{did_you_mean(str(k), ('access', 'items'))}",
                path=where,
                field="resources",
            )
        res = items or ()
    if access is None:
        raise ConfigError(
            "missing access kind",
            path=where,
            field="access",
            hint=f"use one of {', '.join(ACCESS_KINDS)}",
        )
    if isinstance(res, str):
        res = [res]
    if not isinstance(res, (list, tuple)):
        raise ConfigError(
            f"resources must be a list of resource names, got {type(res).__name__} {res!r}",
            path=where,
            field="resources",
            hint="write e.g. resources: [public_model] or resources: {access: scores, items: [...]}",
        )
    return res, access
