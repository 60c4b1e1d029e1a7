"""Synthetic clinical notes with dummy PHI, standing in for MIMIC-III (paper 004 §5.2, appendix B.1).

Every patient gets a few notes; each note opens with the demographics sentence of a "full name
mention" (§5.3.1) — ``"<first> <last> is a <age> year old <sex> who presented with <disease> ..."``
— followed by sentences that mention the patient's diseases (taken from a bundled disease
vocabulary whose synonyms map to one concept id, standing in for UMLS CUIs and MetaMap) and other
PHI: admission and discharge dates, the hospital, a 555 phone number and a medical record number.

The corpus is written twice (appendix B.1 in reverse: the paper filled MIMIC's placeholders with
dummy PHI; we generate dummy PHI and anonymise it):

- ``private.jsonl`` — D_private, the notes with dummy PHI;
- ``public.jsonl`` — D_public = f_HIPAA(D_private), PHI replaced by ``[**...**]`` placeholders by
  :mod:`lmleak.pii.hipaa`;
- ``gold.jsonl`` — I_T, the gold name–disease pairs ``{"name", "concept_id"}`` of every patient's
  full name mentions; ``patients.jsonl`` — the dummy PHI per patient;
- ``diseases.json`` — the disease vocabulary (concept id -> synonyms).

All names come from Faker's en_US lists, phones from the fictional 555-01xx range, hospitals from
a bundled list of invented names.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lmleak.data.corpus import Corpus, Document
from lmleak.runs import atomic_write_json, atomic_write_text, secure_dir

# concept id -> synonyms (first = preferred name). Ids are invented ("K" + number), not UMLS CUIs.
DISEASES: dict[str, tuple[str, ...]] = {
    "K0001": ("diabetes mellitus", "diabetes", "dm"),
    "K0002": ("hypertension", "high blood pressure", "htn"),
    "K0003": ("congestive heart failure", "heart failure", "chf"),
    "K0004": ("atrial fibrillation", "afib"),
    "K0005": ("coronary artery disease", "cad"),
    "K0006": ("chronic obstructive pulmonary disease", "copd"),
    "K0007": ("pneumonia",),
    "K0008": ("asthma",),
    "K0009": ("chronic kidney disease", "ckd"),
    "K0010": ("acute kidney injury", "aki"),
    "K0011": ("sepsis",),
    "K0012": ("urinary tract infection", "uti"),
    "K0013": ("cirrhosis",),
    "K0014": ("hepatitis c", "hcv"),
    "K0015": ("pancreatitis",),
    "K0016": ("gastrointestinal bleed", "gi bleed"),
    "K0017": ("deep vein thrombosis", "dvt"),
    "K0018": ("pulmonary embolism", "pe"),
    "K0019": ("stroke", "cerebrovascular accident", "cva"),
    "K0020": ("seizure disorder", "epilepsy"),
    "K0021": ("dementia",),
    "K0022": ("depression",),
    "K0023": ("anxiety",),
    "K0024": ("hypothyroidism",),
    "K0025": ("hyperlipidemia",),
    "K0026": ("anemia",),
    "K0027": ("osteoarthritis",),
    "K0028": ("rheumatoid arthritis",),
    "K0029": ("lung cancer",),
    "K0030": ("breast cancer",),
    "K0031": ("colon cancer",),
    "K0032": ("prostate cancer",),
    "K0033": ("lymphoma",),
    "K0034": ("leukemia",),
    "K0035": ("hiv",),
    "K0036": ("tuberculosis",),
    "K0037": ("cellulitis",),
    "K0038": ("osteomyelitis",),
    "K0039": ("endocarditis",),
    "K0040": ("myocardial infarction", "heart attack", "mi"),
    "K0041": ("aortic stenosis",),
    "K0042": ("pulmonary hypertension",),
    "K0043": ("obstructive sleep apnea", "osa"),
    "K0044": ("gout",),
    "K0045": ("multiple sclerosis",),
    "K0046": ("parkinson disease", "parkinsonism"),
    "K0047": ("alcohol withdrawal",),
    "K0048": ("diverticulitis",),
    "K0049": ("cholecystitis",),
    "K0050": ("appendicitis",),
    # concepts the notes never mention: the extractor knows them (like UMLS knows far more than a
    # hospital's notes contain), so R+ refinement has something to remove
    "K0051": ("kidney cancer",),
    "K0052": ("liver failure",),
    "K0053": ("heart block",),
    "K0054": ("lung abscess",),
    "K0055": ("chronic pancreatitis",),
    "K0056": ("acute liver injury",),
    "K0057": ("pulmonary fibrosis",),
    "K0058": ("breast abscess",),
    "K0059": ("colon polyp",),
    "K0060": ("bladder cancer",),
}
NOTE_CONCEPTS = tuple(sorted(DISEASES))[:50]

HOSPITALS = (
    "Riverside General Hospital",
    "Maple Valley Medical Center",
    "Northgate Community Hospital",
    "Saint Aurelia Hospital",
    "Harborview Clinic",
    "Cedar Hill Medical Center",
    "Lakeshore Hospital",
    "Pinecrest Regional Hospital",
)
SEXES = ("man", "woman")

_OPEN = "{name} is a {age} year old {sex} who presented with {d_main} ."
# Why each note names one presenting disease and at most one other: a note that repeated its
# diseases would let the model fill a masked disease by copying it from elsewhere in the note, and
# the name–disease association the attack probes would never have to be learnt.
_TEMPLATES_BODY = (
    "past medical history is significant for {d_other} .",
    "{pron} has a history of {d_other} .",
    "{pron} was admitted to {hospital} on {date} for further workup .",
    "on exam {pron} was comfortable and in no acute distress .",
)
_TEMPLATES_PHI = (
    "{pron} can be reached at {phone} . mrn {mrn} .",
    "discharged from {hospital} on {date2} in stable condition .",
    "follow up at {hospital} , phone {phone} , mrn {mrn} .",
)


@dataclass(frozen=True, slots=True)
class Patient:
    """One synthetic patient's dummy PHI and diseases (concept ids)."""

    patient_id: str
    first: str
    last: str
    age: int
    sex: str
    hospital: str
    phone: str
    mrn: str
    concepts: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@cache
