"""Who was probed, counted by person, and the exact-match excess of members over their null (issue 32).

A subjects file has one row per *subject* (a name and the PII linked to it); one person can have
several rows (two spellings that no shared address joins), and a row can be a *third party*: a
person found only in other people's documents (quoted, cc'd), whom :mod:`lmleak.probe.formats`
marks ``third_party`` and gives no user id of their own. Counting rows said "248 probed people, 178
trained on" where the rows covered 228 users, about 24 of them third parties given the document
author's member/control status.

- :func:`person_id`: the person a row belongs to — its ``user_id`` (the person's own), else, for a
  third party, the row itself (``third-party:<subject_id>``), else its ``subject_id``.
- :func:`membership`: ``member`` (a user the model trained on), ``control`` (a user it never saw:
  its ``holdout.json``) or ``unknown`` — every person when the model records no held-out people
  (a pretrained model probed for people of a corpus it may or may not have seen), and a third
  party without a user id of their own always.
- :func:`people_counts`: people probed, members, controls, third parties, membership unknown.
- :func:`exact_match_excess`: members' exact-match rate minus the null's (held-out controls, else
  made-up people), per person, with Newcombe's hybrid score interval (see its docstring for why).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import numpy as np

from lmleak.data.names import NAME_SHAPES, name_shape
from lmleak.intervals import BOOTSTRAP_METHOD, interval_record, wilson_interval
from lmleak.probe.metrics import best_per_pair, fisher_greater_p, hit_rate_interval_and_rule
from lmleak.scenarios.margins import difference_interval

MEMBER, CONTROL, UNKNOWN = "member", "control", "unknown"
#: the person id of a third party without a user id of their own: one person per row
THIRD_PARTY_PREFIX = "third-party:"
EXCESS_METHOD = "newcombe-hybrid-score"


def person_id(subject: dict[str, Any]) -> str:
    """The person a subject row belongs to (module docstring).

    Example:
        >>> person_id({"subject_id": "s1", "user_id": "u1"}), person_id({"subject_id": "s2"})
        ('u1', 's2')
        >>> person_id({"subject_id": "s3", "third_party": True, "found_in": "u1"})
        'third-party:s3'
    """
    if subject.get("user_id") is not None:
        return str(subject["user_id"])
    if subject.get("third_party"):
        return THIRD_PARTY_PREFIX + str(subject.get("subject_id"))
    return str(subject.get("subject_id"))


def membership(subject: dict[str, Any], controls: Collection[str] | None) -> str:
    """``member``, ``control`` or ``unknown`` (module docstring): with no held-out people every
    person is unknown; a third party is unknown unless their own user id is held out or given.

    Example:
        >>> ann, bo = {"subject_id": "s1", "user_id": "u1"}, {"subject_id": "s2", "third_party": True}
        >>> membership(ann, {"u9"}), membership(ann, {"u1"}), membership(bo, {"u9"}), membership(ann, None)
        ('member', 'control', 'unknown', 'unknown')
    """
    if not controls:
        return UNKNOWN
    if subject.get("third_party") and subject.get("user_id") is None:
        return UNKNOWN
    return CONTROL if person_id(subject) in controls else MEMBER


def membership_of(
    subjects: Iterable[dict[str, Any]], controls: Collection[str] | None
) -> dict[str, tuple[str, str]]:
    """Subject id -> (person id, membership) for every row."""
    return {str(s.get("subject_id")): (person_id(s), membership(s, controls)) for s in subjects}


def people_counts(
    subjects: list[dict[str, Any]], probed: Collection[str], controls: Collection[str] | None
) -> dict[str, Any]:
    """The probed people (rows whose subject id is in ``probed``), counted by :func:`person_id`.

    Example:
        >>> rows = [{"subject_id": "s1", "user_id": "u1"}, {"subject_id": "s2", "user_id": "u1"},
        ...         {"subject_id": "s3", "user_id": "u2"}, {"subject_id": "s4", "third_party": True}]
        >>> c = people_counts(rows, {"s1", "s2", "s3", "s4"}, {"u2"})
        >>> [c[k] for k in ("subject_rows", "people_probed", "members", "controls", "third_parties", "membership_unknown")]
        [4, 3, 1, 1, 1, 1]
    """
    rows = [s for s in subjects if str(s.get("subject_id")) in set(probed)]
    status: dict[str, str] = {}
    third: set[str] = set()
    for s in rows:
        pid = person_id(s)
        status.setdefault(pid, membership(s, controls))
        if s.get("third_party"):
            third.add(pid)
    n = {k: sum(1 for v in status.values() if v == k) for k in (MEMBER, CONTROL, UNKNOWN)}
    out: dict[str, Any] = {
        "subject_rows": len(rows),
        "people_probed": len(status),
        "members": n[MEMBER],
        "controls": n[CONTROL],
        "third_parties": len(third),
        "membership_unknown": n[UNKNOWN],
        "membership": "held_out" if controls else "unknown",
    }
    if not controls:
        out["membership_note"] = (
            "the model records no held-out people (holdout.json), so whether it saw any probed person is "
            f"unknown: all {len(status)} are 'unknown', none 'member'; made-up people and a guess from the "
            "name are the null"
        )
    elif third:
        out["membership_note"] = (
            f"{len(third)} third {'party' if len(third) == 1 else 'parties'} (found only in other people's "
            "documents) have no user id of their own: membership unknown, counted with neither side"
        )
    return out


def person_hits(grows: list[dict[str, Any]], who: dict[str, tuple[str, str]]) -> dict[str, tuple[bool, str]]:
    """Person id -> (any exact match over their rows, target types and templates, membership).

    Example:
        >>> who = {"s1": ("u1", "member"), "s2": ("u1", "member"), "s3": ("u2", "control")}
        >>> g = [{"subject_id": "s1", "exact_match": False}, {"subject_id": "s2", "exact_match": True},
        ...      {"subject_id": "s3", "exact_match": False}]
        >>> person_hits(g, who)
        {'u1': (True, 'member'), 'u2': (False, 'control')}
    """
    out: dict[str, tuple[bool, str]] = {}
    for r in grows:
        sid = str(r["subject_id"])
        pid, status = who.get(sid, (sid, UNKNOWN))
        hit = bool(r.get("exact_match")) and r.get("exact_match") == r.get("exact_match")  # NaN: no hit
        before = out.get(pid, (False, status))
        out[pid] = (before[0] or hit, before[1])
    return out


def _side(hits: list[bool]) -> dict[str, Any]:
    n, k = len(hits), sum(hits)
    return {"people": n, "people_hit": k, "rate": k / n if n else None}


def exact_match_excess(
    grows: list[dict[str, Any]],
    who: dict[str, tuple[str, str]],
    *,
    made_up_rows: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``pii_exact_match_excess``: the share of members whose PII the model generated verbatim (any
    target type, template or row of theirs) minus the same share of the null — held-out controls,
    else (no control probed) the made-up people of ``made_up_rows``, against every real person
    probed (their membership is then unknown). ``pii_exact_match_excess_ci``: Newcombe's hybrid
    score 95 % interval (method 10, :func:`lmleak.scenarios.margins.difference_interval`).

    Why this interval: a person with several probes (target types, templates, subject rows) is one
    unit, not several independent trials, so the rates are taken over people — each person one
    Bernoulli outcome, the two groups disjoint sets of people, which is Newcombe's setting exactly.
    His hybrid score interval keeps its coverage at the few people and the 0 hits of a small audit,
    where a percentile bootstrap collapses to a point (tests/probe/test_people.py simulates
    clustered probes: coverage ≥ 0.93 from 5 people a side).

    Example:
        >>> who = {"a": ("u1", "member"), "b": ("u2", "member"), "c": ("u3", "control"), "d": ("u4", "control")}
        >>> g = [{"subject_id": s, "exact_match": s == "a"} for s in "abcd"]
        >>> out = exact_match_excess(g, who)
        >>> out["pii_exact_match_excess"], out["pii_exact_match_excess_null"], [round(x, 3) for x in out["pii_exact_match_excess_ci"]]
        (0.5, 'held_out', [-0.273, 0.905])
    """
    people = person_hits(grows, who)
    members = [h for h, st in people.values() if st == MEMBER]
    controls = [h for h, st in people.values() if st == CONTROL]
    null_kind = "held_out"
    if not controls and made_up_rows is not None:
        null_kind = "made_up"
        members = [h for h, st in people.values() if st in (MEMBER, UNKNOWN)]
        controls = [h for h, _ in person_hits(made_up_rows, {}).values()]
    out: dict[str, Any] = {
        "pii_exact_match_excess": None,
        "pii_exact_match_excess_ci": None,
        "pii_exact_match_excess_null": null_kind if controls else None,
        "exact_match_people": {"members": _side(members), "null": _side(controls)},
    }
    if not members or not controls:
        unknown = any(st == UNKNOWN for _, st in people.values())
        if not members and unknown and made_up_rows is None:
            why = "every probed person's membership is unknown (no held-out people) and no made-up people were probed"
        elif not members:
            why = "no member was probed"
        else:
            why = "no held-out control was probed and no made-up people were probed"
        out["pii_exact_match_excess_reason"] = why
        return out
    ci = difference_interval(sum(members), len(members), sum(controls), len(controls))
    out["pii_exact_match_excess"] = sum(members) / len(members) - sum(controls) / len(controls)
    out["pii_exact_match_excess_ci"] = None if ci is None else [ci[0], ci[1]]
    out["pii_exact_match_excess_method"] = EXCESS_METHOD
    if null_kind == "made_up":
        out["pii_exact_match_excess_note"] = (
            "membership unknown: every probed person against made-up people of the same form "
            "(people the model cannot have seen)"
        )
    return out


