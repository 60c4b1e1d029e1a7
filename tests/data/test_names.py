"""Names in any script (lmleak.data.names): shapes, folding, mangled spellings, the name pattern."""

from __future__ import annotations

import random
import re
import unicodedata

import pytest

from lmleak.data.names import (
    NAME_PATTERN,
    NAME_SHAPES,
    best_spelling,
    fix_mojibake,
    is_mangled,
    name_key,
    name_shape,
    romanize,
    split_nickname,
    strip_accents,
)

SHAPED = [
    ("zephyr", "handle"),
    ("nightowl42", "handle"),
    ("Gábor Kovács (GK)", "nickname"),
    ("zephyr (Z)", "nickname"),
    ("Anna d'Amico", "particle"),
    ("Edward O'Brien", "particle"),
    ("Juan de la Cruz", "particle"),
    ("Ludwig van der Berg", "particle"),
    ("佐藤 陽子", "non_latin"),
    ("Иван Петров", "non_latin"),
    ("Jürgen Weiß", "accented"),
    ("Nguyễn Thị Hương", "accented"),
    ("Ann Lee", "ascii"),
    ("Mary-Jane Smith-Jones", "ascii"),
]


@pytest.mark.parametrize(("name", "shape"), SHAPED)
def test_each_shape_is_recognised(name, shape):
    assert name_shape(name) == shape and shape in NAME_SHAPES


def test_the_shape_of_every_name_written_the_other_way_round_is_the_same():
    # spacing does not change a shape; a nickname is split off whole
    for name, shape in SHAPED:
        assert name_shape("  " + name.replace(" ", "   ") + " ") == shape
    assert split_nickname("Gábor  Kovács (GK)") == ("Gábor Kovács", "GK")


def _slow_strip(text: str) -> str:
    """The obvious oracle: decompose every character alone, keep its first code point if Latin."""
    table = {"ß": "ss", "ł": "l", "Ł": "L", "ø": "o", "đ": "d", "Đ": "D", "ı": "i", "æ": "ae", "œ": "oe"}
    out = []
    for c in text:
        if c in table:
            out.append(table[c])
            continue
        d = unicodedata.normalize("NFKD", c)
        out.append(d[0] if d[0].isascii() and d[0].isalpha() else c)
    return "".join(out)


@pytest.mark.parametrize(
    "name",
    ["Iñaki Ibáñez Ortega", "Jürgen Weiß", "Łukasz Wójcik", "Doğan Çetin", "Nguyễn Thị Hương", "Søren Ærø"],
)
def test_strip_accents_equals_a_character_by_character_oracle(name):
    got = strip_accents(name)
    assert got.isascii() and got == _slow_strip(name).replace("Æ", "AE")


def test_other_scripts_keep_their_marks_and_cyrillic_is_romanised():
    assert strip_accents("ガギグ") == "ガギグ" and strip_accents("Йосиф") == "Йосиф"
    assert romanize("Всеволод Ермаков") == "Vsevolod Ermakov"
    assert romanize("Щукин Юрий") == "Shchukin Yuriy"
    assert romanize("Фёдор") == "Fedor"


@pytest.mark.parametrize("name", ["José Núñez", "Иван Петров", "佐藤 陽子", "Nguyễn Thị Hương", "Ann Lee"])
def test_mojibake_of_any_script_is_repaired_and_intact_text_is_left_alone(name):
    for codec in ("cp1252", "latin-1"):
        try:
            broken = name.encode("utf-8").decode(codec)
        except UnicodeDecodeError:
            continue  # cp1252 cannot read every byte: that mojibake does not exist
        assert fix_mojibake(broken) == name
    assert fix_mojibake(name) == name


def test_one_key_per_person_across_case_accents_spacing_and_mojibake():
    spellings = ["Iñaki Ibáñez", "IÑAKI  IBÁÑEZ", "Inaki Ibanez", "IÃ±aki IbÃ¡Ã±ez", " iñaki ibáñez "]
    assert len({name_key(s) for s in spellings}) == 1
    assert name_key("İsmail Çağlar") == name_key("Ismail Caglar") == "ismail caglar"
    assert name_key("Ann Lee") != name_key("Ann Leeds")


def test_a_mangled_spelling_never_wins_while_an_intact_one_is_written():
    assert is_mangled("Jose Nunez", {"José Núñez"}) and not is_mangled("José Núñez", {"Jose Nunez"})
    assert is_mangled("Vsevolod Ermakov", {"Всеволод Ермаков"})
    assert best_spelling({"Jose Nunez": 9, "José Núñez": 1}) == "José Núñez"
    assert best_spelling({"JosÃ© NÃºÃ±ez": 9, "José Núñez": 1}) == "José Núñez"
    assert best_spelling({"Yoko Sato": 5, "佐藤 陽子": 1}) == "佐藤 陽子"
    # the corpus writes only the mangled one: it is what the model saw
    assert best_spelling({"Jose Nunez": 2}) == "Jose Nunez"
    assert best_spelling({"Ann Lee": 3, "ANN LEE": 1}) == "Ann Lee"


def test_best_spelling_is_always_one_of_the_spellings_and_the_most_frequent_among_equals():
    rng = random.Random(0)
    pool = ["Ann Lee", "Ann LEE", "ann lee", "José Núñez", "Jose Nunez", "JosÃ© NÃºÃ±ez", "Иван", "Ivan"]
    for _ in range(300):
        counts = {s: rng.randint(1, 9) for s in rng.sample(pool, rng.randint(1, 5))}
        best = best_spelling(counts)
        assert best in counts
        intact = [s for s in counts if not is_mangled(s, counts)]
        if intact:
            assert best in intact
            richest = max(sum(not c.isascii() and c.isalpha() for c in s) for s in intact)
            top = [s for s in intact if sum(not c.isascii() and c.isalpha() for c in s) == richest]
            assert counts[best] == max(counts[s] for s in top)


NAME = re.compile(NAME_PATTERN)


@pytest.mark.parametrize(
    "name",
    ["Juan de la Cruz", "佐藤 陽子", "Anna d'Amico", "Edward O'Brien", "Nguyễn Thị Hương", "İsmail Çağlar",
     "Иван Петров", "Hans-Jürgen Weiß", "J. R. Smith", "Hans Koch II", "Ludwig van der Berg"],
)  # fmt: skip
def test_the_name_pattern_reads_every_shape_of_full_name_whole(name):
    assert NAME.fullmatch(name)


@pytest.mark.parametrize("text", ["the build", "Thanks", "ACME CORP", "hello World", "Dussen van"])
def test_the_name_pattern_refuses_what_is_no_name(text):
    assert NAME.fullmatch(text) is None
