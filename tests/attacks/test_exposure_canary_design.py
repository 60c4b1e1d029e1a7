"""`lmleak exposure` and canary designs: the design read from canaries.jsonl, checked against
--canary-design, recorded in the summary; crafted canaries ranked over their runes."""

from __future__ import annotations

import json

import pytest

from lmleak.attacks.exposure import ExposureSettings, canary_design_of, read_canaries, run_exposure
from lmleak.data.canaries import CRAFTED_PREFIX
from lmleak.errors import DataFileError
from lmleak.models.fake import FakeLM


def _write(path, rows):
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


def test_the_design_is_read_per_canary_and_random_when_unsaid(tmp_path):
    p = _write(
        tmp_path / "c.jsonl",
        [
            {"prefix": "My ID is: ", "secret": "12"},
            {"prefix": CRAFTED_PREFIX, "secret": "ᚠᚢ", "canary_design": "crafted"},
        ],
    )
    recs = read_canaries(p)
    assert [r["canary_design"] for r in recs] == ["random", "crafted"]
    assert canary_design_of(recs, p) == "mixed"
    with pytest.raises(DataFileError, match=r"c.jsonl:1: field 'canary_design'"):
        canary_design_of(recs, p, "crafted")
    bad = _write(tmp_path / "b.jsonl", [{"prefix": "x", "secret": "1", "canary_design": "fancy"}])
    with pytest.raises(DataFileError, match="unknown canary design"):
        read_canaries(bad)


def test_crafted_exposure_ranks_over_the_runes_and_records_the_design(tmp_path):
    # a fake model that memorised the corpus: the trained crafted canary ranks first of 10^2
    secret = "ᚦᚨ"
    canaries = _write(
        tmp_path / "canaries.jsonl",
        [{"prefix": CRAFTED_PREFIX, "secret": secret, "canary_design": "crafted"}],
    )
    model = FakeLM.from_texts([CRAFTED_PREFIX + secret, "some other text"])
    summary, results = run_exposure(
        model, canaries, tmp_path / "run", ExposureSettings(placebos=2, canary_design="crafted")
    )
    assert summary["canary_design"] == "crafted"
    assert results[0].num_candidates == 100 and results[0].rank == 1