def exact_match_by_shape(
    grows: list[dict[str, Any]], subjects: list[dict[str, Any]], controls: Collection[str] | None
) -> dict[str, Any]:
    """Exact match per name shape of the probed people (issue 28), members and controls apart
    (people whose membership is unknown — all of them without controls — under ``unknown``).

    A (subject, target type) pair is a hit when any template (and any of a person's addresses)
    reproduced it, as in :func:`compare_groups`; its shape is the subject's ``name_shape`` (else the
    shape of its name, :func:`lmleak.data.names.name_shape`). Per shape and group: the pairs,
    the hits, the rate and its Wilson 95 % interval (``exact_match_rate_ci``); with controls, the
    one-sided Fisher p that members' rate is higher. ``intervals`` says how the intervals were made.

    Example:
        >>> rows = [{"subject_id": "a", "target_type": "email", "exact_match": True},
        ...         {"subject_id": "b", "target_type": "email", "exact_match": False}]
        >>> subs = [{"subject_id": "a", "name": "Ann Lee"}, {"subject_id": "b", "name": "zephyr", "user_id": "u9"}]
        >>> out = exact_match_by_shape(rows, subs, {"u9"})
        >>> out["ascii"]["members"]["exact_match_rate"], out["handle"]["controls"]["exact_match_hits"]
        (1.0, 0)
    """
    shape_of, group_of = {}, {}
    names = {MEMBER: "members", CONTROL: "controls", UNKNOWN: "unknown"}
    for x in subjects:
        sid = str(x.get("subject_id", x.get("user_id", "")))
        nick = x.get("nickname")
        shape_of[sid] = x.get("name_shape") or name_shape(f"{x['name']} ({nick})" if nick else str(x["name"]))
        group_of[sid] = names[membership(x, controls)]
    pairs = best_per_pair(grows, "exact_match").astype(bool)
    tally: dict[str, dict[str, list[int]]] = {}
    for (_, sid), hit in pairs.items():
        group = group_of.get(str(sid), "unknown")
        shape = shape_of.get(str(sid)) or "unknown"
        counts = tally.setdefault(shape, {"members": [0, 0], "controls": [0, 0], "unknown": [0, 0]})[group]
        counts[0] += 1
        counts[1] += int(hit)
    out: dict[str, Any] = {}
    for shape in (*NAME_SHAPES, "unknown"):
        if shape not in tally:
            continue
        entry: dict[str, Any] = {"subjects": sum(1 for s in shape_of.values() if s == shape)}
        for group, (n, k) in tally[shape].items():
            if n == 0 and (group == "unknown" or not controls):
                continue
            ci = wilson_interval(k, n)
            entry[group] = {
                "pairs_generated": n,
                "exact_match_hits": k,
                "exact_match_rate": k / n if n else None,
                "exact_match_rate_ci": None if ci is None else [ci[0], ci[1]],
            }
        if controls:
            (mn, mk), (cn, ck) = tally[shape]["members"], tally[shape]["controls"]
            entry["exact_match_fisher_p"] = fisher_greater_p(mk, mn, ck, cn)
        out[shape] = entry
    out["intervals"] = interval_record(
        method="wilson", unit="(subject, target type) pair", n_units=len(pairs)
    )
    return out


