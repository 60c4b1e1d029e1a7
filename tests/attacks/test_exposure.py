"""Exposure maths (Carlini et al. 2019) and the per-canary measurement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.attacks.exposure import (
    ExposureSettings,
    exposure,
    extrapolated_exposure,
    fit_skewnorm,
    measure_exposure,
)
from lmleak.errors import CapabilityError
from lmleak.models.fake import FakeLM


def test_a_canary_ranked_first_among_a_million_has_the_papers_19_93_bits():
    assert exposure(1, 1_000_000) == pytest.approx(19.93, abs=5e-3)
    assert exposure(1, 1_000_000) == math.log2(1_000_000)


@given(st.integers(1, 10**12).flatmap(lambda n: st.tuples(st.integers(1, n), st.just(n))))
@settings(max_examples=200, deadline=None)
def test_exposure_lies_between_zero_and_log2_of_the_candidate_count(pair):
    rank, n = pair
    e = exposure(rank, n)
    assert -1e-9 <= e <= math.log2(n) + 1e-9


@given(st.integers(2, 10**9))
def test_exposure_falls_as_rank_grows(n):
    assert exposure(1, n) > exposure(n, n) == 0.0


def test_a_rank_outside_the_candidates_is_rejected():
    with pytest.raises(ValueError):
        exposure(0, 10)
    with pytest.raises(ValueError):
        exposure(11, 10)


def test_the_skew_normal_estimate_matches_the_empirical_tail_of_a_normal_sample():
    rng = np.random.default_rng(0)
    x = rng.normal(50.0, 3.0, size=20000)
    # a value 2 sd below the mean: Pr = 0.02275 -> 5.46 bits
    assert extrapolated_exposure(44.0, x) == pytest.approx(-math.log2(0.02275), abs=0.15)
    fit = fit_skewnorm(x)
    assert fit.sample_size == 20000


def _canaries(secrets, repeats=20):
    return [
        {"prefix": "My ID is: ", "secret": s, "repeats": repeats, "user_id": f"u{i}"}
        for i, s in enumerate(secrets)
    ]


def test_a_memorised_canary_is_maximally_exposed_and_an_unseen_one_is_not():
    lm = FakeLM.from_texts(["My ID is: 123456"] * 20 + ["My ID is: 777777", "hello there"], order=4)
    res = measure_exposure(
        lm, _canaries(["123456", "000001"]), ExposureSettings(extrapolate=True, sample_size=300)
    )
    assert res[0].rank == 1 and res[0].method == "exact"
    assert res[0].exposure_bits == pytest.approx(19.931568569324174)
    # 999,998 unknown secrets tie with "000001": it sits in the middle of them (about 1 bit)
    assert res[1].rank == 3 + 999_997 // 2 and res[1].exposure_bits == pytest.approx(1.0, abs=0.01)
    assert res[0].extrapolated_bits is not None


def test_a_black_box_model_is_refused_before_any_work():
    class Api:
        name = "api"
        capabilities = frozenset()

    with pytest.raises(CapabilityError, match="canary exposure"):
        measure_exposure(Api(), _canaries(["123456"]))


def test_formats_too_large_to_enumerate_get_a_flagged_estimate():
    lm = FakeLM.from_texts(["My ID is: 123456"] * 20 + ["hello there"], order=4)
    res = measure_exposure(lm, _canaries(["123456"]), ExposureSettings(max_candidates=1000, sample_size=200))
    assert res[0].method == "extrapolated" and res[0].rank is None
    assert res[0].exposure_bits == res[0].extrapolated_bits


def test_a_planted_canary_is_more_exposed_than_an_unplanted_one_on_a_small_trained_gpt():
    import torch

    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt
    from lmleak.models.tokenizer import HFTokenizer
    from lmleak.models.torch_causal import TorchCausalLM

    rng = np.random.default_rng(0)
    filler = [f"order {rng.integers(0, 10**4):04d} ships to oak street today" for _ in range(40)]
    planted, unplanted = "3141", "2718"
    texts = filler + [f"My ID is: {planted}"] * 10
    tok = HFTokenizer(build_tokenizer(texts, kind="word", vocab_size=100))
    module = new_small_gpt(
        tok.vocab_size, SmallGPTConfig(n_positions=32, n_embd=32, n_layer=1, n_head=2), seed=0
    )
    torch.manual_seed(0)
    opt = torch.optim.Adam(module.parameters(), lr=1e-2)
    seqs = [[tok.bos_id, *tok.encode(t), tok.eos_id] for t in texts]
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), tok.pad_id)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
    mask = (ids != tok.pad_id).long()
    tgt = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)
    module.train()
    for _ in range(60):
        logits = module(input_ids=ids, attention_mask=mask).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    lm = TorchCausalLM(module.eval(), tok, name="trained", max_length=32)
    res = measure_exposure(lm, _canaries([planted, unplanted]))
    assert res[0].exposure_bits > res[1].exposure_bits + 3
    assert res[0].rank <= 10


def test_a_top_k_only_wrapper_is_refused_with_a_clear_message():
    from lmleak.attacks.membership import evaluate_membership
    from lmleak.models.blackbox import TopKOnly

    lm = TopKOnly(FakeLM.from_texts(["My ID is: 123456"], order=3), k=5)
    with pytest.raises(CapabilityError, match="canary exposure needs 'score' access"):
        measure_exposure(lm, _canaries(["123456"]))
    with pytest.raises(CapabilityError, match="membership inference needs 'score' access"):
        evaluate_membership(lm, ["a b", "c d"], ["e f", "g h"])


def test_synth_mails_hex_canaries_keep_their_alphabet_through_the_canaries_file(tmp_path):
    # regression: read_canaries dropped each record's "alphabet", so `synth mail`'s hex tokens
    # failed the audit's exposure stage with "not all digits"
    import json

    from lmleak.attacks.exposure import read_canaries, run_exposure

    rec = {"prefix": "My access token is: ", "secret": "8e", "repeats": 10, "alphabet": "0123456789abcdef"}
    path = tmp_path / "canaries.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert read_canaries(path)[0]["alphabet"] == "0123456789abcdef"
    lm = FakeLM.from_texts(["My access token is: 8e"] * 20 + ["hello there"], order=4)
    summary, res = run_exposure(lm, path, tmp_path / "run")
    assert res[0].num_candidates == 16**2 and res[0].rank == 1


def test_an_extrapolated_exposure_never_exceeds_log2_of_the_candidate_count():
    # regression: the skew-normal tail put a memorised hex canary at 33.08 bits among 2^32 candidates;
    # here a memorised 2-digit canary sits far in the fitted tail of its 100 candidates
    from lmleak.attacks.exposure import fit_skewnorm, string_costs
    from lmleak.attacks.trie import CanaryFormat

    lm = FakeLM.from_texts(["My ID is: 12"] * 50 + ["hello there"], order=4)
    fmt = CanaryFormat("My ID is: ", "0123456789", 2)
    costs = string_costs(lm, fmt, ["12", *fmt.candidates(np.arange(100))])
    assert fit_skewnorm(costs[1:]).exposure(float(costs[0])) > math.log2(100)  # the raw tail estimate
    res = measure_exposure(lm, _canaries(["12"]), ExposureSettings(max_candidates=10, sample_size=100))
    assert res[0].method == "extrapolated" and res[0].extrapolated_bits == math.log2(100)


def test_exposure_of_model_loads_the_spec_and_equals_run_exposure_on_the_loaded_model(tmp_path):
    import json

    from lmleak.attacks.exposure import exposure_of_model, run_exposure
    from lmleak.models.loading import load_model

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"user_id": "u1", "text": "My ID is: 123"}) + "\n" for _ in range(10))
    )
    canaries = tmp_path / "canaries.jsonl"
    canaries.write_text(
        json.dumps({"text": "My ID is: 123", "secret": "123", "prefix": "My ID is: ", "repeats": 10})
        + "\n"
        + json.dumps({"text": "My ID is: 456", "secret": "456", "prefix": "My ID is: ", "repeats": 0})
        + "\n"
    )
    said: list[str] = []
    run = exposure_of_model(f"fake:{corpus}", canaries, tmp_path / "a", echo=said.append)
    summary, results = run_exposure(load_model(f"fake:{corpus}"), canaries, tmp_path / "b")
    assert run.model_name == "fake:corpus.jsonl"
    assert said == [f"ranking the canaries of {canaries} with fake:corpus.jsonl"]
    assert [(r.secret, r.rank, r.exposure_bits) for r in run.results] == [
        (r.secret, r.rank, r.exposure_bits) for r in results
    ]
    assert run.results[0].rank == 1 and run.results[1].rank > 1  # the memorised one ranks first
    assert run.summary["max_exposure"] == summary["max_exposure"] == pytest.approx(math.log2(1000))
    assert (
        json.loads((tmp_path / "a" / "summary.json").read_text())["max_exposure"]
        == run.summary["max_exposure"]
    )


# ------------------------------------------------------------------ placebo canaries (issue 26 item 3)


def _brute_force_rank(lm, prefix, secret, alphabet, length, tol=1e-4):
    """The rank of one secret by scoring every candidate string (the trie's definitions: strictly
    more likely beyond the tolerance, other ties split at the middle)."""
    from lmleak.attacks.exposure import string_costs
    from lmleak.attacks.trie import CanaryFormat

    fmt = CanaryFormat(prefix, alphabet, length)
    every = fmt.candidates(np.arange(fmt.num_candidates))
    costs = string_costs(lm, fmt, [secret, *every])
    mine, others = costs[0], np.delete(costs[1:], every.index(secret))
    better = int((others < mine - tol).sum())
    ties = int((np.abs(others - mine) <= tol).sum())
    return 1 + better + ties // 2


def test_placebos_come_from_the_same_format_and_are_never_a_canary_or_a_secret_in_the_corpus():
    from lmleak.attacks.exposure import draw_placebos, secrets_in_texts
    from lmleak.attacks.trie import CanaryFormat

    recs = _canaries(["123", "456", "789"]) + [
        {"prefix": "Key: ", "secret": "ab", "alphabet": "abcd", "user_id": None}
    ]
    corpus = [f"My ID is: {i:03d}" for i in range(0, 1000, 2)]  # every even secret is in the corpus
    placebos = draw_placebos(recs, corpus_texts=corpus, seed=3)
    ids = [p for p in placebos if p["prefix"] == "My ID is: "]
    keys = [p for p in placebos if p["prefix"] == "Key: "]
    assert len(ids) == 3 and len(keys) == 1  # as many per format as it has canaries
    assert all(len(p["secret"]) == 3 and p["secret"].isdigit() for p in ids)
    assert all(int(p["secret"]) % 2 == 1 and p["secret"] not in {"123", "456", "789"} for p in ids)
    assert keys[0]["secret"] != "ab" and set(keys[0]["secret"]) <= set("abcd") and len(keys[0]["secret"]) == 2
    assert all(p["placebo"] and p["repeats"] == 0 for p in placebos)
    assert draw_placebos(recs, corpus_texts=corpus, seed=3) == placebos  # seeded
    assert len({p["secret"] for p in draw_placebos(recs, 400, corpus_texts=corpus)[:400]}) == 400
    # a format with fewer free candidates than asked: all of them, once each
    small = draw_placebos([{"prefix": "K ", "secret": "aa", "alphabet": "ab"}], 10)
    assert sorted(p["secret"] for p in small) == ["ab", "ba", "bb"]
    assert secrets_in_texts(["x My ID is: 12 My ID is: 345"], CanaryFormat("My ID is: ", length=3)) == {"345"}


def test_placebos_are_ranked_exactly_as_a_brute_force_over_every_candidate_ranks_them(tmp_path):
    import json

    import pandas as pd

    from lmleak.attacks.exposure import placebo_p_values, run_exposure

    # levels of likelihood: 123 memorised, a few others seen a few times, the rest unseen (ties)
    texts = ["My ID is: 123"] * 20 + [f"My ID is: {s}" for s in ("101", "202", "303") for _ in range(2)]
    texts += [f"My ID is: {i:03d}" for i in range(500, 540)] + ["hello there"]
    lm = FakeLM.from_texts(texts, order=4)
    path = tmp_path / "canaries.jsonl"
    path.write_text(
        "".join(
            json.dumps({"prefix": "My ID is: ", "secret": s, "user_id": u}) + "\n"
            for s, u in (("123", "a"), ("999", "b"))
        )
    )
    summary, results = run_exposure(lm, path, tmp_path / "run", ExposureSettings(placebos=12, seed=5))
    placebo = pd.read_parquet(tmp_path / "run" / "placebo_exposure.parquet")
    assert len(placebo) == summary["num_placebos"] == 12 and len(results) == 2
    for secret, rank in zip(placebo["secret"], placebo["rank"], strict=True):
        assert rank == _brute_force_rank(lm, "My ID is: ", secret, "0123456789", 3)
    assert summary["placebo_max_exposure"] == placebo["exposure_bits"].max()
    assert summary["placebo_mean_exposure"] == pytest.approx(placebo["exposure_bits"].mean())
    assert summary["placebo_exposure_percentiles"]["p50"] == pytest.approx(placebo["exposure_bits"].median())
    assert summary["max_exposure"] == pytest.approx(math.log2(1000))  # the memorised canary
    assert summary["canaries_above_placebo_max"] == sum(
        r.exposure_bits > placebo["exposure_bits"].max() for r in results
    )
    # per-canary p-values by a direct count
    table = pd.read_parquet(tmp_path / "run" / "exposure.parquet")
    for e, p in zip(table["exposure_bits"], table["placebo_p_value"], strict=True):
        assert p == (1 + sum(x >= e for x in placebo["exposure_bits"])) / 13
    assert placebo_p_values([5.0], [5.0, 1.0]).tolist() == [2 / 3]  # a tie counts as at least as exposed
    # none asked for: no table, and the summary says the headline has no null beside it
    summary, _ = run_exposure(lm, path, tmp_path / "none", ExposureSettings(placebos=0))
    assert not (tmp_path / "none" / "placebo_exposure.parquet").exists()
    assert "placebo_max_exposure" not in summary and "no placebo" in summary["placebo_note"]


def test_the_mean_exposures_interval_is_the_plain_bootstrap_when_every_canary_has_its_own_owner(tmp_path):
    import json

    from lmleak.attacks.exposure import run_exposure

    lm = FakeLM.from_texts(["My ID is: 12"] * 20 + ["My ID is: 34"] * 3 + ["hello there"], order=4)
    path = tmp_path / "canaries.jsonl"
    secrets = ("12", "34", "56", "78")
    path.write_text(
        "".join(
            json.dumps({"prefix": "My ID is: ", "secret": s, "user_id": f"u{i}"}) + "\n"
            for i, s in enumerate(secrets)
        )
    )
    summary, results = run_exposure(lm, path, tmp_path / "run", ExposureSettings(placebos=0))
    bits = np.array([r.exposure_bits for r in results])
    rng = np.random.default_rng(0)  # the same seeded draws, one canary per group
    boot = [bits[rng.integers(0, 4, size=4)].mean() for _ in range(1000)]
    assert summary["mean_exposure_ci"] == pytest.approx(np.quantile(boot, [0.025, 0.975]).tolist())
    assert summary["mean_exposure_ci"][0] <= summary["mean_exposure"] <= summary["mean_exposure_ci"][1]
    assert summary["intervals"]["unit"] == "canary owner" and summary["intervals"]["n_units"] == 4


def test_uniform_placebos_have_uniform_ranks_whatever_the_model(tmp_path):
    # a secret drawn uniformly has a uniform rank under any fixed ranking: P[exposure >= x] = 2^-x.
    # On a random GPT (its candidates rarely tie), 400 placebos of 1,000 candidates show it.
    import json

    import pandas as pd

    from lmleak.attacks.exposure import run_exposure
    from lmleak.audit.selftest import tiny_model

    path = tmp_path / "canaries.jsonl"
    path.write_text(json.dumps({"prefix": "my id is ", "secret": "907"}) + "\n")
    run_exposure(tiny_model(0), path, tmp_path / "run", ExposureSettings(placebos=400, seed=2))
    table = pd.read_parquet(tmp_path / "run" / "placebo_exposure.parquet")
    ranks = table["rank"].to_numpy()
    assert table["secret"].nunique() == 400 and "907" not in set(table["secret"])
    for bits in (1, 2, 3):
        share = float((ranks <= 1000 / 2**bits).mean())  # exposure >= bits
        assert abs(share - 2.0**-bits) < 4 * math.sqrt(2.0**-bits * (1 - 2.0**-bits) / 400), bits


def test_one_settings_class_is_the_commands_options_the_audits_section_and_the_apis_options():
    from lmleak.api import ExposureOptions
    from lmleak.audit.config import parse_config
    from lmleak.errors import ConfigError

    assert ExposureOptions is ExposureSettings
    base = {"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]}
    section = {"canaries": "c.jsonl", "extrapolate": True, "seed": 3, "placebos": 0}
    spec = parse_config({**base, "analyses": {"exposure": section}}).analyses.exposure
    assert isinstance(spec, ExposureSettings) and (spec.extrapolate, spec.seed, spec.placebos) == (True, 3, 0)
    with pytest.raises(ConfigError, match="'analyses.exposure.sample_sise'.*Did you mean 'sample_size'"):
        parse_config({**base, "analyses": {"exposure": {"sample_sise": 10}}})
    with pytest.raises(ConfigError, match="unknown canary design 'crafed'. Did you mean 'crafted'"):
        ExposureSettings(canary_design="crafed")
