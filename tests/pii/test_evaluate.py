"""Span matching of the evaluator against a character-level brute force, and secrets loading."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.errors import DataFileError
from lmleak.pii.evaluate import evaluate_policy, load_secrets, score_spans
from lmleak.pii.policies import get_policy
from lmleak.pii.regex import Pattern, RegexDetector
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
    from lmleak.pii.policies import PolicyChoice

    paths, corpus, gold = synth_corpus["paths"], synth_corpus["corpus"], synth_corpus["secrets"]
    save = tmp_path / "eval.json"
    res = evaluate_policy_files(
        paths["corpus"],
        paths["secrets"],
        PolicyChoice("regex", recall=0.5, seed=2),
        min_overlap=0.4,
        save=save,
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


shape = st.sampled_from(["ascii", "handle", "non_latin"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(span, shape), max_size=6), st.lists(span, max_size=5))
def test_score_by_shape_matches_a_char_level_bruteforce_per_shape(gold_raw, pred_raw):
    from lmleak.pii.evaluate import Secret, score_by_shape

    secrets = [Secret("d", "u", a, a + n, e, "x" * n, sh) for (a, n, e), sh in gold_raw]
    pred = [PiiSpan(a, a + n, e) for a, n, e in pred_raw]
    table = score_by_shape(secrets, {"d": pred})
    pchars = {i for s in pred for i in range(s.start, s.end)}
    for sh in {s.name_shape for s in secrets}:
        mine = [s for s in secrets if s.name_shape == sh]
        hit = [sum(i in pchars for i in range(s.start, s.end)) >= 0.5 * (s.end - s.start) for s in mine]
        row = table[sh]["ALL"]
        assert row["support"] == len(mine) and row["recall"] == pytest.approx(sum(hit) / len(mine))
        lo, hi = row["gamma_ci"]
        assert lo <= row["gamma"] <= hi and "precision" not in row
    assert set(table) == {s.name_shape for s in secrets}


def test_recall_by_shape_against_the_planted_secrets_of_a_multilingual_corpus(tmp_path):
    """`pii evaluate --by shape` on customersim's planted names: each shape's recall equals a count
    by hand over the spans, and the regex names every shape within 5 points of the others."""
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.customersim import synthesize
    from lmleak.pii.evaluate import evaluate_policy_files, gamma_by_shape

    paths = synthesize(tmp_path, users=60, dialogs_per_user=2, seed=11)
    res = evaluate_policy_files(paths["corpus"], paths["secrets"], "regex", by="shape")
    texts = {d.doc_id: d.text for d in load_corpus(paths["corpus"])}
    detector = get_policy("regex")
    spans = {doc: detector.detect(t) for doc, t in texts.items()}
    by_hand: dict[str, list[bool]] = {}
    for line in paths["secrets"].read_text().splitlines():
        r = json.loads(line)
        if r["entity"] != "PERSON":
            continue
        covered = {i for s in spans[r["doc_id"]] for i in range(s.start, s.end)}
        hit = sum(i in covered for i in range(r["start"], r["end"])) >= 0.5 * (r["end"] - r["start"])
        by_hand.setdefault(r["name_shape"], []).append(hit)
    assert set(by_hand) == set(res.by_shape) and len(by_hand) == 6  # every shape is planted
    recall = {sh: sum(h) / len(h) for sh, h in by_hand.items()}
    for sh, r in recall.items():
        assert res.by_shape[sh]["PERSON"]["recall"] == pytest.approx(r)
        assert res.by_shape[sh]["PERSON"]["support"] == len(by_hand[sh])
    assert max(recall.values()) - min(recall.values()) <= 0.05 and res.warnings == ()
    g = gamma_by_shape(res.by_shape)
    assert all(g[sh]["gamma_person"] == pytest.approx(1 - recall[sh]) for sh in recall)
    assert list(res.to_dict())[-2:] == ["by_shape", "warnings"]


def test_a_policy_that_misses_a_shape_is_named_in_the_warnings():
    from lmleak.pii.evaluate import Secret, score_by_shape, shape_gaps

    text = "Customer: My name is Ann Lee. Customer: My name is 佐藤 陽子."
    secrets = [
        Secret("d", "u", text.index("Ann"), text.index("Ann") + 7, "PERSON", "Ann Lee", "ascii"),
        Secret("d", "u", text.index("佐藤"), text.index("佐藤") + 5, "PERSON", "佐藤 陽子", "non_latin"),
    ]
    ascii_only = RegexDetector([Pattern("PERSON", re.compile(r"(?<=is )[A-Z][a-z]+ [A-Z][a-z]+"))])
    table = score_by_shape(secrets, {"d": ascii_only.detect(text)})
    (warning,) = shape_gaps(table)
    assert warning.startswith("PERSON recall on non_latin names is 0.000 (1 spans), 1.000 below ascii")
    assert shape_gaps(score_by_shape(secrets, {"d": get_policy("regex").detect(text)})) == []


def test_secrets_with_an_unknown_name_shape_are_refused_and_old_files_get_the_person_shape(tmp_path):
    p = tmp_path / "s.jsonl"
    row = {"doc_id": "d", "user_id": "u", "start": 0, "end": 4, "entity": "PERSON", "value": "Иван"}
    p.write_text(json.dumps({**row, "name_shape": "klingon"}) + "\n")
    with pytest.raises(DataFileError, match="name_shape"):
        load_secrets(p)
    p.write_text(json.dumps(row) + "\n" + json.dumps({**row, "entity": "PHONE", "value": "5550"}) + "\n")
    assert [s.shape for s in load_secrets(p)] == ["handle", None]