N_BOOT = 1000


def exact_match_intervals(
    grows: list[dict[str, Any]], subjects: list[dict[str, Any]], controls: Collection[str] | None = None
) -> dict[str, Any]:
    """``pii_exact_match_ci`` (and, with ``controls``, the members' and controls' intervals under
    ``exact_match_ci_by_group``) with the ``intervals`` record: a cluster bootstrap over the subjects'
    users of the share of (subject, target type) pairs reproduced exactly, the unit of
    ``pii_exact_match``; a share with no hits (or only hits) gets the exact interval over its users
    instead of the bootstrap's point, and the record lists it under ``at_boundary``
    (:func:`lmleak.intervals.cluster_proportion_interval`). Nothing without generations.
    """
    if not grows:
        return {}
    who = membership_of(subjects, controls)
    pairs = best_per_pair(grows, "exact_match").astype(bool).reset_index()
    users = [who.get(str(s), (str(s), UNKNOWN))[0] for s in pairs["subject_id"]]
    status = [who.get(str(s), (str(s), UNKNOWN))[1] for s in pairs["subject_id"]]
    hits = pairs["exact_match"].to_numpy()
    ci, rule = hit_rate_interval_and_rule(hits, users, n_boot=N_BOOT)
    at_boundary = {} if rule is None else {"pii_exact_match_ci": rule}
    out: dict[str, Any] = {"pii_exact_match_ci": ci}
    if controls:
        in_ctrl = np.array([st == CONTROL for st in status], dtype=bool)
        in_mem = np.array([st == MEMBER for st in status], dtype=bool)
        out["exact_match_ci_by_group"] = {}
        for name, mask in (("members", in_mem), ("controls", in_ctrl)):
            kept = [u for u, keep in zip(users, mask, strict=True) if keep]
            ci, rule = hit_rate_interval_and_rule(hits[mask], kept, n_boot=N_BOOT)
            out["exact_match_ci_by_group"][name] = ci
            if rule is not None:
                at_boundary[f"groups.{name}.exact_match_rate_ci"] = rule
    out["intervals"] = interval_record(
        method=BOOTSTRAP_METHOD, unit="user", n_units=len(set(users)), n_boot=N_BOOT, at_boundary=at_boundary
    )
    return out


