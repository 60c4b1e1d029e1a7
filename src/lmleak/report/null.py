"""The null of the leaked-PII headline: members against the people the model never saw (issue 32).

A model that never saw a person still completes template text that happens to sit in one person's
documents (``Jan 2019 20``, ``.org>\\n>``, a list header). Counting every user-unique PII sequence
as a leak makes a model that never saw the audited people fail. The report therefore splits each
*headline* leaked-PII sequence — user-unique as token ids and as text, holding a headline PII kind
(:data:`HEADLINE_PII_TYPES`), at least ``min_tokens`` long — by its owner:

- a **member** (trained on): ``pii_unique_sequences_members``, and ``pii_people_members`` of the
  ``pii_people_members_n`` members in the corpus own at least one;
- a **held-out person** (``holdout.json``, or a corpus of people the model never saw): the null,
  ``null_pii_unique_sequences`` (with ``_ci``) and ``pii_people_null`` of ``pii_people_null_n``.

``pii_people_excess`` is the members' share minus the held-out people's share, with Newcombe's
hybrid score interval (:func:`~lmleak.intervals.newcombe_difference_interval`): the share of
people affected beyond what the model generalises. ``null_kind`` says which null it is read
against:

- ``"held_out"``: held-out people's documents are in the corpus;
- ``"public_model"``: none are, but a public (or leave-out) model scored the sequences; the members'
  count is then the *curated* one (sequences the public model finds at least ``t`` times less
  likely), the null share is 0 by construction, and the interval is the members' share's Wilson
  interval;
- None: no null; ``pii_people_excess`` is None with ``pii_people_excess_reason`` and
  ``pii_people_excess_fix`` (the line that would give one).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from lmleak.intervals import count_interval, newcombe_difference_interval, wilson_interval

#: PII kinds that identify a person, headlined by default: e-mail, phone, name, postal address and
#: identifiers (the entity names of the regex, Presidio and HIPAA detectors). Dates, bare digit runs,
#: URLs, organisations and places are counted (``pii_unique_sequences`` by type) but not headlined.
HEADLINE_PII_TYPES: tuple[str, ...] = (
    "EMAIL", "EMAIL_ADDRESS", "PHONE", "PHONE_NUMBER", "FAX", "PERSON", "NAME", "ADDRESS",
    "SSN", "US_SSN", "CREDIT_CARD", "IP", "IP_ADDRESS", "IBAN_CODE", "US_BANK_NUMBER", "ACCOUNT",
    "US_DRIVER_LICENSE", "US_PASSPORT", "PASSPORT", "LICENSE", "MRN", "HEALTH_PLAN", "DEVICE",
    "VEHICLE", "ORDER_ID", "TRACKING_ID",
)  # fmt: skip

#: The line that gives the leaked-PII headline a null, where it has none.
NO_NULL_FIX = (
    "hold people out of training (`lmleak train --holdout-users 0.1`: the report then runs over their "
    "documents too), give a corpus of people the model never saw (`lmleak audit --holdout PEOPLE.jsonl`, "
    "or `analyses.mia.non_members:` in the audit config), or a public model (`public_model:` in the "
    "audit config, `--public-model` for `lmleak report`)"
)
NO_NULL_REASON = (
    "no null: no held-out person's documents are in the corpus and no public model scored the "
    "sequences, so nothing shows what a model that never saw these people reproduces"
)
PUBLIC_NULL_NOTE = (
    "null is the public model: members' leaks are the curated ones (the public model finds them at "
    "least t times less likely), so the null share is 0 by construction"
)


def headline_pii_mask(
    users_in_d: Any,
    pii_types: Any,
    length_tokens: Any,
    *,
    min_tokens: int,
    headline_types: Collection[str] = HEADLINE_PII_TYPES,
    users_with_text: Any = None,
) -> np.ndarray:
    """Rows that are headline leaked PII: user-unique, unique as text too (``users_with_text`` at
    most 1, or unknown), holding a headline kind, at least ``min_tokens`` long.

    Example:
        >>> headline_pii_mask([1, 1, 1, 1, 2], [["EMAIL"], ["DATE"], ["EMAIL"], ["PHONE"], ["EMAIL"]],
        ...                   [9, 9, 9, 2, 9], min_tokens=5, users_with_text=[1, 1, 3, 1, None]).tolist()
        [True, False, False, False, False]
    """
    n = len(users_in_d)
    texts = [None] * n if users_with_text is None else list(users_with_text)
    keep = set(headline_types)
    out = np.zeros(n, dtype=bool)
    for i, (u, ty, length, nt) in enumerate(zip(users_in_d, pii_types, length_tokens, texts, strict=True)):
        text_unique = nt is None or (isinstance(nt, float) and nt != nt) or int(nt) <= 1
        out[i] = (
            int(u) == 1
            and ty is not None
            and bool(keep & set(ty))
            and int(length) >= min_tokens
            and text_unique
        )
    return out


def _per_user_counts(owners: Sequence[str], mask: np.ndarray, users: Sequence[str]) -> list[int]:
    counts = dict.fromkeys(users, 0)
    for u, m in zip(owners, mask, strict=True):
        if m and u in counts:
            counts[u] += 1
    return list(counts.values())


# long: the docstring's example is the hand-checked case; the body is the three nulls' branches
def null_metrics(
    owners: Sequence[str],
    headline: np.ndarray,
    users: Sequence[str],
    held_out: Collection[str],
    *,
    curated: np.ndarray | None = None,
    n_boot: int = 1000,
) -> dict[str, Any]:
    """The keys of the module docstring for one k.

    Args:
        owners: each row's owner (a unique row's one user; any value for other rows).
        headline: the headline leaked-PII rows (:func:`headline_pii_mask`).
        users: every user of the corpus.
        held_out: the users the model never saw (those not in ``users`` are ignored).
        curated: with a public model, the rows it finds unlikely (ratio >= t); None without one.

    Example:
        >>> m = null_metrics(["a", "a", "b", "h1"], np.array([True, True, True, True]),
        ...                  ["a", "b", "c", "d", "h1", "h2"], {"h1", "h2"})
        >>> m["pii_unique_sequences_members"], m["null_pii_unique_sequences"], m["null_kind"]
        (3, 1, 'held_out')
        >>> m["pii_people_members"], m["pii_people_members_n"], m["pii_people_null"], m["pii_people_null_n"]
        (2, 4, 1, 2)
        >>> m["pii_people_excess"], [round(x, 4) for x in m["pii_people_excess_ci"]]
        (0.0, [-0.5356, 0.5356])
        >>> null_metrics(["a"], np.array([True]), ["a", "b"], set())["pii_people_excess_reason"] == NO_NULL_REASON
        True
    """
    everyone = sorted(set(map(str, users)))
    held = [u for u in everyone if u in set(map(str, held_out))]
    held_set = set(held)
    members = [u for u in everyone if u not in held_set]
    owners = [str(o) for o in owners]
    kind = "held_out" if held else ("public_model" if curated is not None else None)
    mask = headline if kind != "public_model" else headline & curated  # type: ignore[operator]
    member_counts = _per_user_counts(owners, mask, members)
    out: dict[str, Any] = {
        "null_kind": kind,
        "pii_unique_sequences_members": int(sum(member_counts)),
        "pii_unique_sequences_members_ci": _ci(member_counts, n_boot),
        "pii_people_members": int(sum(1 for c in member_counts if c > 0)),
        "pii_people_members_n": len(members),
        "null_pii_unique_sequences": None,
        "null_pii_unique_sequences_ci": None,
        "pii_people_null": None,
        "pii_people_null_n": None,
        "pii_people_excess": None,
        "pii_people_excess_ci": None,
    }
    x1, n1 = out["pii_people_members"], out["pii_people_members_n"]
    if kind == "held_out":
        out.update(_against_held_out(x1, n1, _per_user_counts(owners, headline, held), n_boot))
    elif kind == "public_model":
        out["pii_people_null"] = 0
        out["null_note"] = PUBLIC_NULL_NOTE
        w = wilson_interval(x1, n1) if n1 else None
        if w is not None:
            out["pii_people_excess"] = x1 / n1
            out["pii_people_excess_ci"] = [w[0], w[1]]
    else:
        out["pii_people_excess_reason"] = NO_NULL_REASON
        out["pii_people_excess_fix"] = NO_NULL_FIX
    return out


def _against_held_out(x1: int, n1: int, null_counts: list[int], n_boot: int) -> dict[str, Any]:
    """The null's keys from the held-out people's counts, and the excess of ``x1`` of ``n1`` members."""
    x2, n2 = int(sum(1 for c in null_counts if c > 0)), len(null_counts)
    out: dict[str, Any] = {
        "null_pii_unique_sequences": int(sum(null_counts)),
        "null_pii_unique_sequences_ci": _ci(null_counts, n_boot),
        "pii_people_null": x2,
        "pii_people_null_n": n2,
    }
    ci = newcombe_difference_interval(x1, n1, x2, n2) if n1 else None
    if ci is not None:
        out["pii_people_excess"] = x1 / n1 - x2 / n2
        out["pii_people_excess_ci"] = [ci[0], ci[1]]
    else:
        out["pii_people_excess_reason"] = "every person in the corpus was held out: no member to compare"
        out["pii_people_excess_fix"] = "audit against a corpus holding the people the model was trained on"
    return out


def null_keys(
    part: Any,
    users: Sequence[str],
    held_out: Collection[str],
    *,
    curated: np.ndarray | None,
    headline_types: Collection[str],
    n_boot: int = 1000,
) -> dict[str, Any]:
    """One k's keys from its features rows (``pii_headline``, ``user_ids``, ``pii_owner``,
    ``pii_types``, ``pii_personal``): :func:`null_metrics`, the members' headline leaks by whose PII
    they hold (``pii_owner_counts``), the members affected by headline kind
    (``pii_people_members_by_type``), and ``pii_personal_people_members``, ``_null``, ``_excess`` and
    ``_excess_ci``: the same people counts over the headline rows that reproduce a whole personal value
    (:func:`~lmleak.report.owners.owner_columns`), shown beside the limit and not deciding it."""
    headline = part["pii_headline"].to_numpy(dtype=bool)
    owners = [str(us[0]) if len(us) else "" for us in part["user_ids"]]
    out = null_metrics(owners, headline, users, held_out, curated=curated, n_boot=n_boot)
    held = set(map(str, held_out))
    members = np.array([o not in held for o in owners], dtype=bool)
    out["pii_owner_counts"] = owner_counts(list(part["pii_owner"]), headline, members)
    kinds = set(headline_types)
    by_type: dict[str, set[str]] = {}
    for owner, types, h, m in zip(owners, part["pii_types"], headline, members, strict=True):
        for t in types if h and m else ():
            if t in kinds:
                by_type.setdefault(str(t), set()).add(owner)
    out["pii_people_members_by_type"] = {t: len(us) for t, us in sorted(by_type.items())}
    if "pii_personal" in part.columns:  # beside the limit, not in it: people with a whole personal value
        personal = headline & part["pii_personal"].fillna(False).to_numpy(dtype=bool)
        strict = null_metrics(owners, personal, users, held_out, n_boot=n_boot)
        for key in ("members", "null", "excess", "excess_ci"):
            out[f"pii_personal_people_{key}"] = strict[f"pii_people_{key}"]
    return out


def _ci(per_user: list[int], n_boot: int) -> list[float] | None:
    ci, _ = count_interval(per_user, n_boot=n_boot)
    return None if ci is None else [ci[0], ci[1]]


def owner_counts(
    pii_owner: Sequence[str | None], headline: np.ndarray, members: np.ndarray
) -> dict[str, int]:
    """The members' headline leaked-PII sequences by whose value they hold (:mod:`lmleak.report.owners`).

    Example:
        >>> owner_counts(["own", "third_party", "own", None], np.array([True, True, True, True]),
        ...              np.array([True, True, False, True]))
        {'own': 1, 'third_party': 1, 'unknown': 1}
    """
    out = {"own": 0, "third_party": 0, "unknown": 0}
    for o, h, m in zip(pii_owner, headline, members, strict=True):
        if h and m:
            out[o if o in out else "unknown"] += 1
    return out
