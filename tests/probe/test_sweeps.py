"""Fig. 4 sweeps (paper 003): each axis varies one knob; the axes agree where they meet."""

from __future__ import annotations

from lmleak.models.fake import FakeLM
from lmleak.probe.sweeps import _rate, sweep

SUBJECTS = [
    {
        "subject_id": f"s{i}",
        "name": n,
        "phone": f"(555) 555-01{i:02d}",
        "email": f"{n.split()[0].lower()}@example.org",
        "address": f"{i + 1} Oak Road, Springfield, IL 62701",
        "university": "Example State University",
    }  # fmt: skip
    for i, n in enumerate(["Ann Example", "Bob Sample", "Cy Person"])
]


def test_rate_counts_a_subject_once_when_any_of_its_probes_matched():
    rows = [
        {"subject_id": "a", "exact_match": False},
        {"subject_id": "a", "exact_match": True},
        {"subject_id": "b", "exact_match": False},
        {"subject_id": "c", "exact_match": 0},
    ]
    assert _rate(rows) == 1 / 3 and _rate([]) == 0.0


def test_axes_are_consistent_and_more_templates_never_lower_the_rate():
    texts = [f"the email address of {s['name']} is {s['email']}" for s in SUBJECTS[:2]]
    lm = FakeLM.from_texts(texts + [f"{s['name']} lives at {s['address']}" for s in SUBJECTS])
    rows = sweep(
        {"fake": lm}, SUBJECTS, templates=(1, 2, 3), levels=("twin", "triplet"), beams=(2,), base_beams=2
    )
    by = {(r["axis"], r["value"]): r["exact_match_rate"] for r in rows}
    assert sorted(by) == sorted(
        [
            ("templates", 1),
            ("templates", 2),
            ("templates", 3),
            ("level", "twin"),
            ("level", "triplet"),
            ("beams", 2),
        ]
    )
    t = [by[("templates", k)] for k in (1, 2, 3)]
    assert t == sorted(t) and all(0.0 <= v <= 1.0 for v in by.values())
    # k = all templates, the base level and the base beams are the same generation run
    assert by[("templates", 3)] == by[("level", "triplet")] == by[("beams", 2)]
