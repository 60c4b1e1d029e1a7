"""Membership-inference methods against slow per-example oracles, shared pass vs separate passes,
and the blind baseline on biased and unbiased splits."""

from __future__ import annotations

import json
import math
import zlib

import numpy as np
import pytest
import torch

from lmleak.attacks.blind import blind_baseline, blind_warning
from lmleak.attacks.membership import MembershipSettings, MembershipTexts, evaluate_membership, run_membership
from lmleak.attacks.mia_methods import (
    METHODS,
    TEXT_ONLY_METHODS,
    MethodOptions,
    make_neighbours,
    min_k_plus_plus,
    parse_methods,
    score_methods,
    teacher_forced_pass,
)
from lmleak.attacks.samia import SamiaSettings
from lmleak.errors import ConfigError
from lmleak.models.fake import FakeLM
from lmleak.models.torch_causal import TorchCausalLM

TEXTS = [
    "Hello, my name is Ada Smith and my phone is 555 0100.",
    "thank you very much for the call today",
    "My order number is 4412 and it is late again",
    "Please ship it to 12 Example Road before Friday",
    "ok",
]


@pytest.fixture(scope="module")
def gpt():
    """A tiny random GPT-2 with a word tokenizer; a short window so long inputs slide."""
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt
    from lmleak.models.tokenizer import HFTokenizer

    tok = build_tokenizer(TEXTS + [t.lower() for t in TEXTS], kind="word", vocab_size=300)
    module = new_small_gpt(len(tok), SmallGPTConfig(n_positions=64, n_embd=32, n_layer=1, n_head=2), seed=3)
    return TorchCausalLM(module, HFTokenizer(tok), name="tiny-gpt", max_length=64)


@pytest.fixture(scope="module")
def mlm():
    """An untrained tiny BERT with a word tokenizer: the neighbours' maths does not need a good MLM."""
    from transformers import BertConfig, BertForMaskedLM

    from lmleak.models.hf_masked import HFMaskedLM, build_mlm_tokenizer

    tok = build_mlm_tokenizer(TEXTS + ["road street friday monday phone order"])
    torch.manual_seed(0)
    module = BertForMaskedLM(
        BertConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
            pad_token_id=tok.pad_token_id,
        )
    )
    return HFMaskedLM(module, tok, name="tiny-bert")


def _slow_min_k_pp(model, text, k):
    """Min-K%++ by a direct loop over positions: full logits for each prefix, torch.softmax, the moments."""
    ids = model.tokenizer.encode(text)
    z = []
    for t in range(len(ids)):
        inp = torch.tensor([[model.tokenizer.bos_id, *ids[:t]]])
        with torch.no_grad():
            logits = model.module(input_ids=inp, attention_mask=torch.ones_like(inp)).logits[0, -1].double()
        p = torch.softmax(logits, -1)
        logp = torch.log(p)
        ok = p > 0
        mu = (p[ok] * logp[ok]).sum()
        sd = torch.sqrt((p[ok] * (logp[ok] - mu) ** 2).sum())
        z.append(float((logp[ids[t]] - mu) / sd))
    return _published_mean(z, k)


def _published_mean(values, k):
    """Shi et al.'s and Zhang et al.'s rule written out: sort, keep the first int(len * k), average;
    an empty slice is NaN (their np.mean of nothing)."""
    kept = sorted(values)[: int(len(values) * k)]
    return sum(kept) / len(kept) if kept else math.nan


def _slow_token_logprobs(model, text):
    """log p(x_t | BOS x_<t) one prefix at a time, from torch.log_softmax over the full logits."""
    ids = model.tokenizer.encode(text)
    out = []
    for t in range(len(ids)):
        inp = torch.tensor([[model.tokenizer.bos_id, *ids[:t]]])
        with torch.no_grad():
            logits = model.module(input_ids=inp, attention_mask=torch.ones_like(inp)).logits[0, -1].double()
        out.append(float(torch.log_softmax(logits, -1)[ids[t]]))
    return out


