"""WikiMIA and MIMIR from a local copy (issue 35, item 5): small synthetic folders written in the
published layouts (the hub's parquet / JSONL files, ``save_to_disk``, row exports), each read to the
same members and non-members; subset selection; the one-line refusal of a folder that is not a
download; and ``lmleak mia --benchmark`` end to end on the shipped fake model.

Every text is synthetic (Faker's lorem words); none is taken from either set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from faker import Faker
from typer.testing import CliRunner

from lmleak.attacks.mia_benchmarks import DEFAULT_SUBSETS, benchmark_texts, resolve_subset
from lmleak.cli.main import app
from lmleak.errors import ConfigError, DataFileError


def _texts(n: int, seed: int) -> list[str]:
    fake = Faker()
    fake.seed_instance(seed)
    return [fake.sentence(nb_words=14) for _ in range(n)]


def _rows(members: list[str], non: list[str]) -> list[dict]:
    """WikiMIA rows as published: ``input`` and ``label`` (1 member, 0 non-member), interleaved."""
    rows = [{"input": t, "label": 1} for t in members] + [{"input": t, "label": 0} for t in non]
    return sorted(rows, key=lambda r: r["input"])


def _parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    pq.write_table(pa.table(cols), path)
    return path


def _jsonl(path: Path, values: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(v) + "\n" for v in values))
    return path


def _arrow_split(folder: Path, rows: list[dict], split: str | None) -> None:
    """One split as ``datasets``' ``save_to_disk`` writes it: an Arrow stream, state.json, dataset_info.json."""
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table({k: [r[k] for r in rows] for k in rows[0]})
    with pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as sink:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    state = {"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": split}
    (folder / "state.json").write_text(json.dumps(state))
    (folder / "dataset_info.json").write_text(json.dumps({"features": {}}))


@pytest.fixture(scope="module")
def sides():
    """Members and non-members of two WikiMIA lengths; a text keeps its leading space and newline."""
    return {
        "WikiMIA_length32": (_texts(5, 1) + [" kept as\nwritten."], _texts(4, 2)),
        "WikiMIA_length64": (_texts(3, 3), _texts(7, 4)),
    }


def _hub(root: Path, sides) -> Path:
    """`huggingface-cli download swj0419/WikiMIA --repo-type dataset --local-dir root`."""
    for split, (mem, non) in sides.items():
        _parquet(root / "data" / f"{split}-00000-of-00001-6d31a92f6d59bcdc.parquet", _rows(mem, non))
    (root / "README.md").write_text("---\nlicense: mit\n---\n")
    return root


# ------------------------------------------------------------------------------------------ WikiMIA
def test_wikimia_from_the_hub_files_reads_each_length_with_its_labels(tmp_path, sides):
    root = _hub(tmp_path / "wikimia", sides)
    default = benchmark_texts("wikimia", root)
    mem, non = sides["WikiMIA_length32"]
    assert sorted(default.members) == sorted(mem) and sorted(default.non_members) == sorted(non)
    assert " kept as\nwritten." in default.members  # as published: no cut, no strip
    assert default.groups is None  # no users: the intervals group texts, not people
    assert "WikiMIA_length32" in default.source and "6 members, 4 non-members" in default.source
    longer = benchmark_texts("WikiMIA", root, subset="64")
    assert (len(longer.members), len(longer.non_members)) == (3, 7)
    assert benchmark_texts("wikimia", root, subset="WikiMIA_length64").members == longer.members


