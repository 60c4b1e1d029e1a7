"""The privacy unit of DP training — which sequences belong to which person — and how a step samples.

A DP guarantee protects a *unit*: whatever may be added or removed between neighbouring datasets.

- ``sequence``: one training sequence (a chunk of one document) is the unit. Each step keeps every
  sequence independently with probability q (Poisson sampling, Opacus' rule: q = 1 / steps per
  epoch); each sequence's gradient is clipped to C.
- ``user``: the person is the unit (user-wise DP-SGD, Chua et al. 2024 "Mind the Privacy Unit";
  user-level sampling, Charles et al. 2024). Each step keeps every *user* independently with
  probability q; a kept user contributes up to ``max_sequences_per_user`` (K) of their sequences,
  chosen at random, and the user's gradient — the mean of those sequences' gradients — is clipped
  to C (:class:`lmleak.train.bk.Grouping` reduces the per-sample gradients by user before the norm).
  Noise N(0, σ²C²) is added to the sum over users, which is divided by the expected number of users
  per step, q · users. The accountant composes the same subsampled Gaussian with q the *user*
  sampling rate, so ε is per person however many sequences they wrote.

``batch_size`` counts units: expected sequences per step at sequence level, expected users per step
at user level. Samplers (``sampler``): ``poisson`` (above; what the accountants assume) or
``shuffle`` (fixed-size batches from a shuffled order, each unit once per epoch: what most
training loops do; its ε is not the Poisson accountant's, see
:func:`lmleak.train.accounting.sampler_epsilon`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from lmleak.errors import ConfigError
from lmleak.train.accounting import group_privacy, sampler_epsilon
from lmleak.train.config import PRIVACY_UNITS, SAMPLERS
from lmleak.words import plural

#: what ``privacy.json`` says a unit is, beside the short name
UNIT_DESCRIPTIONS = {
    "user": "one person (every training sequence of one user id)",
    "sequence": "one training sequence (a chunk of one document)",
}


def resolve_privacy_unit(
    requested: str | None, mode: str, users: Sequence[str] | None
) -> tuple[str | None, str]:
    """(the privacy unit of a run, why): ``user`` by default for a DP mode whenever the data has user
    ids, ``sequence`` when asked for (or when nothing says who wrote what); None without DP.

    Example:
        >>> resolve_privacy_unit(None, "dp", ["u1", "u2"])
        ('user', 'default: the training data has user ids (2 users)')
        >>> resolve_privacy_unit("sequence", "crt", ["u1"])[0], resolve_privacy_unit(None, "nodp", ["u1"])[0]
        ('sequence', None)
    """
    if requested is not None and requested not in PRIVACY_UNITS:
        raise ConfigError(
            f"unknown privacy unit {requested!r}", field="privacy_unit", hint="use user or sequence"
        )
    if mode == "nodp":
        return None, "no differential privacy"
    if requested == "sequence":
        return "sequence", "asked for (--privacy-unit sequence)"
    if not users:
        if requested == "user":
            raise ConfigError(
                "user-level DP needs to know who wrote each training sequence, and this data has no user ids",
                field="privacy_unit",
                hint="give the corpus a user_id column, or pass --privacy-unit sequence",
            )
        return "sequence", "default: the training data has no user ids"
    if requested == "user":
        return "user", f"asked for (--privacy-unit user; {plural(len(users), 'user')})"
    return "user", f"default: the training data has user ids ({plural(len(users), 'user')})"


@dataclass(frozen=True)
class Units:
    """Who owns which training sequence: ``users`` (ids, in order of first appearance), ``owner``
    (N,) each sequence's user index, ``members`` each user's sequence indices."""

    users: list[str]
    owner: torch.Tensor
    members: list[torch.Tensor]

    @classmethod
    def of(cls, docs: torch.Tensor, user_of_doc: Sequence[str]) -> Units:
        """From each sequence's document index (``Chunks.docs``) and each document's user id.

        Example:
            >>> u = Units.of(torch.tensor([0, 0, 1, 2]), ["a", "b", "a"])
            >>> u.users, u.owner.tolist(), [m.tolist() for m in u.members]
            (['a', 'b'], [0, 0, 1, 0], [[0, 1, 3], [2]])
        """
        index: dict[str, int] = {}
        owner = [index.setdefault(user_of_doc[int(d)], len(index)) for d in docs.tolist()]
        owner_t = torch.tensor(owner, dtype=torch.long)
        order = torch.argsort(owner_t, stable=True)
        counts = torch.bincount(owner_t, minlength=len(index)).tolist()
        return cls(list(index), owner_t, list(torch.split(order, counts)))

    @classmethod
    def of_corpus(cls, chunks: Any, corpus: Any) -> Units:
        """For chunks encoded from ``corpus.texts()`` (:func:`lmleak.train.plain.encode_chunks`)."""
        if chunks.docs is None:
            raise ValueError("these chunks do not record their documents (encode them with encode_chunks)")
        return cls.of(chunks.docs, [d.user_id for d in corpus])

    def counts(self) -> torch.Tensor:
        """Training sequences per user."""
        return torch.tensor([len(m) for m in self.members], dtype=torch.long)

    def largest(self) -> tuple[str, int]:
        """(the user with the most training sequences, how many): the group size of group privacy."""
        counts = self.counts()
        if not len(counts):
            return "", 0
        i = int(torch.argmax(counts))
        return self.users[i], int(counts[i])


class Batch(NamedTuple):
    """One step's rows (indices into the sequences) and, at user level, each row's user in 0..U-1."""

    idx: torch.Tensor
    groups: torch.Tensor | None


class Sampler:
    """One epoch's batches under a privacy unit and a sampler (module docstring for the rules).

    ``sample_rate`` is q, ``steps_per_epoch`` is 1/q, ``expected_size`` the divisor of the noised
    sum (Opacus' ``int(n q)`` sequences; q · users at user level). The randomness is torch's global
    generator, so a checkpoint that saves it resumes with the same batches.
    """

    def __init__(
        self,
        n_sequences: int,
        batch_size: int,
        *,
        unit: str = "sequence",
        kind: str = "poisson",
        units: Units | None = None,
        max_per_user: int | None = None,
    ) -> None:
        if kind not in SAMPLERS:
            raise ConfigError(f"unknown sampler {kind!r}", field="sampler", hint="use poisson or shuffle")
        if unit == "user" and units is None:
            raise ValueError("a user-level sampler needs the Units of the sequences")
        self.unit, self.kind, self.units, self.max_per_user = unit, kind, units, max_per_user
        self.n = len(units.users) if unit == "user" and units is not None else n_sequences
        self.batch = max(1, min(batch_size, self.n))
        self.steps_per_epoch = max(1, math.ceil(self.n / self.batch))
        self.sample_rate = 1 / self.steps_per_epoch
        if kind == "shuffle":
            self.expected_size: float = float(self.batch)
        elif unit == "user":
            self.expected_size = max(self.n * self.sample_rate, 1e-12)
        else:
            self.expected_size = max(1, int(self.n * self.sample_rate))

    def epoch(self) -> Iterator[Batch]:
        """``steps_per_epoch`` batches (an empty one is a noise-only step, still accounted)."""
        order = torch.randperm(self.n) if self.kind == "shuffle" else None
        for step in range(self.steps_per_epoch):
            if order is not None:
                chosen = order[step * self.batch : (step + 1) * self.batch]
            else:
                chosen = (torch.rand(self.n) < self.sample_rate).nonzero().reshape(-1)
            yield Batch(chosen, None) if self.unit == "sequence" else self._user_rows(chosen)

    def _user_rows(self, chosen: torch.Tensor) -> Batch:
        """The rows of the chosen users: up to ``max_per_user`` random sequences each, grouped."""
        assert self.units is not None
        rows, sizes = [], []
        for u in chosen.tolist():
            members = self.units.members[u]
            k = self.max_per_user
            if k is not None and len(members) > k:
                members = members[torch.randperm(len(members))[:k]]
            rows.append(members)
            sizes.append(len(members))
        if not rows:
            empty = torch.zeros(0, dtype=torch.long)
            return Batch(empty, empty)
        groups = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
        return Batch(torch.cat(rows), groups)

    def describe(self) -> dict[str, Any]:
        """The sampling facts ``privacy.json`` records."""
        return {
            "sampler": self.kind,
            "sampled": "users" if self.unit == "user" else "sequences",
            "sample_rate": self.sample_rate,
            "expected_units_per_step": self.expected_size,
            "units": self.n,
        }


GROUP_PRIVACY_NOTE = (
    "a sequence-level guarantee read for one person by group privacy (Dwork & Roth 2014, Thm 2.2; "
    "(k eps, k e^((k-1) eps) delta) for k sequences): the bound for the user with the most training "
    "sequences, not a user-level guarantee"
)


def unit_record(
    *,
    unit: str,
    reason: str,
    units: Units | None,
    sampler: Sampler,
    config: Any,
    noise_multiplier: float,
    steps: int,
    poisson_epsilon: float,
) -> dict[str, Any]:
    """What ``privacy.json`` says about the unit, the sampler and ε (for the sampler actually used):
    ``privacy_unit``, ``max_sequences_per_user``, ``sampler``, ``epsilon`` (and for a shuffled run
    the Poisson accountant's number beside it with ``sampler_warning``), the users and the largest
    user's sequence count, and for a sequence-level run the group-privacy bound for that user.
    ``config`` is the run's record (:class:`~lmleak.train.config.TrainConfig` or ``FinetuneConfig``):
    its ``max_sequences_per_user``, ``target_delta`` and ``accountant`` are read."""
    delta = config.target_delta
    eps = sampler_epsilon(
        noise_multiplier,
        sampler.sample_rate,
        steps,
        delta,
        sampler.kind,
        config.accountant,
        poisson_epsilon=poisson_epsilon,
    )
    out: dict[str, Any] = {
        "privacy_unit": unit,
        "privacy_unit_description": UNIT_DESCRIPTIONS[unit],
        "privacy_unit_reason": reason,
        "max_sequences_per_user": config.max_sequences_per_user if unit == "user" else None,
        **sampler.describe(),
        "epsilon": eps["epsilon"],
        "epsilon_method": eps["epsilon_accountant"],
    }
    if sampler.kind != "poisson":
        out["epsilon_poisson_accountant"] = eps["epsilon_poisson_accountant"]
        out["sampler_warning"] = eps["warning"]
    if units is not None and units.users:
        user, k = units.largest()
        out["users"] = len(units.users)
        out["largest_user_sequences"] = k
        if unit == "sequence":
            g_eps, g_delta = group_privacy(float(eps["epsilon"]), delta, max(k, 1))
            out["group_privacy_epsilon_largest_user"] = g_eps
            out["group_privacy_delta_largest_user"] = g_delta
            out["group_privacy_note"] = GROUP_PRIVACY_NOTE
    return out
