"""Whose PII a leaked sequence holds and how many people's documents hold its text (issue 32), on
ledgers built by hand, and the identity reader against its doctest cases."""

from __future__ import annotations

import numpy as np

from lmleak.ledger.ledger import Ledger
from lmleak.models.base import TokenStats
from lmleak.report.leakage import ReportConfig
from lmleak.report.owners import (
    Identity,
    identities,
    owner_of_values,
    users_with_text,
    users_with_text_by_scan,
)
from tests.report.in_memory import report_from_ledger


class CharTokenizer:
    """One token per character, and one token (300) for the whole text ``ann@``: the same text can
    have two tokenisations."""

    vocab_size, bos_id, eos_id, pad_id = 512, 1, 2, 0
    WORD = "ann@"

    def encode(self, text):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(self.WORD if i == 300 else chr(i) for i in ids)


def _ledger(docs, leaks):
    """A ledger of ``docs`` ((user, text, token ids or None)) whose model hits exactly the given
    substrings (rank 1) and nothing else."""
    tok = CharTokenizer()
    ids, stats = [], []
    for d, (_, text, given) in enumerate(docs):
        toks = given or tok.encode(text)
        ranks = np.full(len(toks), 50, np.int32)
        for sub in leaks.get(d, []):
            # positions of the substring in the token list (char tokens, or one 4-char token)
            decoded = [tok.decode([t]) for t in toks]
            start = "".join(decoded).index(sub)
            pos, a, b = 0, None, None
            for j, piece in enumerate(decoded):
                if a is None and pos + len(piece) > start:
                    a = j
                if pos < start + len(sub):
                    b = j + 1
                pos += len(piece)
            ranks[a:b] = 1
        ids.append(toks)
        n = len(toks)
        stats.append(TokenStats(ranks, np.full(n, -1.0, np.float32), np.zeros(n, np.float32)))
    return Ledger.from_stats([f"d{i}" for i in range(len(docs))], [u for u, _, _ in docs], ids, stats)


def test_a_sequence_unique_as_token_ids_but_not_as_text_is_not_headlined():
    tok = CharTokenizer()
    text = "mail ann@example.org now"
    word_ids = tok.encode("mail ") + [300] + tok.encode("example.org now")  # "ann@" as one token
    docs = [("u1", text, word_ids), ("u2", text, None), ("u3", "nothing here at all", None)]
    ledger = _ledger(docs, {0: ["ann@example.org"]})
    seqs, _, by_k = report_from_ledger(ledger, tok, ReportConfig(k=(1,), min_tokens=2))
    row = seqs[seqs["text"] == "ann@example.org"].iloc[0]
    assert row["users_in_d"] == 1  # unique as token ids: u2's characters are other tokens
    assert row["users_with_text"] == 2 and not row["pii_headline"]
    m = by_k["1"]
    assert m["pii_unique_sequences_all_types"] == 1 and m["pii_unique_sequences_total"] == 0
    # the same text, tokenised alike in both documents, is not unique at all
    ledger = _ledger([("u1", text, word_ids), ("u2", "nothing", None)], {0: ["ann@example.org"]})
    seqs, _, by_k = report_from_ledger(ledger, tok, ReportConfig(k=(1,), min_tokens=2))
    assert seqs["pii_headline"].tolist() == [True] and by_k["1"]["pii_unique_sequences_total"] == 1


DOCS = [
    ("u1", "From: Ann Lee <ann.lee@example.org>\nhello\n> Bob Roe <bob.roe@example.net> wrote:\n> hi", None),
    (
        "u1",
        "From: Ann Lee <ann.lee@example.org>\nagain, call (201) 555-0142\n-- \nAnn Lee\n(201) 555-0142\n",
        None,
    ),
    ("u2", "From: Bob Roe <roe@example.com>\nplain text of bob", None),
    ("h1", "From: Cy Doe <cy.doe@example.com>\nheld out person", None),
    ("h2", "no header in this one, no pii either", None),
]


def test_each_leak_is_the_writers_own_or_a_third_partys_and_held_out_owners_are_the_null():
    leaks = {
        0: ["ann.lee@example.org", "bob.roe@example.net"],
        1: ["(201) 555-0142\n--"],
        3: ["cy.doe@example.com"],
    }
    seqs, _, by_k = report_from_ledger(
        _ledger(DOCS, leaks), CharTokenizer(), ReportConfig(k=(1,), min_tokens=5), held_out={"h1", "h2"}
    )
    owner = dict(zip(seqs["text"], seqs["pii_owner"], strict=True))
    assert owner["ann.lee@example.org"] == "own"  # u1's sender address
    assert owner["bob.roe@example.net"] == "third_party"  # quoted in u1's mail: Bob's, not Ann's
    assert owner["(201) 555-0142\n--"] == "own"  # the phone of Ann's own signature
    assert owner["cy.doe@example.com"] == "own"
    m = by_k["1"]
    assert m["pii_owner_counts"] == {"own": 2, "third_party": 1, "unknown": 0}  # members' leaks only
    assert m["pii_unique_sequences_members"] == 3 and m["null_pii_unique_sequences"] == 1
    assert (
        m["pii_people_members"],
        m["pii_people_members_n"],
        m["pii_people_null"],
        m["pii_people_null_n"],
    ) == (
        1,
        2,
        1,
        2,
    )
    assert m["pii_people_excess"] == 0.0 and m["null_kind"] == "held_out"