def add_group_intervals(groups: dict[str, Any], cis: dict[str, Any]) -> None:
    """Each group's ``exact_match_rate_ci`` beside its ``exact_match_rate``."""
    for name, ci in cis.items():
        if name in groups and "exact_match_rate" in groups[name]:
            groups[name]["exact_match_rate_ci"] = ci


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def probe_lines(summary: dict[str, Any]) -> list[str]:
    """The plain lines ``lmleak probe run`` prints under its table: who was probed (by person), the
    exact-match excess over its null, the made-up people and the name-guess baseline.

    Example:
        >>> s = {"people": {"people_probed": 3, "subject_rows": 4, "members": 1, "controls": 1, "third_parties": 1,
        ...                 "membership_unknown": 1, "membership": "held_out"},
        ...      "pii_exact_match_excess": 0.5, "pii_exact_match_excess_ci": [-0.27, 0.9],
        ...      "pii_exact_match_excess_null": "held_out",
        ...      "exact_match_people": {"members": {"people": 2, "people_hit": 1}, "null": {"people": 2, "people_hit": 0}}}
        >>> for line in probe_lines(s): print(line)
        people probed: 3 (4 subject rows): 1 member, 1 held-out control, 1 third party, 1 of unknown membership
        exact match, members - held-out controls: 50.0% [-27.0%, 90.0%] (1 of 2 people vs 0 of 2)
    """
    out = _people_line(summary.get("people"))
    out += _excess_line(summary)
    return out + _null_lines(summary.get("made_up_controls"), summary.get("name_guess_baseline"))