def test_every_wikimia_layout_a_user_gets_reads_the_same_texts(tmp_path, sides):
    mem, non = sides["WikiMIA_length32"]
    rows = _rows(mem, non)
    want = sorted(mem), sorted(non)
    layouts = {
        # the hub's cache folder itself (datasets--swj0419--WikiMIA/snapshots/<revision>/data/...)
        "cache": _hub(tmp_path / "cache" / "snapshots" / "4de3f4f2e81c", sides).parent.parent,
        # the parquet-converter branch (refs/convert/parquet)
        "converted": _parquet(
            tmp_path / "conv" / "default" / "WikiMIA_length32" / "0000.parquet", rows
        ).parents[2],
        # the repository's first upload, or Dataset.to_json
        "jsonl": _jsonl(tmp_path / "jsonl" / "WikiMIA_length32.jsonl", rows).parent,
    }
    saved = tmp_path / "saved"  # DatasetDict.save_to_disk
    _arrow_split(saved / "WikiMIA_length32", rows, "WikiMIA_length32")
    (saved / "dataset_dict.json").write_text(json.dumps({"splits": ["WikiMIA_length32"]}))
    one = tmp_path / "one"  # load_dataset(..., split="WikiMIA_length32").save_to_disk(one)
    _arrow_split(one, rows, "WikiMIA_length32")
    for name, root in {**layouts, "saved": saved, "one": one}.items():
        got = benchmark_texts("wikimia", root)
        assert (sorted(got.members), sorted(got.non_members)) == want, name
    # one saved split of another length is not read as this one
    with pytest.raises(ConfigError, match="no WikiMIA"):
        benchmark_texts("wikimia", one, subset="128")


def test_a_real_datasets_save_to_disk_is_read(tmp_path, sides):
    datasets = pytest.importorskip("datasets")
    mem, non = sides["WikiMIA_length64"]
    rows = _rows(mem, non)
    d = datasets.DatasetDict({"WikiMIA_length64": datasets.Dataset.from_list(rows)})
    d.save_to_disk(str(tmp_path / "dd"))
    got = benchmark_texts("wikimia", tmp_path / "dd", subset="64")
    assert (sorted(got.members), sorted(got.non_members)) == (sorted(mem), sorted(non))


# -------------------------------------------------------------------------------------------- MIMIR
def _mimir_hub(root: Path, source: str, split: str, mem: list[str], non: list[str]) -> Path:
    """The hub's files: members in train/, non-members in test/, one JSON string per line, and the
    neighbour files beside them (not read)."""
    cache = root / ("cache_100_200_10000_512" if source == "full_pile" else "cache_100_200_1000_512")
    stem = source if split == "none" else f"{source}_{split}"
    _jsonl(cache / "train" / f"{stem}.jsonl", mem)
    _jsonl(cache / "test" / f"{stem}.jsonl", non)
    neighbours = f"{stem}_neighbors_25_bert_in_place_swap.jsonl"
    _jsonl(cache / "train_neighbors" / neighbours, [[t] for t in mem])
    _jsonl(cache / "test_neighbors" / neighbours, [[t] for t in non])
    return cache


def test_mimir_from_the_hub_files_pairs_train_members_with_test_non_members(tmp_path):
    root = tmp_path / "mimir"
    wiki = (_texts(6, 10), _texts(6, 11))
    github = (_texts(4, 12), _texts(4, 13))
    cache = _mimir_hub(root, "wikipedia_(en)", "ngram_13_0.8", *wiki)
    _mimir_hub(root, "github", "ngram_7_0.2", *github)
    _mimir_hub(root, "full_pile", "none", *github)
    got = benchmark_texts("mimir", root)  # wikipedia_(en)/ngram_13_0.8, the paper's Table 1 setting
    assert (got.members, got.non_members, got.groups) == (wiki[0], wiki[1], None)
    assert "MIMIR (Duan et al. 2024) wikipedia_(en)/ngram_13_0.8" in got.source
    assert benchmark_texts("mimir", cache).members == wiki[0]  # the cache folder itself
    gh = benchmark_texts("mimir", root, subset="github/ngram_7_0.2")
    assert (gh.members, gh.non_members) == github
    assert benchmark_texts("mimir", root, subset="full_pile").non_members == github[1]
    with pytest.raises(ConfigError, match="github/ngram_13_0.8 found"):
        benchmark_texts("mimir", root, subset="github")