def test_users_with_text_counts_users_not_documents_by_a_scan_of_every_document():
    docs = ["a Jan 2019 b", "Jan 2019", "x", "Jan 2019 again"]
    users = ["u1", "u1", "u2", "u3"]
    got = users_with_text(["Jan 2019", "x", "nowhere"], docs, users)
    oracle = {
        n: len({u for d, u in zip(docs, users, strict=True) if n in d}) for n in ("Jan 2019", "x", "nowhere")
    }
    assert got == oracle == {"Jan 2019": 2, "x": 1, "nowhere": 0}


def test_the_automaton_counts_the_same_users_as_a_scan_per_text_on_random_mail_like_text():
    """The fast path (one Aho-Corasick pass per user) against the obvious scan: overlapping needles,
    needles that are prefixes of others, a needle spanning two documents (never counted), repeats."""
    import random

    rng = random.Random(3)
    alphabet = "ab c@.\n>"
    docs = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(40)]
    users = [f"u{rng.randint(0, 9)}" for _ in docs]
    needles = [d[i : i + rng.randint(1, 6)] for d in docs for i in (0, 5, 11) if d[i : i + 1]]
    needles += ["ab", "ab", "a", docs[0][-2:] + docs[1][:2], "never there"]
    assert users_with_text(needles, docs, users) == users_with_text_by_scan(needles, docs, users)
    assert users_with_text([], docs, users) == {} and users_with_text([""], docs, users) == {}


def test_an_identity_holds_the_senders_names_and_signature_values_only():
    ident = identities(
        {
            "u1": [
                'From: "Lee, Ann" <Ann.Lee@example.org>\nhi\n-- \nAnn Lee\n(201) 555-0142\n\n> -- \n> Bob Roe\n> (999) 555-0100\n'
            ]
        }
    )["u1"]
    assert ident.emails == {"ann.lee@example.org"} and ident.holds("PERSON", "Ann Lee")
    assert ident.holds("PHONE", "+1 201 555 0142") and not ident.holds("PHONE", "(999) 555-0100")
    assert owner_of_values([("DATE", "Jan 2019")], ident) == "unknown"
    assert owner_of_values([("PHONE", "(999) 555-0100"), ("EMAIL", "ann.lee@example.org")], ident) == "own"
    assert owner_of_values([("PERSON", "Bob Roe")], Identity()) == "unknown"


LIST_DOCS = [
    ("u1", "From: Ann Lee <ann.lee@example.org>\nTo: list@example.org\nhello", None),
    ("u2", "From: Bob Roe <roe@example.com>\nTo: list@example.org\nplain", None),
    ("h1", "From: Cy Doe <cy.doe@example.com>\nTo: list@example.org\nheld", None),
    ("h2", "no header in this one, no pii either", None),
]


def test_only_a_whole_value_no_one_else_holds_is_personal_and_it_is_counted_beside_the_limit():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from pii_value_owners import PERSONAL, kind_of  # the tool's count, by another path

    from lmleak.pii.regex import RegexDetector
    from lmleak.report.null import HEADLINE_PII_TYPES

    leaks = {
        0: ["ann.lee@example.org"],  # u1's whole address: personal
        1: ["e.com>\nTo: list@example.org\npl"],  # a tail of roe@ and the list everyone quotes
        2: ["y.doe@example.com>"],  # h1, never trained on: the tail of cy.doe@ only
    }
    seqs, _, by_k = report_from_ledger(
        _ledger(LIST_DOCS, leaks), CharTokenizer(), ReportConfig(k=(1,), min_tokens=5), held_out={"h1", "h2"}
    )
    headline = seqs[seqs["pii_headline"].astype(bool)]
    personal = dict(zip(headline["text"], headline["pii_personal"], strict=True))
    assert personal == {
        "ann.lee@example.org": True,
        "e.com>\nTo: list@example.org\npl": False,
        "y.doe@example.com>": False,
    }
    # the tool's count (the owner's values found whole in the text, holders by a scan) agrees
    whole = {u: "\n".join(t for v, t, _ in LIST_DOCS if v == u) for u, _, _ in LIST_DOCS}
    det = RegexDetector()

    def found(text):
        return [text[s.start : s.end] for s in det.detect(text) if s.entity in HEADLINE_PII_TYPES]

    def holders(value):
        return sum(value in t for t in whole.values())

    for text, owners in zip(headline["text"], headline["user_ids"], strict=True):
        assert (kind_of(text, set(found(whole[owners[0]])), holders) == PERSONAL) == personal[text]
    m = by_k["1"]
    # the limit's count: both members and one of two held-out people; whole personal values: u1 only
    assert (m["pii_people_members"], m["pii_people_null"], m["pii_people_excess"]) == (2, 1, 0.5)
    assert (m["pii_personal_people_members"], m["pii_personal_people_null"]) == (1, 0)
    assert m["pii_personal_people_excess"] == 0.5 and len(m["pii_personal_people_excess_ci"]) == 2
