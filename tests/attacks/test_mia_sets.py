"""Clean membership sets and text clusters against brute force: every pair's Jaccard, a graph search,
and the counts written out by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmleak.attacks.mia_sets import (
    clean_sets,
    components,
    near_duplicate_pairs,
    near_duplicates,
    normalise,
    pii_keys,
    shingle_codes,
    text_clusters,
)
from tests.attacks.demo_sets import demo_sets, line_owners


def _brute_pairs(texts, t):
    """Every pair's Jaccard, computed directly from the 5-gram sets written out here."""

    def grams(x):
        x = " ".join(x.lower().split()).encode("utf-8")
        return {x} if len(x) <= 5 else {x[i : i + 5] for i in range(len(x) - 4)}

    out = []
    for i, j in itertools.combinations(range(len(texts)), 2):
        a, b = grams(texts[i]), grams(texts[j])
        if len(a & b) / len(a | b) >= t - 1e-12:
            out.append((i, j))
    return out


def _edited(rng, base, edits):
    words = base.split()
    for _ in range(edits):
        k = int(rng.integers(len(words)))
        words[k] = rng.choice(["parcel", "late", "Ada", "555", "x", "refund", words[k]])
    return " ".join(words)


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.9, 1.0])
def test_near_duplicate_pairs_are_exactly_the_pairs_a_brute_force_jaccard_finds(threshold):
    rng = np.random.default_rng(int(threshold * 10))
    bases = [
        "my parcel came late again and nobody called me back about it",
        "please send the confirmation to ada@example.org before friday",
        "the refund for order 4412 has not arrived yet",
        "ok",
        "thanks",
        "Grüße aus Köln, die Lieferung kam spät",
    ]
    texts = [_edited(rng, bases[int(rng.integers(len(bases)))], int(rng.integers(0, 4))) for _ in range(120)]
    assert near_duplicate_pairs(texts, threshold=threshold) == _brute_pairs(texts, threshold)


@given(
    st.lists(st.text(alphabet="ab c", min_size=0, max_size=14), max_size=25), st.sampled_from([0.3, 0.6, 0.8])
)
@settings(max_examples=150, deadline=None)
def test_near_duplicate_pairs_equal_brute_force_on_arbitrary_short_strings(texts, threshold):
    assert near_duplicate_pairs(texts, threshold=threshold) == _brute_pairs(texts, threshold)


def _dfs_components(n, pairs):
    adj = {i: set() for i in range(n)}
    for a, b in pairs:
        adj[a].add(b)
        adj[b].add(a)
    label = [-1] * n
    for s in range(n):
        if label[s] >= 0:
            continue
        stack, seen = [s], {s}
        while stack:
            x = stack.pop()
            stack.extend(adj[x] - seen)
            seen |= adj[x]
        for x in seen:
            label[x] = min(seen)
    return label


@given(
    st.integers(1, 30).flatmap(
        lambda n: st.tuples(
            st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40)
        )
    )
)
@settings(max_examples=150, deadline=None)
def test_components_equal_a_graph_search(case):
    n, pairs = case
    assert components(n, pairs).tolist() == _dfs_components(n, pairs)


def shingles(text):
    """The slow obvious oracle of shingle_codes: the set of 5-byte windows of the UTF-8 of
    normalise(text); a shorter text is its one shingle."""
    b = normalise(text).encode("utf-8")
    return frozenset([b]) if len(b) <= 5 else frozenset(b[i : i + 5] for i in range(len(b) - 4))


def jaccard(a, b):
    """``|a ∩ b| / |a ∪ b|`` (1.0 for two empty sets)."""
    union = len(a | b)
    return 1.0 if union == 0 else len(a & b) / union


def test_shingles_and_jaccard_by_hand():
    assert shingles("Hello  World") == shingles("hello world")
    assert jaccard(shingles("abcdef"), shingles("abcdeg")) == 1 / 3  # {abcde, bcdef} vs {abcde, bcdeg}
    # the packed codes are the shingles, one to one (a short text's code cannot equal a 5-gram's)
    for t in ["abcdef", "ok", "", "Grüße aus Köln", "x" * 9]:
        assert len(shingle_codes(t)) == len(shingles(t))
    for t in ["abcdef", "Grüße aus Köln", "x" * 9]:
        assert shingle_codes(t).tolist() == sorted(int.from_bytes(g, "little") for g in shingles(t))
    assert not set(shingle_codes("abcde").tolist()) & set(shingle_codes("abcd").tolist())


def test_pii_keys_link_a_persons_texts_and_not_a_bare_local_number():
    a = pii_keys("Hello, Megan Chang here. My email is megan.chang6@example.com, phone (595) 555-0197.")
    b = pii_keys("It should be (595) 555-0197, and the email is megan.chang6@example.com.")
    assert {"EMAIL:megan.chang6@example.com", "PHONE:5955550197"} <= a & b
    assert pii_keys("call 555-0197 after six") == set()  # 100 synthetic numbers share 555-01xx


def test_text_clusters_join_shared_pii_transitively_and_ignore_values_on_both_sides():
    texts = [
        "write to ada@example.org please",  # 0
        "ada@example.org, or call (201) 555-0142",  # 1: links 0 and 2
        "my number is (201) 555-0142",  # 2
        "support is help@example.org",  # 3: a member
        "ask help@example.org for a refund",  # 4: a non-member — the value links nothing
        "nothing personal in here",  # 5
    ]
    c = text_clusters(texts, labels=[1, 1, 1, 1, 0, 0])
    assert c.ids.tolist() == [0, 0, 0, 3, 4, 5]
    assert (c.num_clusters, c.largest, c.linked_by_pii, c.ignored_values) == (4, 3, 3, 1)
    assert text_clusters(texts).ids.tolist() == [0, 0, 0, 3, 3, 5]  # without labels it links


