"""The people of the synthetic corpora (lmleak.data.synth.people): every name shape, ASCII addresses."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from lmleak.data.names import NAME_PATTERN, NAME_SHAPES, name_key, romanize, strip_accents
from lmleak.data.synth import DEFAULT_LOCALES
from lmleak.data.synth.people import (
    ADDRESS_WEIGHTS,
    HANDLE_RATE,
    NICKNAME_RATE,
    PeopleDrawer,
    check_locales,
)
from lmleak.errors import ConfigError


@pytest.fixture(scope="module")
def people():
    drawer = PeopleDrawer(DEFAULT_LOCALES, seed=0, rng=random.Random(0))
    taken: set[str] = set()
    return [drawer.draw(taken) for _ in range(600)]


def test_every_locale_and_every_shape_is_drawn(people):
    assert set(Counter(p.locale for p in people)) == set(DEFAULT_LOCALES)
    shapes = Counter(p.shape for p in people)
    assert set(shapes) == set(NAME_SHAPES)
    n = len(people)
    # the rates the module states, within four binomial standard deviations
    for shape, rate in (("handle", HANDLE_RATE), ("nickname", NICKNAME_RATE * (1 - HANDLE_RATE))):
        assert abs(shapes[shape] - rate * n) < 4 * (rate * (1 - rate) * n) ** 0.5, (shape, shapes[shape])
    counts = Counter(len(p.emails) for p in people)
    for k, w in zip((1, 2, 3), ADDRESS_WEIGHTS, strict=True):
        assert abs(counts[k] - w * n) < 4 * (w * (1 - w) * n) ** 0.5


def test_every_name_reads_whole_and_every_address_is_ascii_and_unique(people):
    emails = [e for p in people for e in p.emails]
    assert len(emails) == len(set(emails))
    assert all(re.fullmatch(r"[a-z0-9._]+@example\.(org|com|net)", e) for e in emails)
    assert len({name_key(p.name) for p in people}) == len(people)
    for p in people:
        if p.shape == "handle":
            assert " " not in p.name and p.name.isascii()
        else:
            assert re.fullmatch(NAME_PATTERN, p.name), p.name


def test_variants_are_the_name_without_accents_or_in_latin_letters(people):
    with_variant = [p for p in people if p.variant]
    assert {p.shape for p in with_variant} >= {"accented", "non_latin"}
    for p in with_variant:
        assert p.variant.isascii() and not p.name.isascii()
        if p.locale == "ja_JP":  # kanji cannot be romanised by rule: Faker's romanisation, given name first
            assert len(p.variant.split()) == 2
        elif p.locale == "ru_RU":
            assert p.variant == romanize(p.name)
        else:
            assert p.variant == strip_accents(p.name)


def test_family_first_names_and_particles(people):
    ja = [p for p in people if p.locale == "ja_JP" and p.shape != "handle"]
    assert ja and all(p.name.startswith(p.family + " ") and p.last_first() is None for p in ja)
    particles = [p for p in people if p.shape == "particle"]
    assert {p.locale for p in particles} <= {"en_US", "fr_FR", "es_ES", "de_DE"}
    assert any("'" in p.name for p in particles) and any(" de " in f" {p.name} " for p in particles)


def test_signing_and_sending_use_the_variant_and_every_address():
    drawer = PeopleDrawer(("es_ES",), seed=3, rng=random.Random(3))
    taken: set[str] = set()
    p = next(q for q in (drawer.draw(taken) for _ in range(500)) if q.variant and len(q.emails) == 3)
    rng = random.Random(1)
    signed = Counter(p.signed(rng) for _ in range(2000))
    sent = Counter(p.address(rng) for _ in range(2000))
    assert set(signed) == {p.display, p.variant_display} and set(sent) == set(p.emails)
    assert sent[p.emails[0]] > 1200  # the first address is used most


def test_unknown_locales_are_config_errors():
    with pytest.raises(ConfigError, match="xx_XX"):
        check_locales(["en_US", "xx_XX"])
    with pytest.raises(ConfigError, match="no locale"):
        check_locales([])


def test_a_variant_no_rule_folds_back_is_signed_with_the_first_address():
    drawer = PeopleDrawer(("ja_JP",), seed=1, rng=random.Random(1))
    taken: set[str] = set()
    p = next(q for q in (drawer.draw(taken) for _ in range(500)) if q.variant and len(q.emails) > 1)
    rng = random.Random(2)
    pairs = Counter(p.message(rng) for _ in range(3000))
    assert {e for n, e in pairs if n == p.variant_display} == {p.emails[0]}
    assert {e for n, e in pairs if n == p.display} == set(p.emails)