@pytest.mark.parametrize("k", [0.2, 0.5, 1.0])
def test_min_k_plus_plus_equals_a_loop_over_positions_with_softmax_on_the_full_logits(gpt, k):
    got = score_methods(gpt, TEXTS, MethodOptions(methods=("min_k_pp",)), min_k=k)["min_k_pp"]
    want = [_slow_min_k_pp(gpt, t, k) for t in TEXTS]
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("k", [0.2, 0.3, 0.5, 1.0])
def test_min_k_averages_the_int_k_n_lowest_token_log_probs_of_a_direct_per_token_computation(gpt, k):
    got = score_methods(gpt, TEXTS, MethodOptions(methods=("min_k",)), min_k=k)["min_k"]
    want = [_published_mean(_slow_token_logprobs(gpt, t), k) for t in TEXTS]
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
    # "ok" is one token: int(k * 1) = 0 below k = 1, so it gets no score (NaN), as published
    n_tokens = [len(gpt.tokenizer.encode(t)) for t in TEXTS]
    assert [bool(np.isnan(v)) for v in got] == [int(n * k) < 1 for n in n_tokens]


def test_int_k_n_and_ceil_k_n_rank_texts_differently():
    """Why the published rule matters: with ceil, a 7-token text at k = 0.2 averages its 2 lowest
    tokens, with int only its lowest; on random log-prob vectors the two orders differ."""
    from lmleak.attacks.mia_methods import lowest_k_mean

    rng = np.random.default_rng(0)
    texts = [rng.normal(-3.0, 2.0, size=int(n)) for n in rng.integers(5, 30, size=24)]
    published = np.array([lowest_k_mean(x, 0.2) for x in texts])
    ceil_rule = np.array([np.sort(x)[: math.ceil(0.2 * len(x))].mean() for x in texts])
    same_count = [int(0.2 * len(x)) == math.ceil(0.2 * len(x)) for x in texts]
    np.testing.assert_array_equal(published[same_count], ceil_rule[same_count])
    assert not np.array_equal(np.argsort(published), np.argsort(ceil_rule))


def test_the_shared_pass_gives_token_stats_log_probs_even_across_sliding_windows(gpt):
    short = TorchCausalLM(gpt.module, gpt.tokenizer, name="win", max_length=6, overlap=2)
    seqs = [short.tokenizer.encode(t) for t in TEXTS]
    fast = teacher_forced_pass(short, seqs, moments=True)
    for st, lp in zip(short.token_stats(seqs), fast.logprobs, strict=True):
        np.testing.assert_array_equal(st.logprobs, lp)
    # every position's moments come from the window that scores it: the same context, one prefix at a time
    from lmleak.models.windows import windows as _windows

    full = [short.tokenizer.bos_id, *seqs[0]]
    for start, end, first in _windows(len(full), 6, 2):
        for t in range(first, end):
            inp = torch.tensor([full[start:t]])
            with torch.no_grad():
                logp = torch.log_softmax(short.module(input_ids=inp).logits[0, -1].double(), -1)
            mu = float((logp.exp() * logp).sum())
            sd = float((logp.exp() * (logp - mu) ** 2).sum().sqrt())
            assert (fast.mu[0][t - 1], fast.sigma[0][t - 1]) == (
                pytest.approx(mu, rel=1e-4),
                pytest.approx(sd, rel=1e-4),
            )


def test_a_model_without_a_torch_module_gets_the_same_moments_from_next_logprobs():
    lm = FakeLM.from_texts(["a b c d", "a b d c", "d c b a"], order=3)

    class ScoreOnly:  # any SCORE backend: token_stats and next_logprobs only
        name, capabilities, tokenizer, max_length = "api", lm.capabilities, lm.tokenizer, lm.max_length
        token_stats, next_logprobs = lm.token_stats, lm.next_logprobs

    seqs = [lm.tokenizer.encode(t) for t in ["a b c d", "c b a a"]]
    fast, slow = (
        teacher_forced_pass(lm, seqs, moments=True),
        teacher_forced_pass(ScoreOnly(), seqs, moments=True),
    )
    for a, b in zip(fast.mu + fast.sigma, slow.mu + slow.sigma, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)  # FakeLM never predicts <pad>: p = 0 is masked


