"""The people of the synthetic corpora, with names in every shape (issue 28).

``synth mail`` and ``synth customersim`` drew English Faker names only, so no test saw the people a
real corpus holds and an ASCII-minded tool misses: ``Jürgen Weiß``, ``Anna d'Amico``,
``Gábor Kovács (GK)``, ``zephyr``, ``佐藤 陽子``, and people who sign with two or three addresses or
now and then with an accent-stripped copy of their name. :class:`PeopleDrawer` draws them:

- a locale per person from :data:`~lmleak.data.synth.DEFAULT_LOCALES` (en_US weighted :data:`ENGLISH_WEIGHT`, the
  others 1 each), the name from that locale's Faker (seeded; offline): given and family name,
  gendered where the language is (pl_PL, ru_RU), family name first where the language writes it so
  (vi_VN with a middle name, ja_JP in kanji);
- then, each with its own rate: a single-token handle instead of a name (:data:`HANDLE_RATE`), a
  particle or apostrophe on the family name where the language has them (:data:`PARTICLE_RATE`:
  ``O'``, ``d'``/``de``/``du``, ``de``/``de la``/``del``, ``von``/``van der``), a nickname in
  parentheses (:data:`NICKNAME_RATE`), a variant they sometimes sign with (:data:`VARIANT_RATE` of
  the names with letters outside ASCII: accents stripped, Cyrillic transliterated, kanji
  romanised; used in :data:`VARIANT_USE` of their own signings), and two or three addresses
  (:data:`ADDRESS_WEIGHTS`; the first used in :data:`PRIMARY_USE` of their messages).

Every e-mail is ASCII on example.org/.com/.net (the local part romanised). Faker's de_DE family
names include a few artefacts (``auch Schlauchin``, ``Dussen van``) that are no one's name; a
name that :data:`lmleak.data.names.NAME_PATTERN` does not read whole is drawn again.
``locales=("en_US",)`` is not drawn here at all: the corpora keep their old generator for it, so
that ``--locales en_US`` writes byte for byte the corpus it wrote before.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from faker import Faker
from faker.config import AVAILABLE_LOCALES

from lmleak.data.names import NAME_PATTERN, name_key, name_shape, romanize, strip_accents
from lmleak.data.synth import EMAIL_DOMAINS
from lmleak.errors import ConfigError

ENGLISH_WEIGHT = 3.0
HANDLE_RATE = 0.07
NICKNAME_RATE = 0.08
PARTICLE_RATE = 0.3
VARIANT_RATE = 0.6
VARIANT_USE = 0.25
ADDRESS_WEIGHTS = (0.75, 0.17, 0.08)  # one, two, three addresses
PRIMARY_USE = 0.7
_PARTICLE_FORMS = {
    "en_US": ("O'",),
    "fr_FR": ("d'", "de ", "du "),
    "es_ES": ("de ", "de la ", "del "),
    "de_DE": ("von ", "van der "),
}
_GENDERED = {"pl_PL", "ru_RU"}
_FAMILY_FIRST = {"vi_VN", "ja_JP"}
HANDLE_WORDS = (
    "zephyr", "nightowl", "bitflip", "quasar", "kestrel", "nebula", "tinker", "vortex", "cobalt",
    "mistral", "fennec", "juniper", "sparrow", "tundra", "yarrow", "quill", "halcyon", "kraken",
    "lumen", "marlin", "nimbus", "orchid", "pebble", "raven", "saffron", "talon", "vesper", "willow",
    "xenon", "zinnia", "basalt", "cinder", "falcon", "garnet", "heron", "indigo", "jasper", "lichen",
    "magpie", "nettle", "onyx", "plover", "quartz", "sable", "thistle", "vireo", "wren", "alder",
)  # fmt: skip
_FULL_NAME = re.compile(NAME_PATTERN)
#: Local-part styles of an address: g/f = given/family name, g0/f0 their initials, n a number.
EMAIL_STYLES = ("{g}.{f}", "{g0}{f}", "{g}", "{f}{n}", "{g}.{f}{n}", "{g0}{f0}{n}", "{g}_{f}")
HANDLE_STYLES = ("{h}", "{h}{n}", "{h}.dev", "{h}_{n}")


def _ascii(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", romanize(s).lower())


@dataclass
class Person:
    """One person: how their name is written, and every address they use."""

    given: str  # what a short sign-off says ("Gábor", "陽子"; the handle itself for a handle)
    family: str  # "" for a handle
    name: str  # the whole name, family first where the language writes it so ("佐藤 陽子")
    locale: str
    nickname: str | None = None
    variant: str | None = None  # accent-stripped / romanised spelling they sometimes sign with
    emails: tuple[str, ...] = ()
    ascii_given: str = ""
    ascii_family: str = ""
    family_first: bool = False
    #: spellings and addresses the corpus writes for them, counted as they are written
    names_written: dict[str, int] = field(default_factory=dict)
    emails_written: dict[str, int] = field(default_factory=dict)

    @property
    def display(self) -> str:
        """The name with the nickname: ``Gábor Kovács (GK)``."""
        return f"{self.name} ({self.nickname})" if self.nickname else self.name

    @property
    def shape(self) -> str:
        return name_shape(self.display)

    def last_first(self) -> str | None:
        """``Kovács, Gábor`` (None for a handle, a nickname or a family-first name)."""
        if not self.family or self.family_first or self.nickname:
            return None
        return f"{self.family}, {self.given}"

    @property
    def variant_display(self) -> str | None:
        """The variant with the nickname (``Gabor Kovacs (GK)``), or None."""
        if self.variant is None:
            return None
        return f"{self.variant} ({self.nickname})" if self.nickname else self.variant

    def signed(self, rng: random.Random) -> str:
        """The display they sign one message with: now and then the variant (no draw without one)."""
        if self.variant_display is not None and rng.random() < VARIANT_USE:
            return self.variant_display
        return self.display

    def address(self, rng: random.Random) -> str:
        """The address of one message: mostly the first (no draw for one address)."""
        if len(self.emails) == 1 or rng.random() < PRIMARY_USE:
            return self.emails[0]
        return rng.choice(self.emails[1:])

    def message(self, rng: random.Random) -> tuple[str, str]:
        """The name and the address one message is signed with (:meth:`signed`, :meth:`address`).

        A variant that no rule folds back to the name (romanised kanji: ``Yoko Sato`` for
        ``佐藤 陽子``) goes with the first address: the address they share is the only evidence a
        reader of the corpus has that both spellings are one person.
        """
        name, address = self.signed(rng), self.address(rng)
        if name == self.variant_display and name_key(name) != name_key(self.display):
            address = self.emails[0]
        return name, address

    def wrote(self, name: str | None = None, email: str | None = None) -> None:
        """Count a spelling or an address as written into the corpus."""
        if name is not None:
            self.names_written[name] = self.names_written.get(name, 0) + 1
        if email is not None:
            self.emails_written[email] = self.emails_written.get(email, 0) + 1

    def record(self) -> dict[str, object]:
        """The name fields of a subjects.jsonl row: what the corpus shows of this person.

        ``email`` is the address written most (ties: the first drawn), ``emails`` every address
        written, most written first; ``variants`` the variant display, if the corpus writes it.
        """
        order = {e: i for i, e in enumerate(self.emails)}
        used = sorted(self.emails_written, key=lambda e: (-self.emails_written[e], order.get(e, 99)))
        return {
            "name": self.name,
            "name_shape": self.shape,
            "nickname": self.nickname,
            "variants": [v for v in (self.variant_display,) if v is not None and v in self.names_written],
            "locale": self.locale,
            "email": used[0] if used else self.emails[0],
            "emails": used or [self.emails[0]],
        }


def check_locales(locales: Sequence[str]) -> tuple[str, ...]:
    """The locales as a tuple, or a :class:`ConfigError` naming the unknown one.

    Example:
        >>> check_locales(["en_US", "de_DE"])
        ('en_US', 'de_DE')
    """
    out = tuple(locales)
    if not out:
        raise ConfigError("no locale given", field="locales", hint="e.g. --locales en_US,de_DE")
    for loc in out:
        if loc not in AVAILABLE_LOCALES:
            raise ConfigError(
                f"unknown Faker locale {loc!r}", field="locales", hint="e.g. en_US, de_DE, ja_JP"
            )
    return out


class PeopleDrawer:
    """Draws :class:`Person` s (see the module docstring); owns one seeded Faker per locale and
    uses the corpus's own ``rng`` for every other choice, so a seed fixes everything."""

    def __init__(self, locales: Sequence[str], seed: int, rng: random.Random) -> None:
        self.locales = check_locales(locales)
        self.rng = rng
        self.fakers: dict[str, Faker] = {}
        for i, loc in enumerate(self.locales):
            fake = Faker(loc)
            fake.seed_instance(seed * 101 + i)
            self.fakers[loc] = fake
        self.weights = [ENGLISH_WEIGHT if loc == "en_US" else 1.0 for loc in self.locales]

    def draw(self, taken: set[str], styles: Sequence[str] = EMAIL_STYLES[:4]) -> Person:
        """A person whose name (by :func:`~lmleak.data.names.name_key`) and addresses are not in
        ``taken`` (both are added); the first address in one of ``styles``."""
        r = self.rng
        while True:
            loc = r.choices(self.locales, self.weights)[0]
            p = self._handle(loc) if r.random() < HANDLE_RATE else self._named(loc)
            keys = {name_key(p.name)} | ({name_key(p.variant)} if p.variant else set())
            if keys & taken or (" " in p.name and _FULL_NAME.fullmatch(p.name) is None):
                continue
            taken.update(keys)
            p.emails = self._addresses(p, taken, styles)
            return p

    def relative(self, p: Person, gender: str) -> str:
        """A relative's name: a given name of ``p``'s language and ``p``'s family name."""
        fake = self.fakers[p.locale]
        if p.locale == "ja_JP":
            given = (fake.first_name_male_pair() if gender == "male" else fake.first_name_female_pair())[0]
        else:
            given = fake.first_name_male() if gender == "male" else fake.first_name_female()
        family = p.family or fake.last_name()
        return f"{family} {given}" if p.locale in _FAMILY_FIRST else f"{given} {family}"

    def _handle(self, loc: str) -> Person:
        r = self.rng
        h = r.choice(HANDLE_WORDS) + (str(r.randint(2, 99)) if r.random() < 0.4 else "")
        return Person(given=h, family="", name=h, locale=loc, ascii_given=h)

    def _named(self, loc: str) -> Person:
        r, fake = self.rng, self.fakers[loc]
        male = r.random() < 0.5
        variant: str | None = None
        if loc == "ja_JP":
            g = fake.first_name_male_pair() if male else fake.first_name_female_pair()
            f = fake.last_name_pair()
            given, family, ag, af = g[0], f[0], g[2], f[2]
            variant = f"{ag} {af}"  # romanised, given name first as Latin text writes it
        elif loc in _GENDERED:
            given = fake.first_name_male() if male else fake.first_name_female()
            family = fake.last_name_male() if male else fake.last_name_female()
            ag, af = given, family
        elif loc == "vi_VN":  # its first_name() falls back to English ("John")
            given, family = (fake.first_name_male() if male else fake.first_name_female()), fake.last_name()
            ag, af = given, family
        else:
            given, family = fake.first_name(), fake.last_name()
            ag, af = given, family
        forms = _PARTICLE_FORMS.get(loc)
        if forms and r.random() < PARTICLE_RATE:
            form = r.choice(forms)
            if form == "d'" and family[:1].lower() not in "aeiouy":
                form = "de "
            family = af = form + family
        name = f"{family} {given}" if loc in _FAMILY_FIRST else f"{given} {family}"
        if loc == "vi_VN" and r.random() < 0.7:
            name = f"{family} {fake.middle_name()} {given}"
        p = Person(given=given, family=family, name=name, locale=loc, ascii_given=_ascii(ag),
                   ascii_family=_ascii(af), family_first=loc in _FAMILY_FIRST)  # fmt: skip
        if r.random() < NICKNAME_RATE:
            p.nickname = (p.ascii_given[:1] + p.ascii_family[:1]).upper() or None
        if not name.isascii() and r.random() < VARIANT_RATE:
            p.variant = variant or (romanize(name) if loc == "ru_RU" else strip_accents(name))
        return p

    def _addresses(self, p: Person, taken: set[str], styles: Sequence[str]) -> tuple[str, ...]:
        r = self.rng
        n = r.choices((1, 2, 3), ADDRESS_WEIGHTS)[0]
        out: list[str] = []
        while len(out) < n:
            pool = HANDLE_STYLES if not p.family else styles if not out else EMAIL_STYLES
            style = r.choice(pool)
            g, f = p.ascii_given or "user", p.ascii_family or "x"
            local = style.format(g=g, f=f, g0=g[0], f0=f[0], h=g, n=r.randint(1, 99))
            email = f"{local}@{r.choice(EMAIL_DOMAINS)}"
            if email not in taken:
                taken.add(email)
                out.append(email)
        return tuple(out)
