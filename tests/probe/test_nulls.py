"""lmleak.probe.nulls (issue 32): probing a model with no held-out people has a null — made-up people
probed the same way, and a guess from the name — so that a likelihood ratio of 8,080 from a model
that only guesses ``first.last@domain`` is read as guessing, not as knowing the people."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lmleak.models.base import Capability
from lmleak.models.fake import FakeLM
from lmleak.probe.nulls import MADE_UP_DOMAIN, made_up_subjects, name_guess_baseline, name_guesses
from lmleak.probe.people import probe_lines
from lmleak.probe.probing import run_probe
from lmleak.probe.settings import ProbeSettings
from lmleak.render.headline import headline_from_summary

PEOPLE = [
    ("Ann Lee", "ann.lee@example.org"),
    ("Bo Kim", "bo.kim@example.org"),
    ("Cy Doe", "cy.doe@example.org"),
    ("Di Fox", "di.fox@example.org"),
    ("Ed Roe", "ed.roe@example.org"),
    ("Flo Poe", "flo.poe@example.org"),
    ("Gus Orr", "gus.orr@example.org"),
    ("Hal Ng", "hal.ng@example.org"),
]
SUBJECTS = [
    {"subject_id": f"s{i}", "user_id": f"u{i}", "name": n, "email": e} for i, (n, e) in enumerate(PEOPLE)
]
_NAME = re.compile(r"contact (.+?) by")


def _guess(text: str) -> str | None:
    m = _NAME.search(text)
    if m is None:
        return None
    first, last = m.group(1).lower().split()[0], m.group(1).lower().split()[-1]
    return f"{first}.{last}@example.org"


class Guesser:
    """A model that knows nobody: it writes ``first.last@example.org`` for the name in the prompt,
    and scores that address e^14 times above any other (characters as tokens)."""

    name = "guesser"
    capabilities = frozenset({Capability.GENERATE, Capability.SCORE})

    class tokenizer:  # noqa: N801 - the attribute the probe reads
        @staticmethod
        def encode(text: str) -> list[int]:
            return [ord(c) for c in text]

    def generate(self, prompts, max_new_tokens, **k):
        return [[_guess(p) or ""] for p in prompts]

    def score_ids(self, contexts, continuations):
        out = []
        for ctx, cont in zip(contexts, continuations, strict=True):
            text, target = "".join(map(chr, ctx)), "".join(map(chr, cont)).strip()
            out.append(-1.0 if target == _guess(text) else -15.0)
        return np.array(out)


def test_made_up_people_have_the_form_of_the_people_and_none_of_their_pii():
    subs = [
        *SUBJECTS[:2],
        {"subject_id": "j", "name": "José Núñez", "emails": ["jose.nunez@corp.example", "jn@x.example"]},
        {
            "subject_id": "k",
            "name": "佐藤 陽子",
            "email": "zz@example.org",
            "phone": "(201) 555-0142",
            "nickname": "YS",
        },
        {
            "subject_id": "z",
            "name": "zephyr",
            "email": "zephyr@example.org",
            "third_party": True,
            "found_in": "u1",
        },
    ]
    made = made_up_subjects(subs, seed=3)
    assert [m["subject_id"] for m in made] == [f"made-up-{i:05d}" for i in range(5)]
    real = {e for s in subs for e in [s.get("email"), *(s.get("emails") or ())] if e}
    for s, m in zip(subs, made, strict=True):
        assert m["name"] != s["name"] and len(m["name"].split()) == len(s["name"].split())
        assert m["made_up"] and "user_id" not in m and "third_party" not in m and "found_in" not in m
        emails = [e for e in [m.get("email"), *(m.get("emails") or ())] if e]
        assert emails and all(e.endswith("@" + MADE_UP_DOMAIN) and e not in real for e in emails)
    first, last = made[0]["name"].lower().split()
    assert made[0]["email"] == f"{first}.{last}@example.org"  # the same shape as ann.lee@
    assert not re.search(r"[A-Za-z]", made[3]["name"])  # a name in kanji gets a name in kanji
    assert made[3]["phone"][:10] == "(201) 555-" and made[3]["phone"] != subs[3]["phone"]
    assert made[3]["nickname"] == "".join(w[0] for w in made[3]["name"].split())  # templates ask by it
    assert len(set(made[2]["emails"])) == 2 and "email" not in made[2]


def test_the_name_guess_baseline_hits_addresses_built_from_the_name():
    assert "ann.lee@example.org" in name_guesses("Ann Lee", ["example.org"])
    assert "jose.nunez@corp.example" in name_guesses("José Núñez", ["corp.example"])
    subs = [*SUBJECTS[:3], {"subject_id": "x", "user_id": "ux", "name": "Xu Li", "email": "k9@example.org"}]
    grows = [
        {"subject_id": s["subject_id"], "target_type": "email", "exact_match": i == 0}
        for i, s in enumerate(subs)
    ]
    out = name_guess_baseline(subs, grows)
    assert (out["people"], out["guessable"], out["rate"]) == (4, 3, 0.75)
    assert (out["model_exact_match_hits"], out["model_hits_guessable"]) == (1, 1)
    assert "3 of 4 e-mail addresses probed are guessable from the name" in out["warning"]
    assert "warning" not in name_guess_baseline(subs[3:], grows[3:])


def test_a_model_that_only_guesses_from_the_name_shows_no_excess_over_made_up_people(tmp_path):
    """No held-out people: everyone is of unknown membership; the model 'hits' every address and has
    a likelihood ratio of e^14, and so do the made-up people: the excess is 0 and the ratio over the
    made-up people 1."""
    s = run_probe(
        Guesser(),
        SUBJECTS,
        tmp_path / "r",
        ProbeSettings(targets=("email",), level="twin", templates=1, beams=1, figures=False),
    )
    assert s["people"]["membership"] == "unknown" and s["people"]["membership_unknown"] == 8
    assert s["pii_exact_match"] == 1.0 and s["pii_likelihood_ratio"] == pytest.approx(np.exp(14), rel=1e-6)
    made = s["made_up_controls"]
    assert made["people"] == 8 and made["pii_exact_match"] == 1.0
    assert made["pii_likelihood_ratio"] == pytest.approx(np.exp(14), rel=1e-6)
    assert made["likelihood_ratio_over_made_up"] == pytest.approx(1.0)
    headline = headline_from_summary(s)  # the ratio is read beside the made-up people's
    assert headline["pii_likelihood_ratio_made_up"] == made["pii_likelihood_ratio"]
    assert headline["pii_exact_match_excess"] == 0.0 and headline["pii_exact_match_excess_null"] == "made_up"
    assert made["log_ratio_mann_whitney_p"] > 0.4
    assert s["pii_exact_match_excess_null"] == "made_up" and s["pii_exact_match_excess"] == 0.0
    lo, hi = s["pii_exact_match_excess_ci"]
    assert lo < 0 < hi
    guess = s["name_guess_baseline"]
    assert guess["rate"] == 1.0 and guess["model_hits_guessable"] == 8 and "guessable" in guess["warning"]
    assert (tmp_path / "r" / "made_up_generations.parquet").exists()
    lines = probe_lines(s)
    assert lines[0].startswith("people probed: 8 (8 subject rows): membership unknown for all 8")
    assert lines[1].startswith("exact match, probed people - made-up people: 0.0%")
    assert any(line.startswith("warning: 8 of 8 e-mail addresses") for line in lines)


def test_a_model_that_memorised_the_people_beats_the_made_up_people():
    """A FakeLM fitted on the people's own sentences writes their addresses and nobody else's."""
    texts = [f"Please contact {n} by email address {e}" for n, e in PEOPLE] * 2
    s = run_probe(
        FakeLM.from_texts(texts, order=5),
        SUBJECTS,
        None,
        ProbeSettings(targets=("email",), level="twin", templates=1, beams=1),
    )
    assert s["pii_exact_match"] == 1.0 and s["made_up_controls"]["pii_exact_match"] == 0.0
    assert s["pii_exact_match_excess"] == 1.0 and s["pii_exact_match_excess_ci"][0] > 0.5
    assert s["made_up_controls"]["likelihood_ratio_over_made_up"] > 10
    assert s["made_up_controls"]["log_ratio_mann_whitney_p"] < 0.01
