"""Span matching of the evaluator against a character-level brute force, and secrets loading."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.errors import DataFileError
from lmleak.pii.evaluate import evaluate_policy, load_secrets, score_spans
from lmleak.pii.policies import get_policy
from lmleak.pii.spans import PiiSpan

span = st.tuples(st.integers(0, 40), st.integers(1, 10), st.sampled_from(["A", "B"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(span, max_size=5), st.lists(span, max_size=5), st.sampled_from([0.01, 0.5, 1.0]))
def test_score_spans_matches_char_level_bruteforce(gold_raw, pred_raw, thr):
    gold = [(a, a + n, e) for a, n, e in gold_raw]
    pred = [PiiSpan(a, a + n, e) for a, n, e in pred_raw]
    table = score_spans({"d": gold}, {"d": pred}, min_overlap=thr)
    pchars = {i for s in pred for i in range(s.start, s.end)}
    gchars = {i for a, b, _ in gold for i in range(a, b)}
    rec = [sum(i in pchars for i in range(a, b)) >= thr * (b - a) for a, b, _ in gold]
    tp = [sum(i in gchars for i in range(s.start, s.end)) >= thr * len(s) for s in pred]
    assert table["ALL"]["support"] == len(gold) and table["ALL"]["predicted"] == len(pred)
    if gold:
        assert table["ALL"]["recall"] == pytest.approx(sum(rec) / len(gold))
        assert table["ALL"]["gamma"] == pytest.approx(1 - sum(rec) / len(gold))
    if pred:
        assert table["ALL"]["precision"] == pytest.approx(sum(tp) / len(pred))


def test_regex_policy_on_synthetic_corpus(synth_corpus):
    table = evaluate_policy(synth_corpus["corpus"], synth_corpus["secrets"], get_policy("regex"))
    for ent in ("PHONE", "EMAIL", "ORDER_ID", "TRACKING_ID", "ADDRESS"):
        assert table[ent]["recall"] == 1.0, ent
    assert table["ALL"]["precision"] > 0.95


def test_load_secrets_reports_line_and_field(tmp_path, synth_corpus):
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps({"doc_id": "x", "user_id": "u", "start": 0, "end": 1, "entity": "PHONE"}) + "\n")
    with pytest.raises(DataFileError, match=r"s.jsonl:1: field 'value'"):
        load_secrets(p)
    doc = synth_corpus["corpus"][0]
    p.write_text(
        json.dumps(
            {
                "doc_id": doc.doc_id,
                "user_id": doc.user_id,
                "start": 0,
                "end": 3,
                "entity": "PHONE",
                "value": "zzz",
            }
        )
        + "\n"
    )
    with pytest.raises(DataFileError, match="not 'zzz'"):
        load_secrets(p, synth_corpus["corpus"])
    with pytest.raises(DataFileError, match="not found"):
        load_secrets(tmp_path / "missing.jsonl")


def test_evaluate_policy_files_equals_the_parts_and_saves_the_same_json(synth_corpus, tmp_path):
    from lmleak.pii.evaluate import PolicyEvaluation, evaluate_policy_files

    paths, corpus, gold = synth_corpus["paths"], synth_corpus["corpus"], synth_corpus["secrets"]
    save = tmp_path / "eval.json"
    res = evaluate_policy_files(
        paths["corpus"], paths["secrets"], "regex", recall=0.5, seed=2, min_overlap=0.4, save=save
    )
    assert isinstance(res, PolicyEvaluation)
    by_hand = evaluate_policy(corpus, gold, get_policy("regex", recall=0.5, seed=2), min_overlap=0.4)
    assert res.entities == by_hand
    assert (res.recall_target, res.seed, res.min_overlap, res.documents) == (0.5, 2, 0.4, len(corpus))
    assert res.policy == getattr(get_policy("regex", recall=0.5, seed=2), "name", "regex")
    assert json.loads(save.read_text()) == json.loads(json.dumps(res.to_dict()))
    assert list(res.to_dict()) == ["policy", "recall_target", "seed", "min_overlap", "documents", "entities"]


def test_evaluate_policy_files_unknown_policy_is_a_config_error(synth_corpus, tmp_path):
    from lmleak.errors import ConfigError
    from lmleak.pii.evaluate import evaluate_policy_files

    paths = synth_corpus["paths"]
    with pytest.raises(ConfigError):
        evaluate_policy_files(paths["corpus"], paths["secrets"], "nope", save=tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()