def name_lists() -> tuple[frozenset[str], frozenset[str]]:
    """Faker's en_US first and last names, lowercased (the paper's valid-name list, B.3 step 2)."""
    from faker.providers.person.en_US import Provider

    return (
        frozenset(n.lower() for n in Provider.first_names),
        frozenset(n.lower() for n in Provider.last_names),
    )


def _date(rng: random.Random) -> str:
    return f"{rng.randint(1, 12):02d}/{rng.randint(1, 28):02d}/{rng.randint(2090, 2130)}"


def make_patients(n: int, *, seed: int = 0, diseases_per_patient: tuple[int, int] = (2, 4)) -> list[Patient]:
    """``n`` patients with unique full names (§5.3.1 keeps only unique names) and 2-4 diseases."""
    from faker.providers.person.en_US import Provider

    rng = random.Random(seed)
    firsts = sorted(Provider.first_names)
    lasts = sorted(Provider.last_names)
    seen: set[str] = set()
    out: list[Patient] = []
    while len(out) < n:
        first, last = rng.choice(firsts), rng.choice(lasts)
        if f"{first} {last}" in seen or first == last:
            continue
        seen.add(f"{first} {last}")
        k = rng.randint(*diseases_per_patient)
        out.append(
            Patient(
                patient_id=f"p{len(out):05d}",
                first=first,
                last=last,
                age=rng.randint(25, 99),
                sex=rng.choice(SEXES),
                hospital=rng.choice(HOSPITALS),
                phone=f"555-01{rng.randint(0, 99):02d}",
                mrn=f"{rng.randint(10**6, 10**7 - 1)}",
                concepts=tuple(rng.sample(NOTE_CONCEPTS, k)),
            )
        )
    return out


def write_note(p: Patient, rng: random.Random, index: int = 0) -> str:
    """Note ``index`` of a patient: the demographics sentence presenting one of the patient's
    diseases (in turn), a body sentence that may name another, then PHI sentences."""
    main = p.concepts[index % len(p.concepts)]
    other = p.concepts[(index + 1) % len(p.concepts)]
    pron, poss = ("he", "his") if p.sex == "man" else ("she", "her")
    vals = {
        **asdict(p),  # age, sex, hospital, phone, mrn ...
        "name": p.name,
        "date": _date(rng),
        "date2": _date(rng),
        "pron": pron,
        "poss": poss,
        "d_main": rng.choice(DISEASES[main]),
        "d_other": rng.choice(DISEASES[other]),
    }
    sents = [_OPEN, *rng.sample(_TEMPLATES_BODY, 2), *rng.sample(_TEMPLATES_PHI, 2)]
    text = " ".join(s.format(**vals) for s in sents)
    return text[0].upper() + text[1:]


