"""Named screening policies: the π and π_c of CRT (paper 002, section 3.2 and Algorithm 1).

- ``"regex"``: :data:`~lmleak.pii.regex.DEFAULT_PATTERNS` — the regular-expression redaction paper
  002 uses on CustomerSim (phones, e-mails, order and tracking numbers, ...).
- ``"presidio"``: Presidio on the offline spaCy model (names, locations, ...).
- ``"balanced"``: regex + Presidio + pyap addresses — the balanced-precision/recall π.
- ``"conservative"``: π_c, high recall, low precision (:class:`ConservativeDetector`): every digit
  run, every e-mail address and every capitalised word (in any cased script: ``Степан``) except a sentence's first word
  (and the first word after a speaker label such as ``"Agent: "``) and the pronoun "I", every word
  of a caseless script (``佐藤``: case cannot tell a name there), and the names
  :data:`~lmleak.pii.regex.NAME_PATTERNS` read (a lowercase handle where a format or an
  introduction says it is a name: ``this is zephyr.``). Names, places, addresses and every
  number are capitalised or digits, so a secret π misses is caught here with high probability;
  the price is that most sentences that mention anything proper go to D_pri.
- ``"digits"``: every digit run is a secret (paper 002's WikiText-2 setting, after S-DP).
- ``"paper003"``: paper 003's phone and e-mail expressions, verbatim.

:class:`DegradedPolicy` lowers a policy's recall to a target for the γ sweep (paper 002 Fig. 6).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lmleak.data.names import CASELESS, UPPER
from lmleak.errors import ConfigError, did_you_mean
from lmleak.pii.addresses import AddressDetector
from lmleak.pii.compose import UnionDetector
from lmleak.pii.presidio import PresidioDetector
from lmleak.pii.regex import DIGIT_PATTERNS, EMAIL_PATTERN, Paper003Detector, RegexDetector, name_patterns
from lmleak.pii.spans import MASK, Detector, PiiSpan, detect_many, merge_spans
from lmleak.settings import Settings, setting

POLICY_NAMES = ("regex", "presidio", "balanced", "conservative", "digits", "paper003")

# A capitalised word, or a digit run. "<MASK>" is skipped: such sentences are private anyway.
_CAPITAL = re.compile(rf"(?<![\w<])[{UPPER}][\w'’-]*")
_CASELESS = re.compile(rf"[{CASELESS}]+")
_DIGITS = re.compile(r"\d+")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\n)\s*[\"'(]*")
_SPEAKER = re.compile(r"[A-Z][a-z]+:\s+[\"'(]*")
# a line that is one bare capitalised word — "Randy" under a mail — is a sign-off, i.e. a name;
# a greeting or closing carries punctuation ("Thanks,", "Goodbye.") and stays initial
_SIGN_OFF = re.compile(r"(?m)^[ \t>]*([^\W\d_][\w'’.-]*)[ \t]*$")


class ConservativeDetector:
    """π_c: digit runs and non-initial capitalised words (entity ``DIGITS`` / ``CAPITALISED``).

    Example:
        >>> d = ConservativeDetector()
        >>> t = "Agent: Thanks, I will call Jane at 4 pm. Bye."
        >>> [t[s.start:s.end] for s in d.detect(t)]
        ['Jane', '4']
        >>> [s.entity for s in d.detect("Thanks," + chr(10) + "Randy")]  # a bare capitalised line signs a mail
        ['CAPITALISED']
        >>> u = "Customer: Hi, this is zephyr. My father 佐藤 太郎 and Степан Мясников came."
        >>> [u[a:b] for a, b in merge_spans(d.detect(u))]
        ['zephyr', '佐藤 太郎', 'Степан', 'Мясников']
    """

    name = "conservative"

    def __init__(self) -> None:
        self._formats = RegexDetector((EMAIL_PATTERN, *name_patterns()))

    def detect(self, text: str) -> list[PiiSpan]:
        initial = set()
        for m in _SENTENCE_START.finditer(text):
            initial.add(m.end())
            speaker = _SPEAKER.match(text, m.end())  # "Agent: Thanks" -> "Thanks" is initial too
            if speaker is not None:
                initial.add(speaker.end())
        out = [PiiSpan(m.start(), m.end(), "DIGITS", 0.1) for m in _DIGITS.finditer(text)]
        sign_offs = {m.start(1) for m in _SIGN_OFF.finditer(text)}
        for m in _CAPITAL.finditer(text):
            word = m.group()
            if m.start() in sign_offs and word != "I":
                out.append(PiiSpan(m.start(), m.end(), "CAPITALISED", 0.1))
                continue
            if m.start() in initial or word == "I" or word.startswith(("I'", "I’")):
                continue
            if text[max(0, m.start() - 1) : m.start() + len(MASK) - 1] == MASK:
                continue
            out.append(PiiSpan(m.start(), m.end(), "CAPITALISED", 0.1))
        out += [PiiSpan(m.start(), m.end(), "CAPITALISED", 0.1) for m in _CASELESS.finditer(text)]
        # e-mails (an address may hold no digit and no capital) and names in every shape, where no
        # span above covers them already
        covered = merge_spans(out)
        for s in self._formats.detect(text):
            i = bisect.bisect_right(covered, (s.start, 1 << 62)) - 1
            if i < 0 or covered[i][1] < s.end:  # covered[i] starts at or before s
                out.append(s)
        return sorted(out, key=lambda s: (s.start, s.end))


class DegradedPolicy:
    """A policy whose detections are dropped at random to lower its recall (γ sweep).

    A detection survives when a seeded hash of its *text* falls below the keep fraction, so the
    same secret value is missed everywhere it occurs (as a real detector is deterministic in
    the value) and the result does not depend on whether detection ran per document or per
    sentence. The keep fraction is ``recall / base_recall``: with ``base_recall=1.0`` (the
    default) ``recall`` is the fraction of the base policy's detections kept; pass the base
    policy's measured recall (``lmleak pii evaluate``) to target an absolute recall, i.e.
    γ = 1 − recall against the ground truth.

    Example:
        >>> from lmleak.pii.regex import RegexDetector, DIGIT_PATTERNS
        >>> p = DegradedPolicy(RegexDetector(DIGIT_PATTERNS), recall=0.5, seed=0)
        >>> n = len(p.detect(" ".join(str(i) for i in range(2000))))
        >>> 900 < n < 1100
        True
    """

    def __init__(self, policy: Detector, recall: float, seed: int = 0, *, base_recall: float = 1.0) -> None:
        if not 0.0 <= recall <= 1.0:
            raise ConfigError(f"target recall must be in [0, 1], got {recall}", field="recall")
        if not 0.0 < base_recall <= 1.0 or recall > base_recall:
            raise ConfigError(
                f"target recall {recall} must not exceed the base policy's recall {base_recall}",
                field="recall",
                hint="a policy can only be degraded, not improved",
            )
        self.policy = policy
        self.recall = recall
        self.seed = seed
        self.keep = recall / base_recall
        self.name = f"{getattr(policy, 'name', 'policy')}@recall={recall:g}"

    def _kept(self, value: str) -> bool:
        import xxhash

        return xxhash.xxh64_intdigest(value.encode("utf-8"), seed=self.seed) < self.keep * 2**64

    def _filter(self, text: str, spans: list[PiiSpan]) -> list[PiiSpan]:
        return [s for s in spans if self._kept(text[s.start : s.end])]

    def detect(self, text: str) -> list[PiiSpan]:
        return self._filter(text, self.policy.detect(text))

    def detect_many(self, texts: Sequence[str]) -> list[list[PiiSpan]]:
        return [self._filter(t, s) for t, s in zip(texts, detect_many(self.policy, texts), strict=True)]


@dataclass(frozen=True)
class PolicyChoice(Settings):
    """The named policy a command screens with, and the γ sweep's degradation of it (the
    ``--policy``, ``--recall``, ``--seed``, ``--base-recall`` of ``pii evaluate|detect``, ``redact``
    and ``split``); :meth:`detector` is :func:`get_policy` of them.

    Example:
        >>> PolicyChoice("digits", recall=0.0).detector().detect("call 911")
        []
    """

    policy: str = setting("balanced", help="regex | presidio | balanced | conservative | digits | paper003.")
    recall: float | None = setting(
        None, help="Degrade the policy to this recall (γ sweep): drop detections at random.", ge=0, le=1
    )
    seed: int = setting(0, help="Random seed (same seed, same result).", ge=0, le=2**32 - 1)
    base_recall: float = setting(
        1.0, help="The policy's measured recall, so --recall is absolute (default 1: relative).", gt=0, le=1
    )

    def detector(self) -> Detector:
        return get_policy(self.policy, recall=self.recall, seed=self.seed, base_recall=self.base_recall)


def get_policy(
    name: str, *, recall: float | None = None, seed: int = 0, base_recall: float = 1.0
) -> Detector:
    """The named policy (see the module docstring), optionally degraded to ``recall``.

    Raises:
        ConfigError: an unknown name (with a did-you-mean hint).

    Example:
        >>> p = get_policy("regex")
        >>> [s.entity for s in p.detect("Tracking 1ZA2B3C4D5E6F7G8H9 for ORD-12345678")]
        ['TRACKING_ID', 'ORDER_ID']
        >>> get_policy("digits", recall=0.0).detect("call 911")
        []
    """

    base: Detector
    if name == "regex":
        base = RegexDetector()
    elif name == "presidio":
        base = PresidioDetector()
    elif name == "balanced":
        base = UnionDetector([RegexDetector(), PresidioDetector(), AddressDetector()], name="balanced")
    elif name == "conservative":
        base = ConservativeDetector()
    elif name == "digits":
        base = RegexDetector(DIGIT_PATTERNS)
        base.name = "digits"
    elif name == "paper003":
        base = Paper003Detector()
    else:
        raise ConfigError(
            f"unknown PII policy {name!r}",
            field="policy",
            hint=did_you_mean(name, POLICY_NAMES).strip() or f"choose one of {', '.join(POLICY_NAMES)}",
        )
    if recall is not None:
        return DegradedPolicy(base, recall, seed, base_recall=base_recall)
    return base
