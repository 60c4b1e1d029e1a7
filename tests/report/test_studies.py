"""Studies over a report (paper 001 Fig. 5, Table 2), fast: n-gram stand-ins for the snapshots.

The real per-epoch training run is tests/report/test_end_to_end.py (marker ``slow``).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.errors import InputError
from lmleak.models.fake import FakeLM
from lmleak.report.leakage import ReportConfig, run_report
from lmleak.report.studies import snapshot_dirs, snapshot_study
from lmleak.runs import INCOMPLETE

TEXTS = [
    "alice pays with card 4 4 1 2",
    "the weather is nice today",
    "bob lives at 12 oak road",
    "the weather is nice today",
]


def _corpus() -> Corpus:
    return Corpus([Document(f"u{i % 3}", f"d{i}", t) for i, t in enumerate(TEXTS)])


def test_snapshot_study_is_the_report_of_every_epoch(tmp_path):
    model = tmp_path / "model"
    for e in (2, 10, 1):
        (model / "snapshots" / f"epoch-{e}").mkdir(parents=True)
    (model / "snapshots" / "epoch-x").mkdir()  # not an epoch folder: ignored
    assert [e for e, _ in snapshot_dirs(model)] == [1, 2, 10]
    # epoch N: an n-gram model of order N + 1 fitted on the corpus (more context, more memorised)
    orders = {f"epoch-{e}": e + 1 for e in (1, 2, 10)}

    out = tmp_path / "snap"
    open_while_loading = []

    def load(path):
        open_while_loading.append((out / INCOMPLETE).exists())
        return FakeLM.from_texts(TEXTS, order=orders[path.name])

    table = snapshot_study(model, _corpus(), out, k=1, load=load)
    # the study runs inside open_run (locked, marked incomplete until it ends), as every run writer
    assert open_while_loading == [True, True, True] and not (out / INCOMPLETE).exists()
    assert table["epoch"].tolist() == [1, 2, 10]
    for e in (1, 2, 10):
        direct = run_report(
            load(model / "snapshots" / f"epoch-{e}"), _corpus(), tmp_path / f"d{e}", ReportConfig()
        )
        row = table[table["epoch"] == e].iloc[0]
        assert row["unique_sequences"] == direct["unique_sequences"]
        assert row["num_sequences"] == direct["num_sequences"]
        assert row["train_perplexity"] == pytest.approx(direct["perplexity"])
        assert pd.isna(row["val_perplexity"])
    useqs = pd.read_parquet(out / "snapshot_sequences.parquet")
    assert (
        useqs.groupby("epoch").size().reindex([1, 2, 10], fill_value=0).tolist()
        == table["unique_sequences"].tolist()
    )
    for name in ("fig5a_perplexity.png", "fig5b_unique_lengths.png", "fig5c_unique_perplexity.png"):
        assert (out / name).stat().st_size > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stage"] == "report_snapshots" and [r["epoch"] for r in summary["epochs"]] == [1, 2, 10]


def test_a_model_without_snapshots_is_refused(tmp_path):
    with pytest.raises(InputError, match="no per-epoch snapshots"):
        snapshot_dirs(tmp_path)


def test_the_studies_take_corpus_files_as_well_as_corpora(tmp_path):
    from lmleak.report.studies import compare_models

    path = _corpus().write_jsonl(tmp_path / "corpus.jsonl")
    model = tmp_path / "model"
    (model / "snapshots" / "epoch-1").mkdir(parents=True)

    def load(spec):
        return FakeLM.from_texts(TEXTS, order=2)

    def strip(df):  # the run folders differ by name only
        return df.drop(columns=[c for c in df.columns if "dir" in c or "path" in c or "run" in c])

    by_file = snapshot_study(model, path, tmp_path / "s1", k=1, val_corpus=path, load=load)
    by_corpus = snapshot_study(model, _corpus(), tmp_path / "s2", k=1, val_corpus=_corpus(), load=load)
    pd.testing.assert_frame_equal(strip(by_file), strip(by_corpus))
    assert by_file["val_perplexity"].notna().all()
    by_file = compare_models({"m": "x"}, path, tmp_path / "c1", val_corpus=path, load=load)
    by_corpus = compare_models({"m": "x"}, _corpus(), tmp_path / "c2", val_corpus=_corpus(), load=load)
    pd.testing.assert_frame_equal(strip(by_file), strip(by_corpus))
