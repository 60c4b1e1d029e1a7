"""Canary designs: ``random`` (the classic ``My ID is: <6 random digits>``, Carlini et al. 2019) and
``crafted`` (Panda, Tang, Nasr, Choquette-Choo & Mittal, "Privacy auditing of large language
models", ICLR 2025).

Panda et al. find that an audit's power rests on the canary: a random-digit secret is made of
tokens the training text uses everywhere (dates, phone numbers, ids), so the gradient of one canary
is drowned by common text and the model's likelihood of a trained secret hardly differs from an
untrained one. Their canaries use **new or rare tokens** (tokens that occur nowhere else in the
training data, whose only training signal is the canary), behind a **designed prefix**, and raise
the true-positive rate at 1 % false positives from 4.2 % to 49.6 % on Qwen2.5-0.5B.

lmleak's ``crafted`` canary is that recipe on a fixed, checkable alphabet:

- the secret is drawn exactly as the random design draws it (the same seeded integers, so a crafted
  audit and a random one with the same seed have the same secrets' positions and coin flips), and
  each character is mapped to a **rune** (:data:`CRAFTED_ALPHABET`, Unicode Runic block), characters
  that no synthetic corpus and no ordinary text uses: tokens unseen in the corpus's tokenisation;
- the prefix is :data:`CRAFTED_PREFIX`, a designed marker sentence that carries the rune
  :data:`CRAFTED_MARK` (also never in the corpus), so the context that predicts the secret is the
  canaries' own;
- where lmleak learns the tokenizer itself (``dp-audit run``), every rune of the alphabet and the
  mark are added to the vocabulary as tokens of their own (new tokens, one per character, added
  whatever the coin flips are, so the vocabulary does not depend on the inclusion). A tokenizer
  learnt on a corpus that holds crafted canaries (``synth … --canary-design crafted`` then
  ``lmleak train``), or a public one, sees the runes as rare byte tokens instead.

The randomness space is the same size as the random design's (10 runes for 10 digits, 16 for 16
hex digits), so exposures of the two designs are on one scale.
"""

from __future__ import annotations

from collections.abc import Iterable

from lmleak.errors import ConfigError

#: The canary designs every command that draws canaries offers (``--canary-design``).
CANARY_DESIGNS = ("random", "crafted")
#: Sixteen runes (Elder Futhark, U+16A0 block): the crafted secrets' characters; the first ten
#: stand for the digits 0-9, all sixteen for hex digits.
CRAFTED_ALPHABET = "ᚠᚢᚦᚨᚱᚲᚷᚹᚺᚾᛁᛃᛇᛈᛉᛊ"
#: The rune of the crafted prefix (never one of the secret's characters).
CRAFTED_MARK = "ᛝ"
#: The designed prefix of every crafted canary.
CRAFTED_PREFIX = f"Canary {CRAFTED_MARK} key: "


def check_design(design: str, field: str = "canary_design") -> str:
    """``design`` if it is one of :data:`CANARY_DESIGNS`, else a ConfigError naming the choices.

    Example:
        >>> check_design("crafted")
        'crafted'
    """
    if design not in CANARY_DESIGNS:
        raise ConfigError(
            f"unknown canary design {design!r}",
            field=field,
            hint="use random (digits after 'My ID is: ') or crafted (rare-token secret behind a designed prefix)",
        )
    return design


def crafted_alphabet(source_alphabet: str) -> str:
    """The runes that stand for ``source_alphabet``'s characters (as many, in order).

    Example:
        >>> crafted_alphabet("0123456789") == CRAFTED_ALPHABET[:10]
        True
    """
    if len(source_alphabet) > len(CRAFTED_ALPHABET):
        raise ConfigError(
            f"a crafted canary has {len(CRAFTED_ALPHABET)} characters, not {len(source_alphabet)}",
            field="alphabet",
        )
    return CRAFTED_ALPHABET[: len(source_alphabet)]


def craft_secret(secret: str, source_alphabet: str = "0123456789") -> str:
    """A random-design secret with each character replaced by its rune (a bijection, so distinct
    secrets stay distinct and the draw stays uniform).

    Example:
        >>> craft_secret("042")
        'ᚠᚱᚦ'
        >>> craft_secret("0f", "0123456789abcdef")
        'ᚠᛊ'
    """
    runes = crafted_alphabet(source_alphabet)
    table = {c: runes[i] for i, c in enumerate(source_alphabet)}
    try:
        return "".join(table[c] for c in secret)
    except KeyError as e:
        raise ConfigError(
            f"secret character {e.args[0]!r} is not in {source_alphabet!r}", field="secret"
        ) from None


def crafted_tokens() -> list[str]:
    """The characters a crafted canary adds to a tokenizer as new tokens: the alphabet and the mark.

    Example:
        >>> len(crafted_tokens()), crafted_tokens()[-1] == CRAFTED_MARK
        (17, True)
    """
    return [*CRAFTED_ALPHABET, CRAFTED_MARK]


def crafted_characters_in(texts: Iterable[str]) -> set[str]:
    """The crafted canaries' characters that already occur in ``texts`` (empty for a corpus in which
    crafted canaries are new tokens).

    Example:
        >>> crafted_characters_in(["plain text", "a rune ᚠ here"])
        {'ᚠ'}
    """
    chars = set(crafted_tokens())
    seen: set[str] = set()
    for t in texts:
        seen |= chars.intersection(t)
        if seen == chars:
            break
    return seen


#: The random design's digits (``My ID is: <6 digits>``).
DIGITS = "0123456789"


class CanaryDesign:
    """How a synthetic corpus writes its canaries: the random design's prefix and secret as they
    are, or (``crafted``) :data:`CRAFTED_PREFIX` and the secret's runes; ``texts`` (the corpus's
    documents, read only for ``crafted``) must not already use the crafted characters.

    Example:
        >>> d = CanaryDesign("crafted", ["a plain corpus"])
        >>> d.prefix("My ID is: ") == CRAFTED_PREFIX, d.secret("09", DIGITS), d.row_fields(DIGITS)["canary_design"]
        (True, 'ᚠᚾ', 'crafted')
        >>> CanaryDesign().secret("09", DIGITS), CanaryDesign().row_fields(DIGITS)
        ('09', {})
    """

    def __init__(self, design: str = "random", texts: Iterable[str] = ()) -> None:
        self.design = check_design(design)
        if self.crafted:
            seen = crafted_characters_in(texts)
            if seen:
                raise ConfigError(
                    f"the corpus already uses {''.join(sorted(seen))}: crafted canaries would not be new tokens",
                    field="canary_design",
                    hint="use --canary-design random",
                )

    @property
    def crafted(self) -> bool:
        return self.design == "crafted"

    def prefix(self, random_prefix: str) -> str:
        """The canary's prefix: the random design's own, or :data:`CRAFTED_PREFIX`."""
        return CRAFTED_PREFIX if self.crafted else random_prefix

    def secret(self, secret: str, alphabet: str) -> str:
        """The secret as written: drawn over ``alphabet``, mapped to runes when crafted."""
        return craft_secret(secret, alphabet) if self.crafted else secret

    def row_fields(self, alphabet: str) -> dict[str, str]:
        """What a crafted canary's ``canaries.jsonl`` row adds (its design and rune alphabet); a
        random row stays as it was written before designs existed."""
        if not self.crafted:
            return {}
        return {"canary_design": self.design, "alphabet": crafted_alphabet(alphabet)}
