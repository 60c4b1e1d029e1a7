"""The CRT experiment driver: its maths, its evaluation sets, its figures, and (slow) a quick run."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lmleak.attacks.mia_settings import MembershipSettings
from lmleak.data.corpus import Corpus, Document
from lmleak.errors import ConfigError
from lmleak.experiments.crt import CRTExperimentConfig, bayes_epsilon, mia_sets, plan, plot_figures


def test_crt_amplifies_confidentiality_as_proposition_6_says():
    # paper 002 §5.4: with eps' = 1.0 and gamma = 0.1 the epsilon drops to about 0.2 (0.159 exactly)
    assert bayes_epsilon("crt", 0.1, 1.0) == pytest.approx(math.log(1 + 0.1 * (math.e - 1)))
    assert bayes_epsilon("crt", 0.0, 5.0) == 0.0
    assert bayes_epsilon("crt", 1.0, 2.0) == pytest.approx(2.0)
    for g in np.linspace(0, 1, 11):
        assert bayes_epsilon("crt", g, 3.0) <= 3.0 + 1e-12


def test_methods_without_noise_on_missed_secrets_have_infinite_epsilon():
    assert bayes_epsilon("nodp", 0.0, None) == math.inf
    assert bayes_epsilon("redact", 0.2, None) == math.inf
    assert bayes_epsilon("sdp", 0.2, 1.0) == math.inf
    assert bayes_epsilon("sdp", 0.0, 1.0) == 1.0
    assert bayes_epsilon("dp", 0.3, 2.5) == 2.5


def test_the_plan_trains_gamma_free_baselines_once_and_selective_dp_only_for_the_lstm():
    p = plan(CRTExperimentConfig(gammas=(0.0, 0.1, 0.5), archs=("lstm", "gpt")))
    assert sum(1 for a, m, g in p if m == "nodp") == 2
    assert all(a == "lstm" for a, m, g in p if m == "sdp")
    assert sum(1 for a, m, g in p if a == "gpt" and m == "crt") == 3
    assert [g for a, m, g in p if m == "sdp"] == [0.0]
    assert len(p) == 2 * 2 + 2 * 3 * 2 + 1


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError):
        CRTExperimentConfig().with_options(archs=("rnn",))
    with pytest.raises(ConfigError):
        CRTExperimentConfig().with_options(gammas=(1.5,))
    # regression: `experiment crt --quick --users 8` failed in the synthesis with "lower --canaries",
    # an option this command does not have
    with pytest.raises(ConfigError, match="give --users 10 or more"):
        CRTExperimentConfig.quick().with_options(users=8)
    assert CRTExperimentConfig.quick().with_options(users=10).users == 10


def test_mia_sets_take_member_sentences_from_training_and_drop_holdout_values_seen_in_training():
    train = Corpus(
        [
            Document("u1", "d1", "hi\nship to 12 Oak St please\nbye"),
            Document("u2", "d2", "send it to 99 Elm Rd\nthanks"),
        ]
    )
    hold = Corpus(
        [
            Document("v1", "h1", "ship to 7 Ash Ave please"),
            Document("v2", "h2", "ship to 12 Oak St please"),
        ]
    )
    secrets = [
        {"doc_id": "d1", "start": 11, "end": 20, "entity": "ADDRESS", "value": "12 Oak St"},
        {"doc_id": "d2", "start": 11, "end": 20, "entity": "ADDRESS", "value": "99 Elm Rd"},
        {"doc_id": "d2", "start": 0, "end": 4, "entity": "PERSON", "value": "send"},
    ]
    held = [
        {"doc_id": "h1", "start": 8, "end": 16, "entity": "ADDRESS", "value": "7 Ash Ave"},
        {"doc_id": "h2", "start": 8, "end": 17, "entity": "ADDRESS", "value": "12 Oak St"},
    ]
    members, non = mia_sets(train, secrets, hold, held, "ADDRESS")
    assert members == ["ship to 12 Oak St please", "send it to 99 Elm Rd"]
    assert non == ["ship to 7 Ash Ave please"]


def test_the_figures_are_written_for_a_table(tmp_path):
    rows = []
    for arch in ("lstm", "gpt"):
        rows.append(
            dict(
                arch=arch,
                method="nodp",
                gamma=math.nan,
                ppl=5.0,
                bayes_epsilon=math.inf,
                max_exposure=19.9,
                mia_accuracy=0.8,
                group_mia_accuracy=1.0,
            )
        )
        for g in (0.0, 0.5):
            rows.append(
                dict(
                    arch=arch,
                    method="crt",
                    gamma=g,
                    ppl=6.0,
                    bayes_epsilon=bayes_epsilon("crt", g, 3.0),
                    max_exposure=0.5,
                    mia_accuracy=0.5,
                    group_mia_accuracy=0.55,
                )
            )
    figs = plot_figures(pd.DataFrame(rows), tmp_path, CRTExperimentConfig(gammas=(0.0, 0.5)))
    assert [f.name for f in figs] == [
        "fig2_ppl_vs_epsilon.png",
        "fig3_exposure_vs_gamma.png",
        "fig4_mia_vs_gamma.png",
        "fig5_group_mia_vs_gamma.png",
        "fig6_amplification.png",
    ]
    assert all(f.stat().st_size > 1000 for f in figs)


@pytest.mark.slow
def test_the_quick_experiment_runs_end_to_end_and_crt_exposes_canaries_less_than_no_dp(tmp_path):
    pytest.importorskip("lmleak.train.trainer")
    pytest.importorskip("lmleak.train.split")
    pytest.importorskip("lmleak.pii.policies")
    pytest.importorskip("lmleak.data.synth.customersim")
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    run = tmp_path / "crt"
    r = CliRunner().invoke(
        app, ["experiment", "crt", "--quick", "--out", str(run), "--archs", "gpt", "--quiet"]
    )
    assert r.exit_code == 0, r.output
    table = pd.read_parquet(run / "crt_table.parquet")
    assert {"nodp", "redact", "dp", "crt"} <= set(table["method"])
    nodp = table[table["method"] == "nodp"]["max_exposure"].max()
    crt = table[table["method"] == "crt"]["max_exposure"].max()
    assert nodp > crt
    assert all((run / f).exists() for f in ("crt_table.csv", "fig3_exposure_vs_gamma.png", "summary.json"))


def test_evaluate_model_reports_the_highest_exposure_and_mia_accuracy_of_a_saved_model(tmp_path):
    import torch

    from lmleak.experiments.crt import evaluate_model
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    canaries = [{"prefix": "My ID is: ", "secret": s} for s in ("4242", "1717")]
    members = [f"ship to {n} oak street" for n in range(100, 140)]
    non_members = [f"ship to {n} oak street" for n in range(500, 540)]
    texts = ["My ID is: 4242"] * 10 + members * 3
    tok = build_tokenizer(texts + non_members, kind="word", vocab_size=200)
    module = new_small_gpt(len(tok), SmallGPTConfig(n_positions=32, n_embd=32, n_layer=1, n_head=2), seed=0)
    torch.manual_seed(0)
    opt = torch.optim.Adam(module.parameters(), lr=1e-2)
    seqs = [[tok.bos_token_id, *tok.encode(t, add_special_tokens=False), tok.eos_token_id] for t in texts]
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), tok.pad_token_id)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
    mask = (ids != tok.pad_token_id).long()
    tgt = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
    module.train()
    for _ in range(80):
        logits = module(input_ids=ids, attention_mask=mask).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    save_small_model(module.eval(), tok, tmp_path / "m")
    cfg = CRTExperimentConfig(mia=MembershipSettings(num_per_side=40, group_size=5, num_groups=50))
    ev = evaluate_model(tmp_path / "m", {"canaries": canaries}, members, non_members, cfg)
    assert ev["max_exposure_rank"] <= 3 and ev["max_exposure"] > 11.0  # 4242 is memorised among 10^4
    assert ev["mia_accuracy"] > 0.6 and ev["group_mia_accuracy"] >= ev["mia_accuracy"]
    assert ev["mia_per_side"] == 40
    assert ev["bos_token_id"] == tok.bos_token_id  # the start token its scores follow (issue 25)


def test_ppl_ordering_says_whether_crt_sits_between_no_dp_and_dp_sgd_and_why_not():
    import pandas as pd

    from lmleak.experiments.crt import ppl_ordering

    nan = float("nan")
    rows = [
        {"arch": "gpt", "method": "nodp", "gamma": nan, "ppl": 50.0, "ppl_redacted": 20.0},
        {"arch": "gpt", "method": "redact", "gamma": 0.0, "ppl": 360.0, "ppl_redacted": 25.0},
        {"arch": "gpt", "method": "dp", "gamma": nan, "ppl": 340.0, "ppl_redacted": 90.0},
        {
            "arch": "gpt",
            "method": "crt",
            "gamma": 0.0,
            "ppl": 440.0,
            "ppl_redacted": 60.0,
            "public_sentence_share": 0.023,
            "public_word_share": 0.041,
        },
        {
            "arch": "gpt",
            "method": "crt",
            "gamma": 0.5,
            "ppl": 300.0,
            "ppl_redacted": 50.0,
            "public_sentence_share": 0.05,
            "public_word_share": 0.07,
        },
    ]
    rec = ppl_ordering(pd.DataFrame(rows))["gpt"]
    # CRT at its smallest gamma (0.0), not the lower-perplexity gamma = 0.5 row
    assert (rec["nodp"], rec["crt"], rec["dp"]) == (50.0, 440.0, 340.0) and rec["holds"] is False
    assert rec["holds_redacted"] is True  # 20 <= 60 <= 90 on the text around the secrets
    assert "7.2x" in rec["reason"] and "2.3% of the sentences" in rec["reason"]


def test_measured_gamma_is_the_share_of_secret_spans_the_policy_misses():
    from lmleak.data.corpus import Corpus, Document
    from lmleak.experiments.crt import measured_gamma
    from lmleak.pii.policies import get_policy

    text = "Call 555-0142 or mail ann@example.org. Ann's sister is Bo."
    secrets = [
        {"doc_id": "d", "user_id": "u", "start": 5, "end": 13, "entity": "PHONE", "value": "555-0142"},
        {
            "doc_id": "d",
            "user_id": "u",
            "start": 22,
            "end": 37,
            "entity": "EMAIL",
            "value": "ann@example.org",
        },
        {"doc_id": "d", "user_id": "u", "start": 39, "end": 42, "entity": "PERSON", "value": "Ann"},
        {"doc_id": "d", "user_id": "u", "start": 55, "end": 57, "entity": "PERSON", "value": "Bo"},
    ]
    assert all(text[s["start"] : s["end"]] == s["value"] for s in secrets)
    corpus = Corpus([Document("u", "d", text)])
    found = {text[s.start : s.end] for s in get_policy("regex").detect(text)}
    missed = sum(s["value"] not in found for s in secrets)  # the slow way: which values were found
    assert measured_gamma(corpus, secrets, get_policy("regex")) == missed / len(secrets)
