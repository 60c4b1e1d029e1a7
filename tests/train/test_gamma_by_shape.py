"""The measured γ of ``train --mode crt`` broken down by name shape (issue 28), against the planted secrets.

Self-contained (one call of ``policy_gamma``, the CRT path's γ record): the pooled γ can hide a shape
a policy misses, so ``privacy.json`` carries ``gamma_by_shape`` beside it.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from lmleak.data.loaders import load_corpus
from lmleak.data.synth.customersim import synthesize
from lmleak.pii.policies import get_policy
from lmleak.train.config import TrainConfig
from lmleak.train.trainer import policy_gamma


@pytest.mark.parametrize("policy", ["regex", "paper003"])
def test_crt_gamma_by_shape_equals_a_count_over_the_planted_secrets(tmp_path, policy):
    paths = synthesize(tmp_path, users=40, dialogs_per_user=2, seed=5)
    corpus = load_corpus(paths["corpus"])
    cfg = TrainConfig(mode="crt", noise_multiplier=1.0, policy=policy, secrets=str(paths["secrets"]))
    got = policy_gamma(cfg, corpus)
    # the oracle: every planted span, covered character by character by the policy's detections
    detector = get_policy(policy)
    covered = {d.doc_id: {i for s in detector.detect(d.text) for i in range(s.start, s.end)} for d in corpus}
    missed: dict[str, list[bool]] = defaultdict(list)
    names: dict[str, list[bool]] = defaultdict(list)
    for r in map(json.loads, paths["secrets"].read_text().splitlines()):
        hit = sum(i in covered[r["doc_id"]] for i in range(r["start"], r["end"])) >= 0.5 * (
            r["end"] - r["start"]
        )
        missed[r["name_shape"]].append(not hit)
        if r["entity"] == "PERSON":
            names[r["name_shape"]].append(not hit)
    by_shape = got["gamma_by_shape"]
    assert set(by_shape) == set(missed) and len(missed) == 6  # every shape is planted
    for shape, m in missed.items():
        row = by_shape[shape]
        assert row["support"] == len(m) and row["gamma"] == pytest.approx(sum(m) / len(m))
        assert row["gamma_person"] == pytest.approx(sum(names[shape]) / len(names[shape]))
        assert row["gamma_ci"][0] <= row["gamma"] <= row["gamma_ci"][1]
    # every secret has a shape here, so the shapes' misses add up to the pooled γ
    total = sum(len(m) for m in missed.values())
    assert got["gamma_support"] == total
    assert got["gamma"] == pytest.approx(sum(sum(m) for m in missed.values()) / total)
