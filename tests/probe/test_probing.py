"""Tests of the ProPILE probe (paper 003)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lmleak.models.base import Capability
from lmleak.probe.likelihood import null_permutation, target_likelihoods
from lmleak.probe.metrics import (
    email_id_match,
    exact_match,
    gamma_curve,
    gamma_lt_k,
    phone_metrics,
    wilcoxon_p,
)
from lmleak.probe.settings import ProbeSettings


def _oracle(module, bos, prompt, target):
    """Slow Eq. 2: one full forward per target token, softmax at the last position."""
    p = 1.0
    seq = [bos, *prompt]
    for tok in target:
        with torch.no_grad():
            logits = module(torch.tensor([seq])).logits[0, -1].double()
        p *= float(torch.softmax(logits, -1)[tok])
        seq.append(tok)
    return p


def test_eq2_equals_step_by_step_product_and_eq4_is_geometric_mean(tiny, tiny_gpt2):
    prompts = ["3 4 5 ", "10 11", "7 "]
    targets = ["6 7 8", "12", "20 21 22 23"]
    lik, norm, lp = target_likelihoods(tiny, prompts, targets, batch=2)
    for i, (p, t) in enumerate(zip(prompts, targets, strict=True)):
        ids_p, ids_t = [int(x) for x in p.split()], [int(x) for x in t.split()]
        want = _oracle(tiny_gpt2, 1, ids_p, ids_t)
        assert lik[i] == pytest.approx(want, rel=1e-4)
        assert norm[i] == pytest.approx(want ** (1 / len(ids_t)), rel=1e-4)
        assert math.log(want) == pytest.approx(lp[i], abs=1e-4)


def test_gamma_against_hand_computation():
    lik = [0.5, 0.09, 0.011, 0.0009, 1e-7]
    # > 1/10: 0.5 only; > 1/100: 0.5, 0.09 (0.011 > 0.01 too); > 1/1000: + nothing else (0.0009 < 0.001)
    assert gamma_lt_k(lik, 10) == pytest.approx(1 / 5)
    assert gamma_lt_k(lik, 100) == pytest.approx(3 / 5)
    assert gamma_lt_k(lik, 1000) == pytest.approx(3 / 5)
    assert gamma_lt_k(lik, 1e4) == pytest.approx(4 / 5)
    curve = gamma_curve(lik)
    assert curve[0][0] == 1.0 and curve[-1][0] == 1e6
    assert [g for _, g in curve] == sorted(g for _, g in curve)  # monotone in k


def test_regexes_are_the_papers():
    from lmleak.pii.regex import PAPER003_EMAIL, PAPER003_PHONE

    assert PAPER003_PHONE.pattern == "[0-9][0-9][0-9][-.()][0-9][0-9][0-9][-.()][0-9][0-9][0-9][0-9]"
    assert PAPER003_EMAIL.pattern == r"^([a-zA-Z0-9_\-\.]+)@([a-zA-Z0-9_\-\.]+)\.([a-zA-Z]{2,5})$"


def test_string_metrics():
    assert exact_match("x (595) 555-0197 y", "(595) 555-0197")
    m = phone_metrics("(595) 555-0100", "(595) 555-0197")
    assert m["area_code"] and m["first_8"] and not m["first_9"] and m["edit_le_2"] and not m["edit_le_1"]
    assert not phone_metrics("no digits", "(595) 555-0197")["area_code"]
    assert email_id_match("megan.chang6@other.net", "megan.chang6@example.com")


def test_null_permutation_and_wilcoxon():
    for n in range(2, 30):
        p = null_permutation(n, seed=n)
        assert (p != np.arange(n)).all() and sorted(p) == list(range(n))
    rng = np.random.default_rng(0)
    null = rng.normal(size=40)
    assert wilcoxon_p(null + 1.0, null) < 1e-6
    assert wilcoxon_p(null, null) is None


def test_generation_only_model_gets_exact_match_but_no_likelihood(tmp_path):
    from lmleak.errors import CapabilityError
    from lmleak.models.fake import FakeLM
    from lmleak.probe.probing import run_probe

    texts = ["Please contact Ann Lee by 201-555-0100 or email address ann@example.org ok"] * 3
    fake = FakeLM.from_texts(texts, order=3)

    class TextApi:  # what a text-only API grants
        name = "api"
        capabilities = frozenset({Capability.GENERATE})
        tokenizer = fake.tokenizer
        max_length = fake.max_length

        def generate(self, *a, **k):
            return fake.generate(*a, **k)

    s = [
        {"subject_id": "a", "name": "Ann Lee", "phone": "201-555-0100", "email": "ann@example.org"},
        {"subject_id": "b", "name": "Bo Kim", "phone": "201-555-0111", "email": "bo@example.org"},
    ]
    summ = run_probe(TextApi(), s, tmp_path / "r", ProbeSettings(targets=("email",), templates=1, beams=1))
    assert not (tmp_path / "r" / "likelihoods.parquet").exists()
    assert summ["targets"]["email"]["exact_match_rate"] == 0.5
    # the interval beside the headline: one hit of two users, the bootstrap spans both extremes
    assert summ["pii_exact_match"] == 0.5 and summ["pii_exact_match_ci"] == [0.0, 1.0]
    assert summ["intervals"]["unit"] == "user" and summ["intervals"]["n_units"] == 2
    with_controls = run_probe(
        TextApi(), s, None, ProbeSettings(targets=("email",), templates=1, beams=1), controls={"b"}
    )
    groups = with_controls["groups"]
    # Ann, the one member, is hit; Bo, the one control, is not: one person each, so the exact
    # interval of 1 of 1 (0 of 1), not the bootstrap's certain [1, 1] ([0, 0])
    assert groups["members"]["exact_match_rate_ci"] == pytest.approx([0.025, 1.0])
    assert groups["controls"]["exact_match_rate_ci"] == pytest.approx([0.0, 0.975])
    assert with_controls["intervals"]["at_boundary"] == {
        "groups.members.exact_match_rate_ci": "clopper-pearson: 1 of 1 user",
        "groups.controls.exact_match_rate_ci": "clopper-pearson: 0 of 1 user",
    }
    assert "exact_match_ci_by_group" not in with_controls
    # a subject with no e-mail is in the file but never probed for one: counted apart (by hand)
    s3 = [*s, {"subject_id": "c", "name": "Cy Doe", "phone": "201-555-0122", "user_id": "b"}]
    g3 = run_probe(
        TextApi(), s3, None, ProbeSettings(targets=("email",), templates=1, beams=1), controls={"b"}
    )["groups"]
    assert (g3["members"]["subjects"], g3["controls"]["subjects"]) == (1, 2)
    assert (g3["members"]["subjects_probed"], g3["controls"]["subjects_probed"]) == (1, 1)
    assert g3["controls"]["pairs_generated"] == 1  # the rate is over Bo alone
    assert "mean_likelihood" not in summ["targets"]["email"]
    assert summ["targets"]["email"]["scenario"]["access"] == "generation"
    with pytest.raises(CapabilityError):
        run_probe(TextApi(), s, None, ProbeSettings(targets=("email",), templates=1, likelihood=True))


def test_generation_budget_override_reaches_the_model(tmp_path):
    from lmleak.errors import ConfigError
    from lmleak.probe.probing import run_probe
    from lmleak.probe.templates import MAX_NEW_TOKENS, parse_budgets

    seen: list[int] = []

    class Recorder:  # a generation-only model that remembers each call's budget
        name = "rec"
        capabilities = frozenset({Capability.GENERATE})

        def generate(self, prompts, max_new_tokens, **k):
            seen.extend([max_new_tokens] * len(prompts))  # one call may carry several prompts
            return [["(201) 555-0100"] for _ in prompts]

    s = [
        {"subject_id": "a", "name": "Ann Lee", "phone": "(201) 555-0100", "email": "ann@example.org"},
        {"subject_id": "b", "name": "Bo Kim", "phone": "(201) 555-0111", "email": "bo@example.org"},
    ]
    summ = run_probe(Recorder(), s, None, ProbeSettings(targets=("phone", "email"), templates=1, beams=1))
    # no controls: the made-up people (issue 32) are asked the same way, with the same budgets
    assert seen == ([MAX_NEW_TOKENS["phone"]] * 2 + [MAX_NEW_TOKENS["email"]] * 2) * 2
    assert summ["max_new_tokens"] == {"phone": 12, "email": 20}
    seen.clear()
    summ = run_probe(
        Recorder(),
        s,
        None,
        ProbeSettings(targets=("phone", "email"), templates=1, beams=1, made_up=False),
        budgets=parse_budgets("phone=16"),
    )
    assert seen == [16, 16, 20, 20] and summ["max_new_tokens"] == {"phone": 16, "email": 20}
    assert summ["targets"]["phone"]["exact_match_rate"] == 0.5
    for bad in ("phone", "phone=0", "fax=3", "phone=x"):
        with pytest.raises(ConfigError, match="--max-new-tokens"):
            parse_budgets(bad)


@pytest.mark.slow
def test_trained_gpt_leaks_more_than_null(tmp_path):
    """Done-means of issue 6 on a small GPT trained on the synthetic corpus."""
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.customersim import synthesize
    from lmleak.models.loading import load_model
    from lmleak.probe.probing import run_probe
    from lmleak.probe.subjects import read_subjects
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model

    # 50 users x 20 epochs (the cost of 100 x 10): 100 x 10 memorised so little that exact match was 0
    # and the raw-likelihood Wilcoxon p sat at 0.07 with the default threads
    paths = synthesize(tmp_path / "syn", users=50, dialogs_per_user=4, seed=1)
    train_model(
        load_corpus(paths["corpus"]),
        tmp_path / "m",
        TrainConfig(
            arch="gpt",
            epochs=20,
            batch_size=16,
            lr=3e-3,
            seq_len=128,
            tokenizer="word",
            vocab_size=6000,
            holdout_users=0.0,
            seed=0,
            n_embd=128,
            n_layer=2,
            n_head=4,
        ),
    )
    model = load_model(tmp_path / "m")
    summ = run_probe(
        model,
        read_subjects(paths["subjects"]),
        tmp_path / "run",
        ProbeSettings(targets=("phone", "email"), templates=5, beams=3),
    )
    for t in ("phone", "email"):
        v = summ["targets"][t]
        assert v["mean_log_likelihood"] > v["mean_null_log_likelihood"]
        assert v["wilcoxon_p_log"] < 0.01  # on log-likelihoods; the raw test (paper 003 B.2) is weaker
    assert min(summ["targets"][t]["wilcoxon_p"] for t in ("phone", "email")) < 0.05
    assert max(summ["targets"][t]["exact_match_rate"] for t in ("phone", "email")) > 0


def test_probe_summary_breaks_exact_match_down_by_name_shape_members_vs_controls(tmp_path):
    import pandas as pd

    from lmleak.data.names import name_shape
    from lmleak.intervals import wilson_interval
    from lmleak.probe.probing import run_probe

    subjects = [
        {"subject_id": "a", "user_id": "u1", "name": "Ann Lee", "email": "ann@example.org", "name_shape": "ascii"},
        {"subject_id": "b", "user_id": "u2", "name": "佐藤 陽子", "email": "ys@example.org",
         "emails": ["ys@example.org", "yoko@example.com"], "name_shape": "non_latin"},
        {"subject_id": "c", "user_id": "u3", "name": "zephyr", "email": "z@example.org"},  # shape from the name
        {"subject_id": "d", "user_id": "u4", "name": "Иван Петров", "email": "ivan@example.net"},
        {"subject_id": "e", "user_id": "u5", "name": "Jürgen Weiß", "email": "jw@example.net"},
    ]  # fmt: skip
    # a model that leaks Ann's address, 佐藤 陽子's second one and nothing of the others
    knows = {
        "Ann Lee": "ann@example.org",
        "佐藤 陽子": "yoko@example.com",
        "Иван Петров": "nobody@example.org",
    }

    class Leaky:
        name, capabilities = "leaky", frozenset({Capability.GENERATE})

        def generate(self, prompts, max_new_tokens, num_beams=1, **_):
            return [[next((v for k, v in knows.items() if k in p), "no idea")] * num_beams for p in prompts]

    summ = run_probe(
        Leaky(),
        subjects,
        tmp_path / "r",
        ProbeSettings(targets=("email",), level="twin", templates=2, beams=1),
        controls={"u4", "u5"},
    )
    bs = summ["by_shape"]
    # the oracle: the written generations, one (subject, target) pair at a time
    gen = pd.read_parquet(tmp_path / "r" / "generations.parquet")
    for shape in ("ascii", "non_latin", "handle", "accented"):
        for group, users in (("members", {"u1", "u2", "u3"}), ("controls", {"u4", "u5"})):
            mine = [s["subject_id"] for s in subjects
                    if s["user_id"] in users and (s.get("name_shape") or name_shape(s["name"])) == shape]  # fmt: skip
            hits = sum(bool(gen[gen.subject_id == sid].exact_match.any()) for sid in mine)
            row = bs[shape][group]
            assert (row["pairs_generated"], row["exact_match_hits"]) == (len(mine), hits), (shape, group)
            if mine:
                assert row["exact_match_rate_ci"] == list(wilson_interval(hits, len(mine)))
    assert bs["non_latin"]["members"]["exact_match_hits"] == 1  # a hit on the second address counts
    assert (
        bs["non_latin"]["controls"]["exact_match_hits"] == 0
        and bs["handle"]["members"]["exact_match_hits"] == 0
    )
    assert bs["intervals"]["method"] == "wilson" and bs["intervals"]["n_units"] == 5
    assert set(bs) == {"ascii", "non_latin", "handle", "accented", "intervals"}
    assert "exact_match_fisher_p" in bs["ascii"]


# ------------------------------------------- every address of a person with several (issue 28)

_PEOPLE = [
    {"subject_id": "ann", "name": "Ann Lee", "email": "ann.lee@example.org",
     "emails": ["ann.lee@example.org", "alee@example.net"]},
    *({"subject_id": f"p{i}", "name": f"Bo Ray{i}", "email": f"bo{i}@example.org"} for i in range(5)),
]  # fmt: skip


def test_the_null_of_a_person_with_m_addresses_is_the_best_of_m_other_peoples():
    from lmleak.probe.probing import collect_probes, null_target_sets, null_targets

    probes = collect_probes(_PEOPLE, "email", level="twin", k=2)
    sets = null_target_sets(probes, seed=3)
    assert [n[0] for n in sets] == null_targets(probes, seed=3)  # the first null is the old one
    for p, nulls in zip(probes, sets, strict=True):
        assert len(nulls) == len(p.targets) and not set(nulls) & set(p.targets)
        assert len(set(nulls)) == len(nulls)  # distinct other people
    ann = [n for p, n in zip(probes, sets, strict=True) if p.subject_id == "ann"]
    assert len({n for n in ann}) == 1  # every template of a person gets the same nulls
    assert null_target_sets(probes, seed=3) == sets


def test_a_person_is_scored_on_every_address_and_counts_by_the_best():
    """The model learnt Ann's second address only: scoring the first (as before) would say nothing."""
    from lmleak.models.fake import FakeLM
    from lmleak.probe.probing import collect_probes, likelihood_rows, null_target_sets, run_probe

    texts = ["The email of Ann Lee is alee@example.net"] * 3 + [
        f"The email of Cy Doe{i} is cy{i}@example.org" for i in range(5)
    ]
    lm = FakeLM.from_texts(texts, order=8)
    probes = collect_probes(_PEOPLE, "email", level="twin", k=2)
    rows = likelihood_rows(lm, probes, seed=0)
    sets = null_target_sets(probes, seed=0)
    for p, nulls, row in zip(probes, sets, rows, strict=True):
        # the oracle: each address and each null alone, through the same scorer
        own = target_likelihoods(lm, [p.prompt] * len(p.targets), list(p.targets))[0]
        null = target_likelihoods(lm, [p.prompt] * len(nulls), list(nulls))[0]
        assert row["likelihood"] == pytest.approx(own.max()) and row["null_likelihood"] == pytest.approx(
            null.max()
        )
        assert row["targets_scored"] == len(p.targets) and row["best_target"] == p.targets[int(own.argmax())]
        assert (
            row["target"] == p.target and row["null_target"] == nulls[0]
        )  # the existing columns keep their meaning
    ann = [r for r in rows if r["subject_id"] == "ann"]
    first_only = target_likelihoods(lm, [p.prompt for p in probes if p.subject_id == "ann"],
                                    ["ann.lee@example.org"] * len(ann))[0]  # fmt: skip
    assert all(r["best_target"] == "alee@example.net" for r in ann)
    assert min(r["likelihood"] for r in ann) > 10 * max(first_only)  # what scoring the first address said
    summary = run_probe(
        lm, _PEOPLE, None, ProbeSettings(targets=("email",), level="twin", templates=2, beams=1)
    )
    entry = summary["targets"]["email"]
    assert entry["subjects_with_several_targets"] == 1
    assert entry["several_targets_note"].startswith(
        "1 person with several email values: each value is scored"
    )