def test_perplexity_zlib_and_min_k_against_token_stats_and_zlib_compress(gpt):
    sc = score_methods(gpt, TEXTS, MethodOptions(methods=("perplexity", "zlib", "min_k")), min_k=0.3)
    for i, t in enumerate(TEXTS):
        lp = gpt.token_stats([gpt.tokenizer.encode(t)])[0].logprobs.astype(np.float64)
        log_ppl = -lp.mean()
        assert sc["perplexity"][i] == pytest.approx(-math.exp(log_ppl), rel=1e-6)
        assert sc["zlib"][i] == pytest.approx(-log_ppl / len(zlib.compress(t.encode("utf-8"))), rel=1e-6)
        want = _published_mean(list(lp), 0.3)
        assert sc["min_k"][i] == pytest.approx(want, rel=1e-6, nan_ok=True)


def test_recall_is_the_ratio_of_two_separate_score_calls(gpt):
    prefix = "thank you very much for the call today\n"
    sc = score_methods(gpt, TEXTS, MethodOptions(methods=("recall",), recall_prefix=prefix))
    cond = gpt.score_text([prefix] * len(TEXTS), TEXTS)
    uncond = gpt.score_text([""] * len(TEXTS), TEXTS)
    want = [c.logprob / u.logprob for c, u in zip(cond, uncond, strict=True)]
    np.testing.assert_allclose(sc["recall"], want, rtol=1e-5)


def test_lowercase_is_the_ratio_of_log_perplexities_before_and_after_lowercasing(gpt):
    sc = score_methods(gpt, TEXTS, MethodOptions(methods=("lowercase",)))
    for i, t in enumerate(TEXTS):
        a, b = gpt.score_text([""], [t])[0], gpt.score_text([""], [t.lower()])[0]
        assert sc["lowercase"][i] == pytest.approx(
            -(-a.logprob / a.num_tokens) / (-b.logprob / b.num_tokens), rel=1e-5
        )


def test_reference_calibration_divides_by_the_reference_models_per_word_log_perplexity(gpt):
    lm = FakeLM.from_texts(TEXTS, order=2)
    sc = score_methods(gpt, TEXTS, MethodOptions(methods=("reference",), reference=lm))
    for i, t in enumerate(TEXTS):
        a, r = gpt.score_text([""], [t])[0], lm.score_text([""], [t])[0]
        assert sc["reference"][i] == pytest.approx(
            -(-a.logprob / a.num_words) / (-r.logprob / r.num_words), rel=1e-5
        )


def test_neighbours_change_one_word_and_the_score_is_the_likelihood_gap_to_them(gpt, mlm):
    nbrs = make_neighbours(TEXTS, mlm, 4, seed=1)
    for t, nb in zip(TEXTS, nbrs, strict=True):
        assert len(nb) == 4
        for x in nb:
            diff = [a for a, b in zip(t.split(), x.split(), strict=True) if a != b]
            assert len(diff) == 1
    sc = score_methods(
        gpt, TEXTS, MethodOptions(methods=("neighbourhood",), mlm=mlm, num_neighbours=4, seed=1)
    )
    for i, t in enumerate(TEXTS):
        own = gpt.score_text([""], [t])[0]
        other = [s.logprob / s.num_tokens for s in gpt.score_text([""] * 4, nbrs[i])]
        assert sc["neighbourhood"][i] == pytest.approx(
            own.logprob / own.num_tokens - np.mean(other), rel=1e-5, abs=1e-6
        )


def test_all_methods_from_the_shared_pass_equal_each_method_scored_on_its_own(gpt, mlm):
    opts = MethodOptions(
        methods=tuple(METHODS),
        reference=FakeLM.from_texts(TEXTS),
        mlm=mlm,
        recall_prefix="ok ok\n",
        num_neighbours=3,
        samia=SamiaSettings(samples=2, max_new_tokens=3),  # beside the passes: the same seeded samples
        population=("thank you for the call", "ok ok"),
    )
    shared = score_methods(gpt, TEXTS, opts, min_k=0.4)
    separate = score_methods(gpt, TEXTS, opts, min_k=0.4, shared=False)
    for m in METHODS:
        np.testing.assert_allclose(shared[m], separate[m], rtol=1e-5, atol=1e-7, err_msg=m)


