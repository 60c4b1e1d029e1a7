"""The privacy unit: who owns which sequence, how a step samples users, and what privacy.json says.

Oracles: the sampler's counts against its definition (Poisson over users, at most K random sequences
of each, every row of a kept user its own); the accountant of a user-level run against Google's
dp-accounting at the *user* sampling rate; group privacy against its closed form.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from lmleak.data.corpus import Corpus, Document
from lmleak.errors import ConfigError
from lmleak.train.accounting import epsilon_dp_accounting, group_privacy
from lmleak.train.config import TrainConfig
from lmleak.train.trainer import train_model
from lmleak.train.units import Sampler, Units, resolve_privacy_unit, unit_record


def test_the_unit_is_the_user_by_default_and_sequence_when_asked():
    assert resolve_privacy_unit(None, "dp", ["a"])[0] == "user"
    assert resolve_privacy_unit(None, "sdp", ["a"])[0] == "user"
    assert resolve_privacy_unit("sequence", "dp", ["a"])[0] == "sequence"
    assert resolve_privacy_unit(None, "dp", [])[0] == "sequence"
    assert resolve_privacy_unit(None, "nodp", ["a"])[0] is None
    with pytest.raises(ConfigError, match="user ids"):
        resolve_privacy_unit("user", "dp", [])
    with pytest.raises(ConfigError, match="privacy unit"):
        TrainConfig(privacy_unit="person")


def _units(sizes):
    docs, owners = [], []
    for u, k in enumerate(sizes):
        docs += [len(owners)] * k
        owners.append(f"u{u}")
    return Units.of(torch.tensor(docs), owners)


def test_a_user_level_step_keeps_users_and_at_most_k_random_sequences_of_each():
    units = _units([50, 1, 3, 7, 2, 9])
    sampler = Sampler(len(units.owner), 3, unit="user", units=units, max_per_user=4)
    assert sampler.steps_per_epoch == 2 and sampler.sample_rate == 0.5 and sampler.expected_size == 3.0
    torch.manual_seed(0)
    kept, seen_rows = torch.zeros(6), set()
    steps = 400
    for _ in range(steps // 2):
        for b in sampler.epoch():
            owners = units.owner[b.idx]
            for g in b.groups.unique():
                rows = b.idx[b.groups == g]
                assert len(set(owners[b.groups == g].tolist())) == 1  # a group is one user's rows
                assert len(rows) == min(4, len(units.members[int(owners[b.groups == g][0])]))
                assert len(set(rows.tolist())) == len(rows)
                kept[int(owners[b.groups == g][0])] += 1
            seen_rows.update(b.idx.tolist())
    share = kept / steps
    assert torch.all((share - 0.5).abs() < 0.1)  # each user kept with probability q = 1/2
    assert set(units.members[0].tolist()) <= seen_rows  # random chunks: every sequence gets its turn


def test_a_shuffled_sampler_visits_every_unit_once_per_epoch():
    units = _units([2, 1, 3, 1, 1])
    sampler = Sampler(8, 2, unit="user", kind="shuffle", units=units, max_per_user=None)
    torch.manual_seed(0)
    batches = list(sampler.epoch())
    users = [int(units.owner[b.idx[b.groups == g][0]]) for b in batches for g in b.groups.unique()]
    assert sorted(users) == [0, 1, 2, 3, 4] and sampler.expected_size == 2.0
    seq = Sampler(7, 3, kind="shuffle")
    rows = torch.cat([b.idx for b in seq.epoch()]).tolist()
    assert sorted(rows) == list(range(7)) and seq.steps_per_epoch == 3


def test_group_privacy_for_the_largest_user_of_a_sequence_level_run():
    units = _units([5, 1, 2])
    rec = unit_record(
        unit="sequence",
        reason="asked for",
        units=units,
        sampler=Sampler(8, 4),
        config=TrainConfig(max_sequences_per_user=4, target_delta=1e-5, accountant="rdp"),
        noise_multiplier=1.0,
        steps=4,
        poisson_epsilon=1.5,
    )
    assert rec["privacy_unit"] == "sequence" and rec["largest_user_sequences"] == 5
    assert rec["max_sequences_per_user"] is None and rec["sampler"] == "poisson"
    assert rec["group_privacy_epsilon_largest_user"] == pytest.approx(5 * 1.5)
    assert rec["group_privacy_delta_largest_user"] == pytest.approx(5 * math.exp(4 * 1.5) * 1e-5)
    assert group_privacy(1.5, 1e-5, 5) == (
        rec["group_privacy_epsilon_largest_user"],
        rec["group_privacy_delta_largest_user"],
    )
    # the δ of the induction, δ Σ_{j<k} e^{jε}, is below the stated bound
    assert 1e-5 * sum(math.exp(j * 1.5) for j in range(5)) <= rec["group_privacy_delta_largest_user"]


def _skewed_corpus() -> Corpus:
    """One prolific author (12 documents) and eight who wrote one each."""
    words = "the order arrived late please refund my card number is".split()
    docs = [Document("big", f"b{i}", " ".join(words[(i + j) % 10] for j in range(12))) for i in range(12)]
    docs += [
        Document(f"u{u}", f"d{u}", " ".join(words[(u * 3 + j) % 10] for j in range(12))) for u in range(8)
    ]
    return Corpus(docs)


TINY = dict(
    epochs=2, batch_size=3, seq_len=16, vocab_size=60, n_embd=16, n_head=2, n_layer=1, holdout_users=0.0
)


def test_user_level_accounting_equals_dp_accounting_at_the_user_sampling_rate(tmp_path):
    cfg = TrainConfig(mode="dp", noise_multiplier=1.2, tokenizer_from_private=True, **TINY)  # PRV accountant
    res = train_model(_skewed_corpus(), tmp_path / "m", cfg, progress=False)
    priv = json.loads((tmp_path / "m" / "privacy.json").read_text())
    assert priv["epsilon"] == res.privacy["epsilon"]
    assert priv["privacy_unit"] == "user" and priv["sampled"] == "users" and priv["users"] == 9
    q = 1 / math.ceil(9 / 3)  # users, not the 20 sequences
    assert priv["sample_rate"] == pytest.approx(q) and priv["steps"] == 2 * 3
    # Opacus' PRV against dp-accounting's PLD (independent implementations; both tight to ~0.5 %)
    want = epsilon_dp_accounting(1.2, q, priv["steps"], 1e-5, "pld")
    assert priv["epsilon"] == pytest.approx(want, rel=0.01)
    info = json.loads((tmp_path / "m" / "train.json").read_text())
    assert info["privacy_unit"] == "user" and info["config"]["privacy_unit"] is None  # resolved default
    n_seq = info["num_train_sequences"]
    big = priv["largest_user_sequences"]
    assert big > n_seq / 2  # the prolific author holds most sequences
    seq = TrainConfig(
        mode="dp",
        noise_multiplier=1.2,
        tokenizer_from_private=True,
        privacy_unit="sequence",
        **{**TINY, "epochs": 1, "batch_size": 12},
    )
    sp = train_model(_skewed_corpus(), tmp_path / "s", seq, progress=False).privacy
    assert sp["privacy_unit"] == "sequence" and sp["sample_rate"] == pytest.approx(1 / math.ceil(n_seq / 12))
    assert sp["largest_user_sequences"] == big
    assert sp["group_privacy_epsilon_largest_user"] == pytest.approx(big * sp["epsilon"])