def test_mimir_saved_or_exported_rows_are_read_and_another_config_is_refused(tmp_path):
    mem, non = _texts(5, 20), _texts(5, 21)
    rows = [{"member": m, "nonmember": n, "member_neighbors": [], "nonmember_neighbors": []}
            for m, n in zip(mem, non, strict=True)]  # fmt: skip
    saved = tmp_path / "saved"  # load_dataset("iamgroot42/mimir", "pile_cc").save_to_disk(saved)
    _arrow_split(saved / "ngram_13_0.8", rows, "ngram_13_0.8")
    (saved / "dataset_dict.json").write_text(json.dumps({"splits": ["ngram_13_0.8"]}))
    info = saved / "ngram_13_0.8" / "dataset_info.json"
    info.write_text(json.dumps({"config_name": "pile_cc"}))
    got = benchmark_texts("mimir", saved, subset="pile_cc")
    assert (got.members, got.non_members) == (mem, non)
    with pytest.raises(ConfigError, match="a save of MIMIR's 'pile_cc', not 'wikipedia_\\(en\\)'"):
        benchmark_texts("mimir", saved)
    flat = [{"member": m, "nonmember": n} for m, n in zip(mem, non, strict=True)]
    exported = _parquet(tmp_path / "exp" / "arxiv" / "ngram_13_0.2.parquet", flat).parents[1]
    assert benchmark_texts("mimir", exported, subset="arxiv/ngram_13_0.2").non_members == non


# ----------------------------------------------------------------------------------- refusals
def test_a_folder_that_is_not_a_download_is_refused_in_one_line_naming_it_the_files_and_the_fix(tmp_path):
    wrong = tmp_path / "downloads"
    _jsonl(wrong / "members.jsonl", [{"text": "a"}])
    for bench, expected, repo in (
        ("wikimia", "data/WikiMIA_length32-*.parquet", "swj0419/WikiMIA"),
        ("mimir", "cache_100_200_1000_512/train/wikipedia_(en)_ngram_13_0.8.jsonl", "iamgroot42/mimir"),
    ):
        with pytest.raises(ConfigError) as e:
            benchmark_texts(bench, wrong)
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"field '--data': {wrong}: no ")
        assert expected in msg and "it holds members.jsonl" in msg
        assert (
            f"Fix: download it: huggingface-cli download {repo} --repo-type dataset --local-dir {wrong}"
            in msg
        )
    with pytest.raises(ConfigError, match="no such folder"):
        benchmark_texts("wikimia", tmp_path / "missing")


def test_a_bad_row_an_lfs_pointer_or_a_one_sided_set_names_its_file(tmp_path, sides):
    mem, non = sides["WikiMIA_length32"]
    bad = _parquet(
        tmp_path / "a" / "WikiMIA_length32.parquet", [*_rows(mem, non), {"input": "x y", "label": 2}]
    )
    with pytest.raises(DataFileError, match=f"{bad}:11: field 'label': expected 0 or 1, got 2"):
        benchmark_texts("wikimia", bad.parent)
    pointer = tmp_path / "b" / "data" / "WikiMIA_length32-00000-of-00001-6d31a92f6d59bcdc.parquet"
    pointer.parent.mkdir(parents=True)
    pointer.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:c534\nsize 100340\n")
    with pytest.raises(DataFileError, match="a Git LFS pointer, not the data. Fix: fetch the files"):
        benchmark_texts("wikimia", tmp_path / "b")
    only = _jsonl(tmp_path / "c" / "WikiMIA_length32.jsonl", [{"input": t, "label": 1} for t in mem])
    with pytest.raises(DataFileError, match="no non-members in WikiMIA"):
        benchmark_texts("wikimia", only.parent)
    cols = _parquet(tmp_path / "d" / "WikiMIA_length32.parquet", [{"text": t} for t in mem])
    with pytest.raises(DataFileError, match="no column 'input' \\(columns: text\\)"):
        benchmark_texts("wikimia", cols.parent)