def test_a_text_too_long_to_pack_is_scored_whole_and_the_others_still_pack(gpt, mlm, monkeypatch):
    import lmleak.attacks.mia_methods as mm

    long = " ".join(["Please ship it to 12 Example Road before Friday"] * 12)  # past the 64-token window
    texts = [*TEXTS[:3], long, TEXTS[3]]
    packed: list[int] = []
    real = mm.packed_pass

    def counting(model, seqs, nbrs, **kw):
        packed.append(len(seqs))
        return real(model, seqs, nbrs, **kw)

    monkeypatch.setattr(mm, "packed_pass", counting)
    methods = ["perplexity", "min_k_pp", "neighbourhood"]
    opts = MethodOptions(methods=tuple(methods), mlm=mlm, num_neighbours=3, seed=2)
    shared = score_methods(gpt, texts, opts)
    assert packed == [4]  # the four short texts packed together; the long one was not
    separate = score_methods(gpt, texts, opts, shared=False)
    for m in methods:
        np.testing.assert_allclose(shared[m], separate[m], rtol=1e-5, atol=1e-7, err_msg=m)


def test_min_k_plus_plus_pure_function_handles_point_masses():
    assert min_k_plus_plus(np.array([0.0, -1.0]), np.array([0.0, -2.0]), np.array([0.0, 1.0]), 1.0) == 0.5


def test_method_names_are_checked_with_a_suggestion_and_their_resources_required():
    with pytest.raises(ConfigError, match="min_k_pp"):
        parse_methods(["min_k_p"])
    with pytest.raises(ConfigError, match="reference model"):
        parse_methods(["reference"])
    with pytest.raises(ConfigError, match="masked LM"):
        parse_methods(["neighbourhood"])
    assert parse_methods(["all"], reference=True) == tuple(
        m for m in METHODS if m != "neighbourhood" and m not in TEXT_ONLY_METHODS
    )
    assert parse_methods(["zlib,min_k_pp", "zlib"]) == ("zlib", "min_k_pp")


# ----------------------------------------------------------------------------------- blind baseline
def _notes(rng, n, year=None):
    names = ["oak", "elm", "pine", "ash", "fir", "yew"]
    words = ["order", "call", "parcel", "refund", "invoice", "visit"]
    return [
        f"{rng.choice(words)} about {rng.choice(names)} street number {rng.integers(10, 99)} on "
        f"{rng.integers(1, 28)}/{rng.integers(1, 12)}/{year or rng.integers(2015, 2025)}"
        for _ in range(n)
    ]


def test_the_blind_baseline_catches_a_marker_word_and_a_date_shift():
    rng = np.random.default_rng(0)
    base = _notes(rng, 120)
    marked = [t + " regards" for t in base[:60]] + base[60:]
    y = [1] * 60 + [0] * 60
    assert blind_baseline(marked, y).auc > 0.95
    dated = _notes(rng, 60, year=2019) + _notes(rng, 60, year=2023)
    assert blind_baseline(dated, y).auc > 0.95


def test_the_blind_baseline_is_near_chance_on_an_unbiased_split():
    # with 300 per side the cross-validated AUC's spread under the null is about 0.03
    texts = _notes(np.random.default_rng(1), 600)
    res = blind_baseline(texts, [1] * 300 + [0] * 300)
    assert abs(res.auc - 0.5) < 0.1 and res.folds == 5


def test_a_biased_split_fires_the_warning_in_the_summary(tmp_path):
    rng = np.random.default_rng(2)
    members = [t + " regards" for t in _notes(rng, 40)]
    non_members = _notes(rng, 40)
    lm = FakeLM.from_texts(members, order=3)  # it memorised the members: the attacks win, and so does blind
    s = run_membership(
        lm,
        MembershipTexts(members, non_members),
        tmp_path / "run",
        MembershipSettings(group_size=0),
        options=MethodOptions(methods=("perplexity", "min_k_pp", "recall")),
    )
    assert s["blind_baseline_auc"] > 0.95 and "blind baseline" in s["blind_baseline_warning"]
    assert set(s["mia_auc_by_attack"]) == {"perplexity", "min_k_pp", "recall"}
    assert s["mia_method_scenarios"]["blind"]["access"] == "none"
    assert "next_logprobs" in s["mia_method_scenarios"]["min_k_pp"]["needs"]
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["blind_baseline_warning"] == s["blind_baseline_warning"]


