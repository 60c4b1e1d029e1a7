"""US street addresses with pyap (the parser paper 003, appendix A.2, used to collect addresses).

Presidio has no street-address recognizer (ENVIRONMENT.md), so the balanced policy adds this one.
pyap is regex-based and brittle (a comma after "NW" defeats it), and sometimes starts a match a
word early ("and 4452 Oak Ave ...") and its offsets drift across lines; spans are trimmed to start at the house number.
"""

from __future__ import annotations

import re

from lmleak.pii.spans import PiiSpan


class AddressDetector:
    """Find US addresses with ``pyap.parse(text, country="US")``.

    Example:
        >>> t = "I live at 12 Main Street Apt. 4, Springfield, IL 62704 now."
        >>> [t[s.start:s.end] for s in AddressDetector().detect(t)]
        ['12 Main Street Apt. 4, Springfield, IL 62704']
    """

    name = "address"

    def __init__(self, country: str = "US") -> None:
        self.country = country

    def detect(self, text: str) -> list[PiiSpan]:
        import pyap

        out = []
        # pyap's offsets drift on multi-line input, so parse line by line and re-locate each
        # address by its text.
        for line in re.finditer(r"[^\n]+", text):
            chunk = line.group()
            for a in pyap.parse(chunk, country=self.country):
                full = str(a.full_address).strip(" ,.;")
                start = chunk.find(full, max(0, int(a.match_start) - 8)) if full else -1
                if start < 0:
                    start = chunk.find(full) if full else -1
                if start < 0:
                    continue
                end = start + len(full)
                m = re.search(r"\d", chunk[start:end])  # "and 4452 Oak Ave": start at the number
                if m is not None:
                    start += m.start()
                if end > start:
                    out.append(PiiSpan(line.start() + start, line.start() + end, "ADDRESS", 0.9))
        return out
