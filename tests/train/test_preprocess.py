"""lmleak.train.preprocess: the dedup / redact / split runs the CLI prints (paper 002, Algorithm 1)."""

from __future__ import annotations

import json

import pytest

from lmleak.data.loaders import load_corpus
from lmleak.pii.policies import get_policy
from lmleak.train.dedup import dedup_corpus
from lmleak.train.preprocess import PreprocessSummary, dedup_to_dir, redact_to_dir, split_to_dir
from lmleak.train.sentences import sentence_corpus
from lmleak.train.split import crt_split


def _written(path):
    d = json.loads(path.read_text())
    assert d.pop("schema_version") and d.pop("lmleak_version")
    return d


def test_dedup_summary_is_the_json_written_and_matches_dedup_corpus(synth_corpus, tmp_path):
    corpus = synth_corpus["corpus"]
    res = dedup_to_dir(corpus, tmp_path / "dd", source="c.jsonl", mode="exact")
    assert isinstance(res, PreprocessSummary) and res.out_dir == tmp_path / "dd"
    assert _written(tmp_path / "dd" / "dedup.json") == res.to_dict()
    assert list(res.to_dict())[:2] == ["stage", "corpus"] and list(res.to_dict())[-2:] == ["removed", "files"]
    direct, st = dedup_corpus(sentence_corpus(corpus), mode="exact")  # the oracle: the step itself
    assert res.removed == {"DUPLICATE": st.masked} and st.masked > 0
    assert [d.text for d in load_corpus(res.files["corpus"])] == [d.text for d in direct]


def test_redact_removed_is_the_per_entity_count_in_its_place(synth_corpus, tmp_path):
    res = redact_to_dir(synth_corpus["corpus"], tmp_path / "rd", get_policy("regex"), source="c")
    d = res.to_dict()
    assert _written(tmp_path / "rd" / "redaction.json") == d
    keys = list(d)
    # redaction's own statistics carry ``removed``: it stays before removed_total, files comes last
    assert keys.index("removed") < keys.index("removed_total") and keys[-1] == "files"
    assert d["removed"]["PHONE"] > 0 and d["removed_total"] == sum(d["removed"].values())


def test_split_writes_the_crt_split_partition(synth_corpus, tmp_path):
    corpus = synth_corpus["corpus"]
    res = split_to_dir(corpus, tmp_path / "sp", get_policy("regex"), source="c", conservative="conservative")
    oracle = crt_split(corpus, get_policy("regex"), conservative="conservative", dedup="exact")
    assert [d.text for d in load_corpus(res.files["public"])] == [d.text for d in oracle.public]
    assert [d.text for d in load_corpus(res.files["private"])] == [d.text for d in oracle.private]
    assert res.removed == {
        **oracle.stats["redaction"]["removed"],
        "DUPLICATE": oracle.stats["dedup"]["masked"],
    }
    assert _written(tmp_path / "sp" / "split.json") == res.to_dict()
    none = split_to_dir(corpus, tmp_path / "sp2", get_policy("regex"), source="c", dedup="none")
    assert "DUPLICATE" not in none.removed and none.stats["dedup"] is None


def test_a_corpus_path_is_loaded_and_named_and_a_bad_file_leaves_no_folder(tmp_path, synth_corpus):
    from lmleak.errors import LmleakError

    path = tmp_path / "c.jsonl"
    synth_corpus["corpus"].write_jsonl(path)
    by_path = dedup_to_dir(path, tmp_path / "a")
    by_obj = dedup_to_dir(synth_corpus["corpus"], tmp_path / "b", source=str(path))
    assert by_path.corpus == str(path) and by_path.stats == by_obj.stats
    assert (tmp_path / "a" / "deduped.jsonl").read_bytes() == (tmp_path / "b" / "deduped.jsonl").read_bytes()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(LmleakError):
        redact_to_dir(bad, tmp_path / "never", get_policy("regex"))
    assert not (tmp_path / "never").exists()