def test_an_unbiased_split_keeps_the_warning_off_when_the_model_memorised():
    texts = _notes(np.random.default_rng(3), 300)
    members, non_members = texts[:150], texts[150:]
    lm = FakeLM.from_texts(members * 2, order=4)
    res = evaluate_membership(
        lm,
        members,
        non_members,
        MembershipSettings(group_size=0),
        options=MethodOptions(methods=("min_k_pp",)),
    )
    auc = float(res.metrics.set_index("feature").loc["min_k_pp", "auc"])
    assert auc > 0.9 and abs(res.blind.auc - 0.5) < 0.15
    assert blind_warning(res.blind.auc, {"min_k_pp": auc}) is None


def test_recall_takes_its_prefix_from_non_members_that_it_then_leaves_out():
    texts = _notes(np.random.default_rng(4), 40)
    lm = FakeLM.from_texts(texts[:20], order=3)
    res = evaluate_membership(
        lm,
        texts[:20],
        texts[20:],
        MembershipSettings(group_size=0, blind=False),
        options=MethodOptions(methods=("recall",), recall_shots=3),
    )
    assert res.num_per_side == 17 and res.blind is None
    assert not set(res.scores["text"][res.scores["member"] == 0]) & set(texts[:20])


# ----------------------------------------------------------------------------------- the CLI
def test_lmleak_mia_takes_methods_and_warns_when_the_blind_baseline_matches(tmp_path):
    from typer.testing import CliRunner

    from lmleak.cli.main import app

    corpus = tmp_path / "corpus.jsonl"
    members = [f"my address is {100 + i} oak street" for i in range(30)]
    corpus.write_text(
        "".join(
            json.dumps({"user_id": "u", "doc_id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(members)
        )
    )
    (tmp_path / "m.txt").write_text("\n".join(members) + "\n")
    (tmp_path / "n.txt").write_text("".join(f"my address is {500 + i} elm street\n" for i in range(30)))
    args = [
        "mia",
        "--model",
        f"fake:{corpus}",
        "--members",
        str(tmp_path / "m.txt"),
        "--non-members",
        str(tmp_path / "n.txt"),
        "--group-size",
        "0",
        "--out",
        str(tmp_path / "run"),
    ]
    r = CliRunner().invoke(app, [*args, "--methods", "min_k_pp", "recall", "perplexity"])
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (
        s["mia_methods"] == ["min_k_pp", "recall", "perplexity"] and s["num_per_side"] == 27
    )  # 3 went to ReCaLL
    # oak vs elm: the split is biased, a text-only classifier sees it
    assert s["blind_baseline_auc"] > 0.95 and "warning" in r.output and "blind baseline" in r.output
    bad = CliRunner().invoke(app, [*args, "--methods", "min_k_plus"])
    assert bad.exit_code == 2 and "min_k_pp" in bad.output


# ----------------------------------------------------------------------------------- the audit
def test_the_audit_config_takes_membership_methods_and_reports_them_with_the_blind_baseline(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from lmleak.audit.config import parse_config
    from lmleak.cli.main import app

    rng = np.random.default_rng(5)
    members = [t + " regards" for t in _notes(rng, 30)]  # a marker word only members carry
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"user_id": f"u{i % 3}", "doc_id": f"d{i}", "text": t}) + "\n"
            for i, t in enumerate(members)
        )
    )
    (tmp_path / "m.txt").write_text("\n".join(members) + "\n")
    (tmp_path / "n.txt").write_text("\n".join(_notes(rng, 30)) + "\n")
    cfg = {
        "out": "run",
        "corpus": {"path": "corpus.jsonl"},
        "models": [{"name": "fake", "path": f"fake:{corpus}"}],
        "analyses": {
            "mia": {"members": "m.txt", "non_members": "n.txt", "group_size": 0},
            "membership": {"methods": ["perplexity", "min_k_pp", "lowercase"]},
        },
    }
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(cfg))
    r = CliRunner().invoke(app, ["audit", str(tmp_path / "audit.yaml")])
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "run" / "summary.json").read_text())["models"]["fake"]
    assert set(m["membership"]["mia_auc_by_attack"]) == {"perplexity", "min_k_pp", "lowercase"}
    # the honest headline reaches the audit's headline with its interval, its placebo and the blind baseline
    h = m["headline"]
    assert h["headline_selection"] == "split-half" and h["mia_method"] in m["membership"]["mia_auc_by_attack"]
    for key in ("mia_auc", "placebo_auc", "blind_auc"):
        lo, hi = h[f"{key}_ci"]
        assert lo <= h[key] <= hi
    assert h["mia_best_raw_auc"] == max(m["membership"]["mia_auc_by_attack"].values())
    assert m["membership"]["blind_baseline_auc"] > 0.95 and m["membership"]["blind_baseline_warning"]
    page = (tmp_path / "run" / "report.html").read_text()
    assert "Membership attacks beside the blind baseline" in page and "Warning:" in page
    base = {"corpus": {"path": "c"}, "models": [{"name": "m", "path": "m"}]}
    with pytest.raises(ConfigError, match="analyses.membership.methods.*min_k_pp"):
        parse_config({**base, "analyses": {"membership": {"methods": ["min_k_p"]}}})
    with pytest.raises(ConfigError, match="reference model"):
        parse_config({**base, "analyses": {"membership": {"methods": ["reference"]}}})