def test_clean_sets_counts_every_text_and_leaves_no_repeat_or_overlap():
    members = [
        "the parcel came late again today",  # kept
        "the parcel came late again today",  # exact repeat
        "The parcel  came late again today!",  # near-duplicate of the first
        "a text on both sides of the split",  # overlap (exact)
        "my refund for order 4412 has not arrived yet so please check",  # overlap (near-duplicate)
        "a member text of its own",  # kept
    ]
    non_members = [
        "a text on both sides of the split",
        "my refund for order 4412 has not arrived yet, so please check",
        "a non-member text",
        "a non-member text",
    ]
    c = clean_sets(members, non_members, users=(list("aabcde"), list("wxyz")))
    assert c.members == ["the parcel came late again today", "a member text of its own"]
    assert (
        c.member_users == ["a", "e"]
        and c.non_members == ["a non-member text"]
        and c.non_member_users == ["y"]
    )
    m, n = c.counts["members"].to_dict(), c.counts["non_members"].to_dict()
    assert (m["rows"], m["distinct"], m["near_duplicates"], m["removed_overlap"], m["kept"]) == (
        6,
        5,
        1,
        2,
        2,
    )
    assert (n["rows"], n["distinct"], n["near_duplicates"], n["removed_overlap"], n["kept"]) == (
        4,
        3,
        0,
        2,
        1,
    )
    kept = [*c.members, *c.non_members]
    assert _brute_pairs(kept, c.threshold) == []


def test_the_quick_demos_sets_are_counted_as_the_issue_found_them(tmp_path):
    """The demo's e-mail lines (the issue found 69 member rows, 53 distinct, and 56 non-member rows,
    42 distinct, on the English-only demo): rows and distinct texts counted as a set would count them."""
    mem, non = demo_sets(tmp_path)
    c = clean_sets(mem, non)
    assert (c.counts["members"].rows, c.counts["members"].distinct) == (len(mem), len(set(mem)))
    assert (c.counts["non_members"].rows, c.counts["non_members"].distinct) == (len(non), len(set(non)))
    assert len(set(mem)) < len(mem) and len(set(non)) < len(non)  # the demo repeats lines: dedup matters
    # each clusters into its people (some write under two or three addresses): one cluster per person
    texts = [*c.members, *c.non_members]
    cl = text_clusters(texts, labels=[1] * len(c.members) + [0] * len(c.non_members))
    owners = line_owners(tmp_path)
    people = set().union(*(owners[t] for t in texts))
    assert cl.num_clusters == len(people) and cl.ignored_values == 0
    assert all(
        len(set().union(*(owners[t] for t, k in zip(texts, cl.ids, strict=True) if k == c))) == 1
        for c in set(cl.ids)
    )


def test_texts_of_one_template_with_different_secrets_are_not_duplicates():
    """Paper 002 A.4's sets: members and non-members of one format that differ only in the secret.
    Their letters are near-identical (Jaccard above 0.8), their secrets are not: all are kept."""
    template = "Dear customer, your one-time PIN for the account ending in 0042 is {pin}; never share it."
    members = [template.format(pin=f"{1000 + 37 * i}") for i in range(10)]
    non = [template.format(pin=f"{6000 + 41 * i}") for i in range(10)]
    assert len(near_duplicate_pairs([*members, *non])) == 190  # every pair, by their letters
    assert near_duplicates([*members, *non]) == []
    # exact repeats still go, and a member's copy (case changed) among the non-members takes both out
    c = clean_sets(members + members[:2], non + [members[0].replace("Dear", "dear")])
    assert c.members == members[1:] and c.non_members == non
    m, n = c.counts["members"], c.counts["non_members"]
    assert (m.rows, m.distinct, m.near_duplicates, m.removed_overlap, m.kept) == (12, 10, 0, 1, 9)
    assert (n.rows, n.distinct, n.near_duplicates, n.removed_overlap, n.kept) == (11, 11, 0, 1, 10)


def test_blocks_and_chunks_change_nothing(monkeypatch):
    import lmleak.attacks.mia_sets as ms

    rng = np.random.default_rng(9)
    base = "my parcel came late again and nobody called me back about it at all"
    texts = [_edited(rng, base, int(rng.integers(0, 3))) for _ in range(40)]
    want = _brute_pairs(texts, 0.8)
    assert len(want) > 50
    monkeypatch.setattr(ms, "_BLOCK", 3)  # the candidate search in blocks of 3 rows
    assert ms.near_duplicate_pairs(texts, threshold=0.8) == want
    i, j = np.array([0, 0, 1, 2, 2]), np.array([1, 2, 2, 3, 4])
    pieces = ms._chunks(i, j, np.array([5, 5, 5, 5, 5]), limit=7)  # about 7 shingles a piece
    assert len(pieces) == 4 and np.concatenate([p[1] for p in pieces]).tolist() == j.tolist()
    assert np.concatenate([p[0] for p in pieces]).tolist() == i.tolist()
    assert all(5 * len(p[1]) < 7 + 5 for p in pieces)  # each under the limit plus one text