def test_subsets_resolve_to_the_published_names_and_unknown_ones_say_what_exists():
    assert DEFAULT_SUBSETS == {"wikimia": "WikiMIA_length32", "mimir": "wikipedia_(en)/ngram_13_0.8"}
    assert resolve_subset("wikimia", "length256") == "WikiMIA_length256"
    assert resolve_subset("mimir", "temporal_arxiv/2021_06") == "temporal_arxiv/2021_06"
    cases = [
        ("wikimai", None, "Did you mean 'wikimia'?"),
        ("wikimia", "48", "give a text length: 32, 64, 128, 256"),
        ("mimir", "githb", "Did you mean 'github'?"),
        ("mimir", "github/ngram_5_0.2", "SPLIT one of: ngram_13_0.8, ngram_13_0.2, ngram_7_0.2"),
        ("mimir", "temporal_arxiv", "MIMIR's temporal_arxiv needs a split"),
    ]
    for bench, subset, said in cases:
        with pytest.raises(ConfigError, match=said.replace("(", "\\(").replace("?", "\\?")):
            resolve_subset(bench, subset)


# ------------------------------------------------------------------------------------------- the CLI
def test_lmleak_mia_benchmark_wikimia_reports_an_auc_with_its_interval(tmp_path):
    """A fake model fitted on the members, scored on a WikiMIA-format folder: every text its own
    group (no users), the headline chosen on one half and reported on the other, with its interval."""
    mem, non = _texts(24, 30), _texts(24, 31)
    root = tmp_path / "wikimia"
    _parquet(root / "data" / "WikiMIA_length32-00000-of-00001-6d31a92f6d59bcdc.parquet", _rows(mem, non))
    corpus = _jsonl(
        tmp_path / "corpus.jsonl",
        [{"user_id": "u1", "doc_id": f"d{i}", "text": t} for i, t in enumerate(mem)],
    )
    base = ["mia", "--model", f"fake:{corpus}", "--benchmark", "wikimia", "--data", str(root)]
    run = tmp_path / "run"
    r = CliRunner().invoke(app, [*base, "--group-size", "0", "--out", str(run), "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["mia_auc"] > 0.8 and s["mia_auc_ci"] is not None and s["mia_auc_ci"][0] <= s["mia_auc"]
    assert s["headline_selection"] == "split-half" and s["num_per_side"] == 24
    assert s["sets"]["grouping"] == "pii-or-near-duplicate" and s["intervals"]["unit"] == "text cluster"
    assert s["source"].startswith("WikiMIA (Shi et al. 2024) WikiMIA_length32, as published")
    assert json.loads((run / "summary.json").read_text())["mia_auc"] == s["mia_auc"]
    # nothing given is ignored: the benchmark brings both sides; --data alone is refused
    for extra, said in (
        (["--members", str(corpus)], "--members would be ignored"),
        (["--benchmark-subset", "100"], "WikiMIA has no subset '100'"),
    ):
        refused = CliRunner().invoke(app, [*base, *extra, "--out", str(tmp_path / "no")])
        assert refused.exit_code == 2 and said in " ".join(refused.output.split()), refused.output
    alone = ["mia", "--model", f"fake:{corpus}", "--data", str(root), "--out", str(tmp_path / "no")]
    refused = CliRunner().invoke(app, alone)
    assert refused.exit_code == 2 and "--data is read only with --benchmark" in " ".join(
        refused.output.split()
    )
    wrong = CliRunner().invoke(app, [*base[:-1], str(tmp_path), "--out", str(tmp_path / "no")])
    assert wrong.exit_code == 2 and "huggingface-cli download swj0419/WikiMIA" in " ".join(
        wrong.output.split()
    )
    assert not (tmp_path / "no").exists()
    # the options' help renders (a Rich-markup-looking "[/...]" in it once crashed `lmleak mia --help`)
    helped = CliRunner().invoke(app, ["mia", "--help"], env={"COLUMNS": "200"})
    assert helped.exit_code == 0 and "SOURCE or SOURCE/SPLIT" in helped.output, helped.output