def test_the_cached_prefix_pass_equals_scoring_prefix_and_text_whole(gpt):
    from lmleak.attacks.mia_methods import conditional_logprobs

    prefix = gpt.tokenizer.encode("thank you very much for the call today")
    seqs = [gpt.tokenizer.encode(t) for t in TEXTS]
    fast = conditional_logprobs(gpt, prefix, seqs)  # a transformers module within one window: cached prefix
    whole = teacher_forced_pass(gpt, [[*prefix, *s] for s in seqs]).logprobs
    for f, w, s in zip(fast, whole, seqs, strict=True):
        assert len(f) == len(s)
        np.testing.assert_allclose(f, w[len(prefix) :], rtol=1e-5, atol=1e-5)


def test_on_a_user_split_the_blind_baseline_keeps_each_user_in_one_fold():
    """Users assigned at random: no distribution shift. Folds that split a user's texts let the
    classifier learn that user's name and label from their other texts (AUC well above 0.5)."""
    from faker import Faker

    rng, fake = np.random.default_rng(0), Faker()
    Faker.seed(0)
    words = "order parcel refund invoice ticket package letter account device voucher street".split()
    texts, labels, groups = [], [], []
    for u in range(100):
        name = fake.name()
        for _ in range(3):
            texts.append(f"Hello, {name} here about my {' '.join(rng.choice(words, 6))}")
            labels.append(int(u < 50))
            groups.append(name)
    ungrouped = blind_baseline(texts, labels, groups=range(len(texts)), n_boot=200)
    assert ungrouped.auc > 0.6 and ungrouped.auc_ci[0] > 0.5  # the folds leak each user's label
    by_user = blind_baseline(texts, labels, groups=groups, n_boot=200)
    assert abs(by_user.auc - 0.5) < 0.12 and by_user.auc_ci[0] < 0.5 < by_user.auc_ci[1]
    # without users the texts are clustered by the names they share: the same groups, the same AUC
    clustered = blind_baseline(texts, labels, n_boot=200)
    # the regex finds every name, "Hello, Mr. Ryan Sanchez" included since the name patterns of
    # issue 28: one group per user (100), and no cluster ever joins two users
    assert clustered.grouping == "clusters" and clustered.num_groups == 100
    assert all(
        len({groups[i] for i, k in enumerate(clustered.groups) if k == c}) == 1 for c in set(clustered.groups)
    )
    assert clustered.auc == pytest.approx(by_user.auc, abs=0.05)