def _phrase_index() -> list[tuple[tuple[str, ...], str]]:
    pairs = [(tuple(s.split()), cid) for cid, syns in DISEASES.items() for s in syns]
    return sorted(pairs, key=lambda x: -len(x[0]))


_WORD = re.compile(r"[a-z0-9]+")


def extract_concepts(text: str) -> list[str]:
    """Concept ids mentioned in ``text`` by longest-match of the vocabulary's synonyms (MetaMap's
    role in the paper), in order of first mention, each once.

    Example:
        >>> extract_concepts("She has CHF and congestive heart failure, also diabetes.")
        ['K0003', 'K0001']
    """
    words = _WORD.findall(text.lower())
    index = _phrase_index()
    out: dict[str, None] = {}
    i = 0
    while i < len(words):
        for phrase, cid in index:
            if tuple(words[i : i + len(phrase)]) == phrase:
                out.setdefault(cid)
                i += len(phrase)
                break
        else:
            i += 1
    return list(out)


def synthesize(
    out_dir: str | Path,
    *,
    anonymizer: Callable[[Sequence[Patient]], Callable[[str], str]],
    patients: int = 200,
    notes_per_patient: int = 3,
    seed: int = 0,
) -> dict[str, Path]:
    """Write D_private, D_public (anonymised), the gold pairs and the vocabulary.

    Args:
        anonymizer: given the patients, the function f that makes D_public = f(D_private); the
            paper's is :func:`lmleak.pii.hipaa.patient_anonymizer` (passed in because ``data`` sits
            below ``pii`` in the layers).

    Returns the paths by name (``private``, ``public``, ``gold``, ``patients``, ``diseases``).
    """
    out = secure_dir(out_dir)
    rng = random.Random(seed + 1)
    pts = make_patients(patients, seed=seed)
    anonymize = anonymizer(pts)
    priv, pub = [], []
    for p in pts:
        for j in range(notes_per_patient):
            text = write_note(p, rng, j)
            doc_id = f"{p.patient_id}-n{j}"
            priv.append(Document(p.patient_id, doc_id, text))
            pub.append(Document(p.patient_id, doc_id, anonymize(text)))
    paths = {
        "private": Corpus(priv).write_jsonl(out / "private.jsonl"),
        "public": Corpus(pub).write_jsonl(out / "public.jsonl"),
    }
    gold = _gold_pairs(pts, priv)
    paths["gold"] = atomic_write_text(out / "gold.jsonl", "".join(json.dumps(g) + "\n" for g in gold))
    paths["patients"] = atomic_write_text(
        out / "patients.jsonl", "".join(json.dumps(_patient_record(p)) + "\n" for p in pts)
    )
    paths["diseases"] = atomic_write_json(out / "diseases.json", {k: list(v) for k, v in DISEASES.items()})
    return paths


def _gold_pairs(pts: Sequence[Patient], priv: list[Document]) -> list[dict[str, Any]]:
    """I_T as §5.3.1 builds it: the concepts found in each patient's full name mentions (a note's
    first five sentences), paired with the full name."""
    found: dict[str, dict[str, None]] = {p.patient_id: {} for p in pts}
    for d in priv:
        first_five = " ".join(re.split(r"(?<= \.) ", d.text)[:5])
        for c in extract_concepts(first_five):
            found[d.user_id].setdefault(c)
    return [
        {"patient_id": p.patient_id, "name": p.name, "concept_id": c}
        for p in pts
        for c in found[p.patient_id]
    ]


def _patient_record(p: Patient) -> dict[str, Any]:
    """One line of ``patients.jsonl``: who the patient is and the concepts of their notes."""
    fields = asdict(p)
    return {"patient_id": fields.pop("patient_id"), "name": p.name, **fields, "concepts": list(p.concepts)}
