"""lmleak.probe.people (issue 32): probing counts people (user ids), not subject rows; a third party
found in someone else's documents is never given their member/control status; the exact-match
excess of members over held-out controls, by person, with Newcombe's interval and its coverage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lmleak.audit.release import probe_people
from lmleak.models.base import Capability
from lmleak.probe.formats import LinkCounter
from lmleak.probe.people import (
    exact_match_excess,
    membership,
    membership_of,
    people_counts,
    person_id,
    probe_lines,
)
from lmleak.probe.probing import run_probe
from lmleak.probe.settings import ProbeSettings
from lmleak.report.redaction import Redactor, redact_table
from lmleak.scenarios.margins import difference_interval

#: two rows for u1 (two spellings no address joins), two for u2, one control (u3), one third party
#: quoted in u1's documents (no user id of their own)
SUBJECTS = [
    {"subject_id": "s1", "user_id": "u1", "name": "Ann Lee", "email": "ann.lee@example.org"},
    {"subject_id": "s2", "user_id": "u1", "name": "Annie Lee", "email": "annie@example.org"},
    {"subject_id": "s3", "user_id": "u2", "name": "Bo Kim", "email": "bo.kim@example.org"},
    {"subject_id": "s4", "user_id": "u2", "name": "Bob Kim", "email": "bk7@example.org"},
    {"subject_id": "s5", "user_id": "u3", "name": "Cy Doe", "email": "cy.doe@example.org"},
    {"subject_id": "s6", "third_party": True, "found_in": "u1", "name": "Di Fox", "email": "di@example.org"},
]


class Echo:
    """A generation-only model that answers every e-mail prompt with the addresses in ``answers``
    (the prompt's name -> its answer), else nothing."""

    name = "echo"
    capabilities = frozenset({Capability.GENERATE})

    def __init__(self, answers: dict[str, str]):
        self.answers = answers

    def generate(self, prompts, max_new_tokens, **k):
        return [[next((a for n, a in self.answers.items() if n in p), "no idea")] for p in prompts]


def test_probing_counts_people_not_subject_rows_and_labels_the_third_party(tmp_path):
    """Six rows are four people: u1 (two rows), u2 (two rows), the control u3 and the third party."""
    hits = {"Ann Lee": "ann.lee@example.org", "Di Fox": "di@example.org", "Cy Doe": "cy.doe@example.org"}
    s = run_probe(
        Echo(hits),
        SUBJECTS,
        tmp_path / "r",
        ProbeSettings(targets=("email",), level="twin", templates=1, beams=1),
        controls={"u3"},
    )
    p = s["people"]
    assert (p["subject_rows"], p["people_probed"]) == (6, 4) and s["people_probed"] == 4
    assert (p["members"], p["controls"], p["third_parties"], p["membership_unknown"]) == (2, 1, 1, 1)
    assert "third part" in p["membership_note"]
    # the groups: rows and people apart; Di (the third party) is in neither
    g = s["groups"]
    assert (g["members"]["subjects"], g["members"]["people"], g["controls"]["people"]) == (4, 2, 1)
    assert g["members"]["pairs_generated"] == 4 and g["controls"]["pairs_generated"] == 1
    # the written rows name each row's person and membership; the release summary counts people
    gen = pd.read_parquet(tmp_path / "r" / "generations.parquet")
    assert dict(zip(gen["subject_id"], gen["membership"], strict=True)) == {
        "s1": "member", "s2": "member", "s3": "member", "s4": "member", "s5": "control", "s6": "unknown",
    }  # fmt: skip
    assert set(gen.loc[gen["subject_id"] == "s6", "user_id"]) == {"third-party:s6"}
    assert gen["third_party"].tolist() == [False] * 5 + [True]
    assert gen["member"].tolist()[:5] == [1.0] * 4 + [0.0] and np.isnan(gen["member"].tolist()[5])
    people = probe_people(gen, {}, set())
    assert (
        people["probed"],
        people["members_probed"],
        people["controls_probed"],
        people["unknown_probed"],
    ) == (
        4,
        2,
        1,
        1,
    )
    # hits: Ann (u1), Cy (the control), Di (third party): one member, one control, one unknown
    assert (people["people"], people["members"], people["controls"], people["unknown"]) == (3, 1, 1, 1)
    assert people["third_parties_probed"] == 1 and people["subject_rows_probed"] == 6
    # a redacted run keeps keyed ids and the numeric columns: the same people
    redacted = redact_table(gen, Redactor(b"k" * 32, "test"))
    assert "membership" not in redacted.columns and probe_people(redacted, {}, set()) == people
    # the excess: 1 of 2 member people vs 1 of 1 control, by person (u1's two rows count once)
    assert s["pii_exact_match_excess"] == pytest.approx(0.5 - 1.0)
    assert s["pii_exact_match_excess_ci"] == pytest.approx(list(difference_interval(1, 2, 1, 1)))
    assert s["pii_exact_match_excess_null"] == "held_out" and "made_up_controls" not in s
    assert probe_lines(s)[0] == (
        "people probed: 4 (6 subject rows): 2 members, 1 held-out control, 1 third party, 1 of unknown membership"
    )


def test_without_held_out_people_every_membership_is_unknown_and_no_line_says_member(tmp_path):
    s = run_probe(
        Echo({}),
        SUBJECTS,
        tmp_path / "r",
        ProbeSettings(targets=("email",), level="twin", templates=1, beams=1),
    )
    p = s["people"]
    assert (p["members"], p["controls"], p["membership_unknown"], p["membership"]) == (0, 0, 4, "unknown")
    assert "groups" not in s and s["by_shape"]["ascii"].keys() == {"subjects", "unknown"}
    people = probe_people(pd.read_parquet(tmp_path / "r" / "generations.parquet"), {}, set())
    assert "members" not in people and "controls" not in people and people["unknown_probed"] == 4
    assert people["membership"] == "unknown"


def test_a_third_party_is_never_given_the_authors_status():
    """Maya is quoted in Ann's (u1's) messages and sends none: before, she got u1 and u1's member or
    control status; now she is a third party with no user id, found in u1's documents."""
    quoting = (
        "From: Ann Lee <ann@example.org>\n\nOn Mon, Maya Lo <maya@example.org> wrote:\n> The loader fails."
    )
    counter = LinkCounter()
    for text, user in [(quoting, "u1")] * 3 + [("From: Bo Kim <bo@example.org>\n\nhi", "u2")]:
        counter.add(text, user)
    subs = {s["name"]: s for s in counter.subjects()}
    maya = subs["Maya Lo"]
    assert maya.get("third_party") is True and "user_id" not in maya and maya["found_in"] == "u1"
    assert subs["Ann Lee"]["user_id"] == "u1" and "third_party" not in subs["Ann Lee"]
    assert person_id(maya) == f"third-party:{maya['subject_id']}"
    assert membership(maya, {"u1"}) == membership(maya, {"u2"}) == "unknown"
    assert membership(subs["Ann Lee"], {"u1"}) == "control"
    # their own user id, given by hand, decides as anyone's
    assert membership({**maya, "user_id": "u9"}, {"u9"}) == "control"


def test_the_excess_counts_each_person_once_against_a_by_hand_tally():
    who = membership_of(SUBJECTS, {"u3"})
    # u1 hit on one of their two rows, u2 on none; the control hit; the third party hit (ignored)
    grows = [
        {"subject_id": sid, "target_type": "email", "template": t, "exact_match": (sid, t) in hit}
        for hit in [{("s2", 1), ("s5", 0), ("s6", 0)}]
        for sid in ("s1", "s2", "s3", "s4", "s5", "s6")
        for t in (0, 1)
    ]
    out = exact_match_excess(grows, who)
    assert out["exact_match_people"] == {
        "members": {"people": 2, "people_hit": 1, "rate": 0.5},
        "null": {"people": 1, "people_hit": 1, "rate": 1.0},
    }
    assert out["pii_exact_match_excess"] == -0.5
    assert out["pii_exact_match_excess_ci"] == pytest.approx(list(difference_interval(1, 2, 1, 1)))
    # no control probed and no made-up people: no excess, and why
    alone = exact_match_excess([r for r in grows if r["subject_id"] != "s5"], who)
    assert (
        alone["pii_exact_match_excess"] is None
        and "no held-out control" in alone["pii_exact_match_excess_reason"]
    )
    assert people_counts(SUBJECTS, {"s1", "s2"}, {"u3"})["people_probed"] == 1
    blind = exact_match_excess(grows, membership_of(SUBJECTS, None))  # no held-out people, no made-up
    assert blind["pii_exact_match_excess"] is None
    assert blind["pii_exact_match_excess_reason"].startswith("every probed person's membership is unknown")


@pytest.mark.parametrize("n_people", [5, 12, 30])
@pytest.mark.parametrize("rates", [(0.2, 0.2), (0.5, 0.1), (0.05, 0.0)])
def test_the_excess_interval_covers_the_difference_of_person_rates_with_clustered_probes(n_people, rates):
    """Simulation: every person has 1-6 probes (templates x PII types) that share their own
    propensity (a Beta draw around the group's rate), so a person's probes are not independent. The
    excess is over people (any probe hit), and its Newcombe interval covers the true difference of
    the two groups' person-level hit probabilities in at least 93 % of 600 audits."""
    rng = np.random.default_rng([n_people, int(rates[0] * 100), int(rates[1] * 100)])
    reps, covered = 600, 0

    def person_rate(mean: float, n: int) -> tuple[np.ndarray, np.ndarray]:
        probes = rng.integers(1, 7, size=n)
        if mean == 0:
            return np.zeros(n, dtype=bool), probes
        propensity = rng.beta(2 * mean / (1 - mean), 2, size=n)
        return rng.random(n) < 1 - (1 - propensity) ** probes, probes

    def truth(mean: float) -> float:  # P(a person has any hit), by a large draw
        if mean == 0:
            return 0.0
        big = np.random.default_rng(7)
        p = big.beta(2 * mean / (1 - mean), 2, size=400_000)
        return float(np.mean(1 - (1 - p) ** big.integers(1, 7, size=p.size)))

    want = truth(rates[0]) - truth(rates[1])
    for _ in range(reps):
        rows = []
        who = {}
        for side, mean in (("member", rates[0]), ("control", rates[1])):
            hit, probes = person_rate(mean, n_people)
            for i, (h, m) in enumerate(zip(hit, probes, strict=True)):
                sid = f"{side}{i}"
                who[sid] = (sid, side)
                first = int(rng.integers(m))  # the probe that hit, when the person is hit
                rows += [{"subject_id": sid, "exact_match": bool(h) and j == first} for j in range(m)]
        lo, hi = exact_match_excess(rows, who)["pii_exact_match_excess_ci"]
        covered += lo <= want <= hi
    assert covered / reps >= 0.93, covered / reps
