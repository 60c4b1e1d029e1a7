"""Corpus statistics (lmleak.data.stats); `lmleak corpus check` is tested in cli/test_data.py."""

from __future__ import annotations

from lmleak.data.corpus import Document
from lmleak.data.stats import corpus_stats
from lmleak.pii.regex import RegexDetector


def test_statistics_of_a_hand_computed_corpus():
    docs = [Document(f"u{i}", f"d{i}", f"hello {i}\nfooter line") for i in range(99)]
    docs.append(Document("heavy", "h", " ".join(["word"] * 800) + "\nfooter line\nmail jo@example.org now"))
    s = corpus_stats(docs, detector=RegexDetector())
    # lines: 99 x ("hello i", "footer line") + ("word...", "footer line", "mail ...") = 201;
    # "footer line" occurs 100 times, nothing else repeats
    assert s.lines == 201 and s.duplicate_line_share == round(100 / 201, 6)
    # words: 99 x 4 + 800 + 2 + 3 = 1201; top 1 % of 100 users is one user, "heavy", with 805
    assert s.words == 1201 and s.top1pct_users == 1 and s.top1pct_user_share == round(805 / 1201, 6)
    assert s.top1pct_document_share == 0.01
    assert s.pii_per_entity == {"EMAIL": 1} and s.pii_per_1k_words == round(1000 / 1201, 3)
    assert len(s.warnings) == 2  # repeated lines and one heavy user


def test_a_clean_corpus_gets_no_warnings():
    docs = [Document(f"u{i}", f"d{i}", f"a distinct line {i}") for i in range(200)]
    s = corpus_stats(docs)
    assert s.duplicate_line_share == 0 and s.warnings == () and s.pii_per_1k_words is None


def test_check_corpus_counts_users_and_skipped_rows_of_a_file(tmp_path):
    import json

    from lmleak.data.loaders import load_corpus
    from lmleak.data.stats import check_corpus

    rows = [{"user_id": "a", "text": "call 555-123-4567"}, {"user_id": "a", "text": "x y"}, {"user_id": "b"},
            {"user_id": "c", "text": "hello there\nhello there"}]  # fmt: skip
    p = tmp_path / "c.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = check_corpus(p, detector=RegexDetector(), skip_bad_rows=True)
    # the oracle: the three valid rows by hand, and the stats of the same documents
    assert (r.documents, r.users, r.docs_per_user_min, r.docs_per_user_max) == (3, 2, 1, 2)
    assert r.stats == corpus_stats(load_corpus(p, skip_bad_rows=True), detector=RegexDetector())
    assert [line for line, _ in r.skipped] == [3] and "text" in r.skipped[0][1]
    d = r.to_dict()
    assert d["path"] == str(p) and d["words"] == r.stats.words == 2 + 2 + 4
    assert d["skipped_rows"] == [{"line": 3, "reason": r.skipped[0][1]}]
    assert d["warnings"] == list(r.stats.warnings) and d["pii_per_entity"] == r.stats.pii_per_entity
