"""Synthetic corpora with known PII: customer-service dialogues (CustomerSim), a mailing-list
archive (synth mail) and clinical notes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmleak.data.names import NAME_SHAPES, name_shape
from lmleak.jsonl import read_jsonl
from lmleak.runs import atomic_write_text, secure_dir

#: E-mail domains of the synthetic people (reserved for documentation: never a real address).
EMAIL_DOMAINS = ("example.org", "example.com", "example.net")
#: Faker locales of the multilingual mix, the default of ``synth mail`` and ``synth customersim``
#: (:mod:`lmleak.data.synth.people`).
DEFAULT_LOCALES = ("en_US", "de_DE", "fr_FR", "es_ES", "pl_PL", "tr_TR", "vi_VN", "ru_RU", "ja_JP")
#: English alone: the generator of earlier versions, byte for byte.
ENGLISH = ("en_US",)


def write_jsonl_files(out: Path, files: dict[str, tuple[str, list[str]]]) -> dict[str, Path]:
    """Write each ``key: (file name, JSON lines)`` under ``out`` via a temporary name; the paths by key.

    Example:
        >>> import tempfile
        >>> paths = write_jsonl_files(Path(tempfile.mkdtemp()), {"corpus": ("c.jsonl", ['{"a": 1}'])})
        >>> paths["corpus"].read_text()
        '{"a": 1}\\n'
    """
    secure_dir(out)  # owner-only: the secrets file lists every PII span
    return {
        key: atomic_write_text(out / name, "".join(ln + "\n" for ln in lines))
        for key, (name, lines) in files.items()
    }


def subjects_per_shape(subjects: Path) -> dict[str, int]:
    """How many people of a written ``subjects.jsonl`` have each name shape (every shape, 0 included).

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "s.jsonl"
        >>> _ = p.write_text('{"name": "zephyr"}\\n{"name": "Ann Lee", "name_shape": "ascii"}\\n')
        >>> subjects_per_shape(p)
        {'handle': 1, 'nickname': 0, 'particle': 0, 'non_latin': 0, 'accented': 0, 'ascii': 1}
    """
    counts = Counter(row.get("name_shape") or name_shape(row["name"]) for row in read_jsonl(subjects))
    return {shape: counts.get(shape, 0) for shape in NAME_SHAPES}


def english_record(name: str, email: str) -> dict[str, Any]:
    """The name fields of a subjects.jsonl row for a person of the English-only generator (one
    spelling, one address); the multilingual one writes them from its person
    (:meth:`lmleak.data.synth.people.Person.record`).

    Example:
        >>> english_record("Ann Lee", "ann@example.org")["emails"]
        ['ann@example.org']
    """
    return {"name": name, "name_shape": name_shape(name), "nickname": None, "variants": [],
            "locale": "en_US", "email": email, "emails": [email]}  # fmt: skip


@dataclass
class DocDraft:
    """A document under construction: text pieces plus the PII spans written into it, each
    (start, end, entity, value, owner user id)."""

    parts: list[str] = field(default_factory=list)
    spans: list[tuple[int, int, str, str, str]] = field(default_factory=list)
    length: int = 0

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def pii(self, value: str, entity: str, owner: str) -> None:
        self.spans.append((self.length, self.length + len(value), entity, value, owner))
        self.add(value)

    def fill(self, template: str, values: dict[str, tuple[str, str, str]]) -> None:
        """Write ``template``; each ``{slot}`` becomes a recorded span (value, entity, owner)."""
        i = 0
        while i < len(template):
            j = template.find("{", i)
            if j < 0:
                self.add(template[i:])
                return
            self.add(template[i:j])
            k = template.index("}", j)
            value, entity, owner = values[template[j + 1 : k]]
            if entity:
                self.pii(value, entity, owner)
            else:
                self.add(value)
            i = k + 1

    def extend(self, other: DocDraft, prefix: str = "") -> None:
        """Append ``other`` line by line, each line prefixed (quoting); its spans move along."""
        text = other.text
        line_start = 0
        spans = sorted(other.spans)
        si = 0
        for line in text.split("\n"):
            base = self.length + len(prefix)
            line_end = line_start + len(line)
            while si < len(spans) and spans[si][0] < line_end + 1:
                s, e, entity, value, owner = spans[si]
                if s >= line_start and e <= line_end:
                    self.spans.append((base + s - line_start, base + e - line_start, entity, value, owner))
                si += 1
            self.add(prefix + line + "\n")
            line_start = line_end + 1

    @property
    def text(self) -> str:
        return "".join(self.parts)
