"""Leaked PII in the headline (issue 14): user-unique sequences that hold PII, by type, not fragments."""

from __future__ import annotations

import json

import numpy as np

from lmleak.data.loaders import load_corpus
from lmleak.data.synth.mail import synthesize
from lmleak.ledger.ledger import Ledger
from lmleak.models.base import TokenStats
from lmleak.models.fake import FakeLM
from lmleak.report.leakage import ReportConfig, run_report
from tests.report.in_memory import report_from_ledger


class CharTokenizer:
    vocab_size, bos_id, eos_id, pad_id = 256, 1, 2, 0

    def encode(self, text):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(chr(i) for i in ids)


DOCS = [
    ("u1", "From: Ann Lee <ann.lee@example.org>\nhello there"),
    ("u2", "Call Bob at (201) 555-0142 today"),
    ("u3", "nothing personal in this one at all"),
]


def _ledger(leaks: dict[int, list[tuple[str, str]]]) -> Ledger:
    """Hits exactly on the given substrings of each document (char tokens)."""
    tok = CharTokenizer()
    ids, stats = [], []
    for d, (_, text) in enumerate(DOCS):
        ranks = np.full(len(text), 50, np.int32)
        for sub, _ in leaks.get(d, []):
            a = text.index(sub)
            ranks[a : a + len(sub)] = 1
        ids.append(tok.encode(text))
        stats.append(TokenStats(ranks, np.full(len(text), -1.0, np.float32), np.zeros(len(text), np.float32)))
    return Ledger.from_stats([f"d{i}" for i in range(3)], [u for u, _ in DOCS], ids, stats)


def test_a_sequence_holding_part_of_an_email_counts_as_leaked_email_and_short_fragments_apart():
    ledger = _ledger(
        {0: [("ann.lee@exa", "EMAIL")], 1: [("555-0142", "PHONE"), ("201", "PHONE")], 2: [("personal", "")]}
    )
    seqs, _, by_k = report_from_ledger(ledger, CharTokenizer(), ReportConfig(k=(1,), min_tokens=5))
    types = dict(zip(seqs["text"], seqs["pii_types"], strict=True))
    assert list(types["ann.lee@exa"]) == ["EMAIL"]  # the rest of the address follows the sequence
    assert list(types["555-0142"]) == ["PHONE"]
    assert list(types["201"]) == ["PHONE"]
    assert list(types["personal"]) == []
    m = by_k["1"]
    assert m["pii_unique_sequences"] == {"EMAIL": 1, "PHONE": 1}  # "201" is 3 tokens: counted apart
    assert m["pii_unique_short_sequences"] == {"PHONE": 1}
    assert m["pii_unique_sequences_total"] == 2


def test_leaked_signatures_of_a_memorising_model_lead_the_report_on_synth_mail(tmp_path):
    paths = synthesize(tmp_path / "mail", scale=0.05, seed=2)
    corpus = load_corpus(paths["corpus"])
    model = FakeLM.from_texts([d.text for d in corpus], order=4)  # memorises every message
    s = run_report(model, corpus, tmp_path / "run", ReportConfig(k=(1,)))
    assert s["pii_unique_sequences"].get("EMAIL", 0) > 0
    assert s["pii_unique_sequences_total"] <= s["unique_sequences"]
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["pii_unique_sequences"] == s["pii_unique_sequences"] and saved["min_tokens"] == 5


def test_without_a_pii_policy_leaked_pii_is_unknown_not_zero():
    import pandas as pd

    from lmleak.report.metrics import metrics_for_k

    seqs = pd.DataFrame(
        {
            "users_in_d": [1, 1, 2],
            "users_in_s": [1, 1, 2],
            "count_in_s": [1, 1, 2],
            "length_tokens": [9, 6, 4],
            "pii_types": [None, None, None],
            "user_ids": [["u1"], ["u2"], ["u1", "u2"]],
            "perplexity_ratio": [float("nan")] * 3,
        }
    )
    m = metrics_for_k(seqs, t=1.0, p=None, min_tokens=5)
    # a gate reads None as "not measured" and fails; 0 would have passed a --max-pii-unique 0 gate
    assert m["pii_unique_sequences"] is None and m["pii_unique_sequences_total"] is None
    seqs["pii_types"] = [["EMAIL"], [], None]
    m = metrics_for_k(seqs, t=1.0, p=None, min_tokens=5)
    assert m["pii_unique_sequences"] == {"EMAIL": 1} and m["pii_unique_sequences_total"] == 1


def test_a_message_id_is_not_an_email_address_but_a_from_address_on_the_next_line_is():
    docs = [
        ("u1", "Message-ID: <7abf30b051ae@lists.example.org>\nFrom: ann@example.org"),
        ("u2", "nothing here"),
    ]
    tok = CharTokenizer()
    ids, stats = [], []
    for _, text in docs:
        ranks = np.full(len(text), 50, np.int32)
        for sub in ("7abf30b051ae@lists", "ann@example.org"):
            if sub in text:
                a = text.index(sub)
                ranks[a : a + len(sub)] = 1
        ids.append(tok.encode(text))
        stats.append(TokenStats(ranks, np.full(len(text), -1.0, np.float32), np.zeros(len(text), np.float32)))
    ledger = Ledger.from_stats(["d0", "d1"], [u for u, _ in docs], ids, stats)
    seqs, _, by_k = report_from_ledger(ledger, tok, ReportConfig(k=(1,), min_tokens=5))
    types = dict(zip(seqs["text"], seqs["pii_types"], strict=True))
    assert list(types["7abf30b051ae@lists"]) == [] and list(types["ann@example.org"]) == ["EMAIL"]
    assert by_k["1"]["pii_unique_sequences_total"] == 1
