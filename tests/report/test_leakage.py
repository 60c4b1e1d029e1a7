"""lmleak.report.leakage: run_report's files and summary, the redacted run's refusals, unique_owners."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.errors import ConfigError
from lmleak.models.fake import FakeLM
from lmleak.report.leakage import ReportConfig, run_report, unique_owners

TEXTS = {
    "u1": ["my secret code is alpha bravo charlie", "the weather is fine today in the city"],
    "u2": ["call me on the phone at five five five", "the weather is fine today in the city"],
    "u3": ["a note about the meeting on monday", "nobody else wrote this sentence here"],
}


@pytest.fixture(scope="module")
def corpus():
    return Corpus([Document(u, f"{u}-{i}", t) for u, ts in TEXTS.items() for i, t in enumerate(ts)])


@pytest.fixture(scope="module")
def model(corpus):
    return FakeLM.from_texts([d.text for d in corpus], order=3)  # memorises every document


def test_unique_owners_are_the_users_of_sequences_with_one_user_in_d():
    seqs = pd.DataFrame({"users_in_d": [1, 2, 1], "user_ids": [["u2"], ["u1", "u3"], ["u1", "u2"]]})
    assert unique_owners(seqs) == ["u1", "u2"]
    assert unique_owners(seqs.iloc[[1]]) == []


def test_the_summary_is_the_first_k_of_by_k_and_is_what_the_run_holds(corpus, model, tmp_path):
    s = run_report(model, corpus, tmp_path / "run", ReportConfig(k=(2, 1), pii_policy=None))
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved.pop("schema_version") and saved.pop("lmleak_version")
    assert json.loads(json.dumps(s)) == saved  # the returned summary is the file
    assert list(saved)[:3] == ["stage", "k", "ks"] and saved["k"] == 2 and saved["ks"] == [2, 1]
    head = s["by_k"]["2"]
    for key in ("num_sequences", "unique_sequences", "curated_unique_sequences", "p_filtered_sequences"):
        assert s[key] == head[key], key
    assert s["unique_sequences"] > 0 and s["by_k"]["1"]["num_sequences"] > 0
    assert s["num_documents"] == len(corpus) and s["num_users"] == 3 and s["redacted"] is False
    assert s["public_model"] is None and "redaction" not in s
    occ = pd.read_parquet(tmp_path / "run" / "occurrences.parquet")
    seqs = pd.read_parquet(tmp_path / "run" / "sequences.parquet")
    assert "doc" not in occ.columns and "text" in seqs.columns
    assert set(seqs["k"]) == {1, 2} and len(seqs[seqs["k"] == 2]) == head["num_sequences"]


def test_a_redacted_report_refuses_a_run_holding_an_unredacted_one_and_an_index_inside(
    corpus, model, tmp_path
):
    run = tmp_path / "run"
    run_report(model, corpus, run, ReportConfig(pii_policy=None))
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(ConfigError, match="already holds an unredacted report"):
        run_report(model, corpus, run, ReportConfig(redact=True, pii_policy=None))
    assert sorted(p.name for p in run.iterdir()) == before  # nothing written or removed
    fresh = tmp_path / "fresh"
    with pytest.raises(ConfigError, match="cannot keep the corpus index"):
        run_report(model, corpus, fresh, ReportConfig(redact=True, index_cache=str(fresh / "idx")))
    assert not fresh.exists()  # refused before the run directory is created


def test_a_redacted_report_writes_no_text_and_records_its_key_source(corpus, model, tmp_path, monkeypatch):
    monkeypatch.setenv("LMLEAK_REDACT_KEY", "k" * 32)
    s = run_report(model, corpus, tmp_path / "run", ReportConfig(redact=True, pii_policy=None))
    assert s["redacted"] is True and s["ledger"]["kept"] is False and "redaction" in s
    seqs = pd.read_parquet(tmp_path / "run" / "sequences.parquet")
    assert not {"text", "contexts", "user_ids"} & set(seqs.columns)
    assert not (tmp_path / "run" / "ledger").exists()


# ---------------------------------------------------------------- intervals of leak counts (issue 26 item 4)


def test_the_leak_counts_get_a_bootstrap_interval_over_the_users_of_the_corpus(corpus, model, tmp_path):
    import numpy as np

    from lmleak.intervals import bootstrap_sum_interval, count_interval

    s = run_report(model, corpus, tmp_path / "run", ReportConfig(k=(1,), pii_policy="regex"))
    seqs = pd.read_parquet(tmp_path / "run" / "sequences.parquet")
    unique = seqs[seqs["users_in_d"] == 1]
    # the unique sequences per user, counted from the written table (u1, u2, u3 in order)
    per_user = [sum(1 for us in unique["user_ids"] if list(us) == [u]) for u in ("u1", "u2", "u3")]
    assert sum(per_user) == s["unique_sequences"] > 0
    # 3 users, every one of them a leaker at most: the bootstrap joined with leakers x leaks per leaker
    assert s["unique_sequences_ci"] == list(count_interval(per_user, n_boot=1000)[0])
    boot_ci = bootstrap_sum_interval(per_user, n_boot=1000)
    assert s["unique_sequences_ci"][0] <= boot_ci[0] and s["unique_sequences_ci"][1] >= boot_ci[1]
    assert s["unique_sequences_ci"][0] <= s["unique_sequences"] <= s["unique_sequences_ci"][1]
    assert s["by_k"]["1"]["unique_sequences_ci"] == s["unique_sequences_ci"]
    assert s["curated_unique_sequences_ci"] is None  # no public model: no curated count, no interval
    assert s["pii_unique_sequences_total_ci"] is not None
    assert s["intervals"]["unit"] == "user" and s["intervals"]["n_units"] == 3
    assert s["intervals"]["at_boundary"] == s["by_k"]["1"]["intervals_at_boundary"]  # the headline k's
    rng = np.random.default_rng(0)  # and the sum bootstrap itself, one draw per user, by hand
    boot = [np.array(per_user)[rng.integers(0, 3, size=3)].sum() for _ in range(1000)]
    assert list(boot_ci) == pytest.approx(np.quantile(boot, [0.025, 0.975]).tolist())


def test_count_intervals_sum_each_users_own_leaks_and_count_users_without_any():
    from lmleak.intervals import count_interval
    from lmleak.report.leakage import count_intervals

    rows = pd.DataFrame(
        {
            "users_in_d": [1, 1, 1, 1, 2],
            "user_ids": [["a"], ["a"], ["a"], ["b"], ["a", "b"]],
            "perplexity_ratio": [3.0, 0.2, float("nan"), 5.0, 9.0],
            "pii_types": [["EMAIL"], ["PHONE"], [], ["EMAIL"], ["EMAIL"]],
            "length_tokens": [9, 2, 9, 9, 9],
        }
    )
    m = {"unique_sequences": 4, "curated_unique_sequences": 2, "pii_unique_sequences_total": 2}
    users = ["a", "b", "c", "d", "a"]  # one entry per document: a wrote two
    out = count_intervals(rows, m, users, t=1.0, min_tokens=5)
    # a: 3 unique, 1 curated (3.0), 1 PII (the PHONE one is short); b: 1, 1, 1; c, d: nothing
    assert out["unique_sequences_ci"] == list(count_interval([3, 1, 0, 0])[0])
    assert out["curated_unique_sequences_ci"] == list(count_interval([1, 1, 0, 0])[0])
    assert out["pii_unique_sequences_total_ci"] == list(count_interval([1, 1, 0, 0])[0])
    unknown = count_intervals(rows, {**m, "pii_unique_sequences_total": None}, users, t=1.0, min_tokens=5)
    assert unknown["pii_unique_sequences_total_ci"] is None  # no PII policy: no count, no interval
    assert count_intervals(rows.drop(columns=["user_ids"]), m, users, t=1.0, min_tokens=5) == {
        "unique_sequences_ci": None,
        "curated_unique_sequences_ci": None,
        "pii_unique_sequences_total_ci": None,
        "intervals_at_boundary": {},
    }
    # 2 of 4 users leaked 3 and 1: widened to leakers x leaks per leaker, and says so; 1 and 1: the
    # bootstrap's [0, 4] already holds 4 CP(2 of 4) x 1
    assert set(out["intervals_at_boundary"]) == {"unique_sequences_ci"}
    assert (
        out["intervals_at_boundary"]["unique_sequences_ci"]
        == "2 of 4 users: clopper-pearson leakers x leaks per leaker"
    )


def test_a_count_of_no_leaks_is_not_certain_zero_but_the_users_who_could_leak():
    """0 curated leaks over 4 users: not the bootstrap's [0, 0] but the leaks the m = 4 x CP upper(0
    of 4) = 2.41 users with the most capacity could hold: a and b hold one unique sequence each, c
    and d none, so 1 + 1 + 0.41 x 0 = 2 (curated and PII sequences are unique sequences)."""
    from scipy.stats import binomtest

    from lmleak.report.leakage import count_intervals

    rows = pd.DataFrame(
        {
            "users_in_d": [1, 1],
            "user_ids": [["a"], ["b"]],
            "perplexity_ratio": [0.2, 0.5],  # below t: nothing curated
            "pii_types": [[], []],
            "length_tokens": [9, 9],
        }
    )
    m = {"unique_sequences": 2, "curated_unique_sequences": 0, "pii_unique_sequences_total": 0}
    out = count_intervals(rows, m, ["a", "b", "c", "d"], t=1.0, min_tokens=5)
    m_users = 4 * binomtest(0, 4).proportion_ci(confidence_level=0.95, method="exact").high
    assert 2 < m_users < 3
    assert out["curated_unique_sequences_ci"] == pytest.approx([0.0, 2.0], abs=1e-12)
    assert out["pii_unique_sequences_total_ci"] == pytest.approx([0.0, 2.0], abs=1e-12)
    short = count_intervals(rows.assign(length_tokens=[9, 2]), m, ["a", "b", "c", "d"], t=1.0, min_tokens=5)
    assert short["pii_unique_sequences_total_ci"] == pytest.approx([0.0, 1.0])  # b's one is too short
    # without a per-user bound the old rule, one leak each, and with doc_tokens runs of ceil(n/2)
    nothing = rows.iloc[:0]  # no sequence at all
    none = count_intervals(nothing, {**m, "unique_sequences": 0}, ["a", "b", "c", "d"], t=1.0, min_tokens=5)
    assert none["unique_sequences_ci"] == pytest.approx([0.0, m_users])
    runs = count_intervals(
        nothing,
        {**m, "unique_sequences": 0},
        ["a", "b", "c", "d"],
        t=1.0,
        min_tokens=5,
        doc_tokens=[9, 4, 20, 1],
    )  # capacities 5, 2, 10, 1: 10 + 5 + 0.41 x 2
    assert runs["unique_sequences_ci"] == pytest.approx([0.0, 15 + (m_users - 2) * 2])
    assert out["unique_sequences_ci"][1] >= 2  # two leaks: the bootstrap's own
    assert set(out["intervals_at_boundary"]) == {
        "curated_unique_sequences_ci",
        "pii_unique_sequences_total_ci",
    }
    assert out["intervals_at_boundary"]["curated_unique_sequences_ci"].endswith("(their capacity)")
