"""lmleak.words: counts in words, against a hand-written table of the nouns lmleak prints."""

from __future__ import annotations

import pytest

from lmleak.words import plural, plural_of

NOUNS = {  # singular -> plural, as a dictionary gives them
    "person": "people",
    "user": "users",
    "sequence": "sequences",
    "probe": "probes",
    "subject": "subjects",
    "text": "texts",
    "canary": "canaries",
    "query": "queries",
    "try": "tries",
    "key": "keys",
    "day": "days",
    "address": "addresses",
    "match": "matches",
    "box": "boxes",
    "analysis": "analyses",
    "group": "groups",
    "document": "documents",
    "time": "times",
    "made-up person": "made-up people",
    "held-out user": "held-out users",
    "user pair": "user pairs",
}


@pytest.mark.parametrize(("one", "many"), sorted(NOUNS.items()))
def test_plural_of_the_nouns_lmleak_counts(one, many):
    assert plural_of(one) == many


@pytest.mark.parametrize("n", [0, 2, 3, 17, 1000, 0.5, 2.0])
def test_every_count_but_one_takes_the_plural(n):
    assert plural(n, "person") == f"{n if isinstance(n, int) else format(n, 'g')} people"
    assert plural(n, "probe") == f"{n if isinstance(n, int) else format(n, 'g')} probes"


def test_one_takes_the_singular_and_an_explicit_plural_wins():
    assert plural(1, "person") == "1 person" and plural(1.0, "user") == "1 user"
    assert (
        plural(1, "criterion", "criteria") == "1 criterion"
        and plural(2, "criterion", "criteria") == "2 criteria"
    )


def test_a_missing_count_is_said_to_be_unknown_not_printed_as_none():
    assert plural(None, "probe") == "an unknown number of probes"
    assert plural(None, "person") == "an unknown number of people"