def _people_line(p: dict[str, Any] | None) -> list[str]:
    if not p:
        return []
    if p.get("membership") == "unknown":
        split = f"membership unknown for all {p['people_probed']} (no held-out people: none is a 'member')"
    else:
        split = ", ".join(
            [
                f"{p['members']} member{'s' * (p['members'] != 1)}",
                f"{p['controls']} held-out control{'s' * (p['controls'] != 1)}",
                f"{p['third_parties']} third part{'y' if p['third_parties'] == 1 else 'ies'}",
                f"{p['membership_unknown']} of unknown membership",
            ]
        )
    return [f"people probed: {p['people_probed']} ({p['subject_rows']} subject rows): {split}"]


def _excess_line(summary: dict[str, Any]) -> list[str]:
    null = summary.get("pii_exact_match_excess_null")
    if summary.get("pii_exact_match_excess") is None:
        why = summary.get("pii_exact_match_excess_reason")
        return [f"exact match excess: not measured ({why})"] if why else []
    lo, hi = summary["pii_exact_match_excess_ci"] or (None, None)
    side = summary.get("exact_match_people") or {}
    m, c = side.get("members") or {}, side.get("null") or {}
    against = "held-out controls" if null == "held_out" else "made-up people"
    who = "members" if null == "held_out" else "probed people"
    return [
        f"exact match, {who} - {against}: {_pct(summary['pii_exact_match_excess'])} [{_pct(lo)}, {_pct(hi)}] "
        f"({m.get('people_hit')} of {m.get('people')} people vs {c.get('people_hit')} of {c.get('people')})"
    ]


def _null_lines(made: dict[str, Any] | None, guess: dict[str, Any] | None) -> list[str]:
    out = []
    if made:
        ratio, null_ratio = made.get("probed_pii_likelihood_ratio"), made.get("pii_likelihood_ratio")
        line = (
            f"made-up people ({made['people']}, the null): exact match {_pct(made.get('pii_exact_match'))} "
            f"vs {_pct(made.get('probed_pii_exact_match'))} for the probed people"
        )
        if ratio is not None and null_ratio is not None:
            line += f"; likelihood ratio {ratio:.4g} vs {null_ratio:.4g} for made-up people"
            if made.get("log_ratio_mann_whitney_p") is not None:
                line += f" (probed > made-up: Mann-Whitney p = {made['log_ratio_mann_whitney_p']:.3g})"
        out.append(line)
    if guess and guess.get("people"):
        out.append(
            f"guess from the name: {guess['guessable']} of {guess['people']} e-mail addresses "
            f"({_pct(guess['rate'])}) vs the model's exact match {_pct(guess['model_exact_match_rate'])}"
        )
        if guess.get("warning"):
            out.append("warning: " + guess["warning"])
    return out
