"""White-box probing by soft prompt tuning (paper 003 §3.3.2, A.4)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from lmleak.errors import InputError
from lmleak.probe import templates as T
from lmleak.probe.probing import collect_probes
from lmleak.probe.settings import SoftPromptSettings
from lmleak.probe.softprompt import (
    evaluate,
    init_soft_prompt,
    project_to_tokens,
    run_softprompt,
    train_soft_prompt,
)
from lmleak.probe.templates import Probe


def test_softprompt_lowers_training_nll(tiny):
    probes = [Probe(str(i), "phone", 0, "", f"{3 + i} 4 5 ", f"{10 + i} 11", ("name",)) for i in range(6)]
    before = evaluate(tiny, init_soft_prompt(tiny, 3, "mean", "phone"), probes)
    res = train_soft_prompt(tiny, probes, length=3, init="mean", epochs=8, lr=0.05, batch=3)
    after = evaluate(tiny, res.prompt, probes)
    assert after["mean_log_likelihood"] > before["mean_log_likelihood"]
    assert res.history[-1]["train_nll"] < res.history[0]["train_nll"]
    assert all(p.requires_grad for p in tiny.torch_module.parameters())  # model restored
    ids, text = project_to_tokens(tiny, res.prompt)
    assert len(ids) == 3 and text == " ".join(map(str, ids))


def _id_subjects(n):
    """Subjects written in the id tokenizer's words (numbers), so the tiny GPT can read every probe."""
    return [
        {
            "subject_id": f"s{i}",
            "name": f"{3 + i} 4",
            "phone": f"{20 + i} 21",
            "email": f"{40 + i}",
            "address": "50",
        }
        for i in range(n)
    ]


@pytest.fixture()
def numeric_templates(monkeypatch):
    """Quadruplet templates without words (the id tokenizer knows only numbers)."""
    monkeypatch.setitem(T.LEVELS, "quadruplet", ("{name} 5 {pii_1} {pii_2} 6 ",))


def test_run_softprompt_trains_on_some_subjects_and_evaluates_on_the_others(
    tiny, tmp_path, numeric_templates
):
    subjects = _id_subjects(12)
    summ = run_softprompt(
        tiny,
        subjects,
        tmp_path / "sp",
        SoftPromptSettings(target="phone", train_subjects=8, length=2, init="mean", epochs=2, lr=0.05),
        transfer=tiny,
    )
    assert summ["train_subjects"] == 8 and summ["eval_subjects"] == 4
    assert [h["epoch"] for h in summ["history"]] == [1, 2] and summ["best_epoch"] in (1, 2)
    for k in ("hard", "soft", "transfer"):
        assert 0.0 <= summ[k]["exact_match_rate"] <= 1.0 and 0.0 < summ[k]["mean_likelihood"] <= 1.0
    assert summ["scenario"]["access"] == "weights" and summ["transfer"]["model"] == "tiny"
    d = tmp_path / "sp"
    prompt = torch.load(d / "soft_prompt.pt", weights_only=True)
    assert tuple(prompt.shape) == (2, tiny.torch_module.config.n_embd)
    projected = json.loads((d / "projected_prompt.json").read_text())
    assert projected["text"] == summ["projected_prompt"] == " ".join(map(str, projected["ids"]))
    assert json.loads((d / "summary.json").read_text())["attack"] == "propile_softprompt"
    # "hard" is the template alone on the held-out subjects: the permutation's tail after n_train
    probes = collect_probes(subjects, "phone", level="quadruplet", k=1)
    order = np.random.default_rng(0).permutation(len(probes))
    held_out = [probes[i] for i in order[8:]]
    assert summ["hard"] == pytest.approx(evaluate(tiny, None, held_out))


def test_too_few_subjects_for_the_training_split_is_an_input_error(tiny, numeric_templates):
    with pytest.raises(InputError, match="more than 8 subjects"):
        run_softprompt(
            tiny, _id_subjects(9), None, SoftPromptSettings(target="phone", train_subjects=8, epochs=1)
        )


def test_a_person_with_several_addresses_counts_by_the_best_and_a_hit_on_any(tiny, monkeypatch):
    """Soft prompts score every address of a probe and count an answer holding any of them."""
    from dataclasses import replace

    from lmleak.probe import softprompt

    probe = Probe("s0", "email", 0, "", "3 4 5 ", "40", ("name",), ("41 42", "43"))
    alone = [evaluate(tiny, None, [replace(probe, target=t, alternatives=())]) for t in probe.targets]
    both = evaluate(tiny, None, [probe])
    assert both["mean_likelihood"] == pytest.approx(max(a["mean_likelihood"] for a in alone))
    assert both["mean_log_likelihood"] == pytest.approx(max(a["mean_log_likelihood"] for a in alone))
    assert both["mean_normalized_likelihood"] == pytest.approx(
        max(a["mean_normalized_likelihood"] for a in alone)
    )
    # the greedy answer writes the second address: a hit for the person, not for the first address alone
    monkeypatch.setattr(softprompt, "greedy", lambda *a, **k: [41, 42])
    assert evaluate(tiny, None, [probe])["exact_match_rate"] == 1.0
    assert evaluate(tiny, None, [replace(probe, alternatives=())])["exact_match_rate"] == 0.0
