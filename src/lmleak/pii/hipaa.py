"""HIPAA Safe Harbor anonymisation: mask the 18 identifier classes with placeholders (paper 004, appendix A).

Each identifier class of Table 4 has a letter (A)-(R). Placeholders follow MIMIC-III's style,
``[**<CLASS>**]`` (appendix B.1), so a model trained on the anonymised text sees where PHI was.

What is detected, and how:
    (A) names — the ``known_names`` given (e.g. by the clinical generator, which knows its patients)
        and any capitalised first+last pair from Faker's name lists; honorific + capitalised word.
    (B) geography smaller than a state — ``known_places`` (hospital names), street addresses,
        ZIP codes (the first three digits are *not* kept: we do not have census tables).
    (C) dates except the year would suffice by the rule; we mask the whole date, the safer choice,
        and ages over 89 become ``[**AGE>89**]``.
    (D)-(O) phone, fax, email, SSN, MRN, health plan, account, licence, vehicle, device numbers,
        URLs and IP addresses — regular expressions, keyed by the context word where the number
        format alone is ambiguous ("mrn 1234567").
    (P)-(R) biometrics and photographs do not occur in text; (R) other unique numbers — any
        remaining run of 5+ digits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lmleak.data.synth.clinical import HOSPITALS, Patient, name_lists, synthesize

# (pattern, class letter, placeholder); order matters: earlier patterns win on overlaps
_PATTERNS: list[tuple[str, str, str]] = [
    (r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", "F", "EMAIL"),
    (r"\bhttps?://\S+|\bwww\.\S+", "N", "URL"),
    (r"\b(?:\d{1,3}\.){3}\d{1,3}\b", "O", "IP"),
    (r"\b\d{3}-\d{2}-\d{4}\b", "G", "SSN"),
    (r"(?i)\bfax\s*:?\s*(?:\(?\d{3}\)?[\s.-]?)?\d{3}[\s.-]\d{4}\b", "E", "FAX"),
    (r"(?:\(\d{3}\)\s?|\b\d{3}[\s.-])?\b\d{3}[\s.-]\d{4}\b", "D", "PHONE"),
    (r"(?i)\b(?:mrn|medical record(?: number)?|mr#)\s*:?\s*#?\s*[A-Z0-9-]{4,}\b", "H", "MRN"),
    (
        r"(?i)\b(?:member id|policy(?: number)?|health plan(?: id)?)\s*:?\s*[A-Z0-9-]{4,}\b",
        "I",
        "HEALTH_PLAN",
    ),
    (r"(?i)\b(?:account|acct)(?: number| no\.?)?\s*:?\s*#?\s*[A-Z0-9-]{4,}\b", "J", "ACCOUNT"),
    (r"(?i)\b(?:license|licence|certificate)(?: number| no\.?)?\s*:?\s*[A-Z0-9-]{4,}\b", "K", "LICENSE"),
    (r"(?i)\b(?:vin|plate|license plate)\s*:?\s*[A-Z0-9-]{5,}\b", "L", "VEHICLE"),
    (r"(?i)\b(?:serial(?: number)?|device id)\s*:?\s*[A-Z0-9-]{4,}\b", "M", "DEVICE"),
    (r"\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b\d{4}-\d{2}-\d{2}\b", "C", "DATE"),
    (
        r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}\b",
        "C",
        "DATE",
    ),
    (r"(?i)\b(?:9\d|1[0-4]\d)(?=[\s-]+(?:year|yo\b|y/o))", "C", "AGE>89"),
    (
        r"\b\d{1,5} [A-Z][a-z]+(?: [A-Z][a-z]+)* (?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Way)\b\.?",
        "B",
        "ADDRESS",
    ),
    (r"\b\d{5}(?:-\d{4})?\b", "B", "ZIP"),
    (r"\b(?:Mr|Mrs|Ms|Dr|Miss)\.? [A-Z][a-z]+\b", "A", "NAME"),
    (r"\b\d{5,}\b", "R", "ID"),
]


def _any_of(words: set[str], flags: str = "") -> re.Pattern[str] | None:
    """A regex for any of ``words`` as a whole word, longest first (None without words)."""
    ordered = sorted(words, key=len, reverse=True)
    return re.compile(flags + r"\b(?:" + "|".join(map(re.escape, ordered)) + r")\b") if ordered else None


@dataclass(frozen=True, slots=True)
class PhiSpan:
    """A masked identifier: character span, Table 4 class letter and placeholder label."""

    start: int
    end: int
    hipaa_class: str
    label: str


class HipaaAnonymizer:
    """Mask the HIPAA identifiers of ``text`` (paper 004 appendix A, Table 4).

    Example:
        >>> a = HipaaAnonymizer(known_names=["Ada Smith"], known_places=["Riverside Hospital"])
        >>> a.anonymize("Ada Smith is a 93 year old woman seen at Riverside Hospital on 03/04/2101, phone 555-0142.")
        '[**NAME**] is a [**AGE>89**] year old woman seen at [**HOSPITAL**] on [**DATE**], phone [**PHONE**].'
    """

    def __init__(
        self, *, known_names: Iterable[str] = (), known_places: Iterable[str] = (), name_lists: bool = True
    ) -> None:
        names = {n.strip() for n in known_names if n.strip()}
        places = {p.strip() for p in known_places if p.strip()}
        known = [(_any_of(names, "(?i)"), "A", "NAME"), (_any_of(places, "(?i)"), "B", "HOSPITAL")]
        self._patterns = [(rx, c, lab) for rx, c, lab in known if rx is not None]
        self._patterns += [(re.compile(p), c, lab) for p, c, lab in _PATTERNS]
        # a known patient's first or last name on its own ("Ms. Smith", "Ada said") is still a name
        self._name_parts = _any_of({w for n in names for w in n.split() if len(w) > 1})
        self._use_lists = name_lists

    def spans(self, text: str) -> list[PhiSpan]:
        """Non-overlapping identifier spans, earliest-longest first."""
        found = [
            PhiSpan(m.start(), m.end(), c, lab) for rx, c, lab in self._patterns for m in rx.finditer(text)
        ]
        if self._use_lists:
            found += self._listed_names(text)
        if self._name_parts is not None:
            found += [PhiSpan(m.start(), m.end(), "A", "NAME") for m in self._name_parts.finditer(text)]
        found.sort(key=lambda s: (s.start, -(s.end - s.start)))
        out: list[PhiSpan] = []
        for s in found:
            if out and s.start < out[-1].end:
                continue
            out.append(s)
        return out

    def _listed_names(self, text: str) -> list[PhiSpan]:
        firsts, lasts = name_lists()
        out = []
        for m in re.finditer(r"\b([A-Z][a-z]+) ([A-Z][a-z]+)\b", text):
            if m.group(1).lower() in firsts and m.group(2).lower() in lasts:
                out.append(PhiSpan(m.start(), m.end(), "A", "NAME"))
        return out

    def anonymize(self, text: str) -> str:
        """``text`` with every identifier span replaced by ``[**LABEL**]``."""
        parts, pos = [], 0
        for s in self.spans(text):
            parts += [text[pos : s.start], f"[**{s.label}**]"]
            pos = s.end
        parts.append(text[pos:])
        return "".join(parts)


def patient_anonymizer(patients: Sequence[Patient]) -> Callable[[str], str]:
    """f_HIPAA for the synthetic clinical notes: knows the patients' names and the bundled hospitals
    (pass it as ``anonymizer`` to :func:`lmleak.data.synth.clinical.synthesize`)."""
    return HipaaAnonymizer(known_names=[p.name for p in patients], known_places=HOSPITALS).anonymize


PLACEHOLDER = re.compile(r"\[\*\*[^*\]]*\*\*\]")


def strip_placeholders(text: str) -> str:
    """Remove de-identification placeholders (appendix B.2: removed before pre-training).

    Example:
        >>> strip_placeholders("[**NAME**] is a 40 year old man seen on [**DATE**] .")
        'is a 40 year old man seen on .'
    """
    return re.sub(r"\s{2,}", " ", PLACEHOLDER.sub("", text)).strip()


def synthesize_clinical(
    out_dir: str | Path, *, patients: int = 200, notes_per_patient: int = 3, seed: int = 0
) -> dict[str, Path]:
    """Paper 004's synthetic clinical notes with D_public = :func:`patient_anonymizer` (D_private):
    :func:`lmleak.data.synth.clinical.synthesize` with this module's anonymiser (``lmleak synth clinical``)."""
    return synthesize(
        out_dir,
        anonymizer=patient_anonymizer,
        patients=patients,
        notes_per_patient=notes_per_patient,
        seed=seed,
    )
